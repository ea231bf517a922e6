"""Code written for mem0 1.x, as most published examples are: ids as keyword arguments, `limit`,
`AsyncMemory`, and metadata filters with operators. Changed only in the import.

    python examples/mem0_v1_style.py
"""

import asyncio

from mnemon import AsyncMemory, Memory  # was: from mem0 import AsyncMemory, Memory

m = Memory()
for title, year, genre in [("Kind of Blue", 1959, "jazz"), ("Blue Train", 1958, "jazz"), ("Abbey Road", 1969, "rock")]:
    m.add(f"The user owns the album {title}.", user_id="bob", metadata={"year": year, "genre": genre}, infer=False)

print("jazz:", [r["memory"] for r in m.search("which albums?", user_id="bob", limit=5, filters={"genre": "jazz"})["results"]])
print(
    "before 1960 or rock:",
    sorted(
        r["memory"]
        for r in m.get_all(user_id="bob", filters={"OR": [{"year": {"lt": 1959}}, {"genre": {"eq": "rock"}}]})["results"]
    ),
)


async def main():
    async_memory = AsyncMemory()
    await async_memory.add("The user is learning the saxophone.", user_id="bob", infer=False)
    found = await async_memory.search("what instrument?", user_id="bob", limit=1)
    print("instrument:", found["results"][0]["memory"])


asyncio.run(main())
