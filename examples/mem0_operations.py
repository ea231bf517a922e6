"""mem0's open-source quickstart operations (mem0ai 2.2.1: add, search, get_all, get, update,
history, delete, delete_all, with 2.x `filters`), changed only in the import.

    python examples/mem0_operations.py
"""

from mnemon import Memory  # was: from mem0 import Memory

m = Memory()

# Store memories directly (no inference), with metadata.
m.add("I'm a vegetarian and allergic to nuts.", user_id="alice", metadata={"category": "food"}, infer=False)
m.add("I play tennis every Sunday morning.", user_id="alice", metadata={"category": "sports"}, infer=False)
m.add("My favourite city is Lisbon.", user_id="alice", metadata={"category": "travel"}, infer=False)

# A conversation: kept as it was said, searchable at once.
messages = [
    {"role": "user", "content": "I'm planning to watch a movie tonight. Any recommendations?"},
    {"role": "assistant", "content": "How about thriller movies? They can be quite engaging."},
    {"role": "user", "content": "I'm not a big fan of thriller movies but I love sci-fi movies."},
    {"role": "assistant", "content": "Got it! I'll avoid thriller recommendations and suggest sci-fi movies in the future."},
]
result = m.add(messages, user_id="alice", metadata={"category": "movies"})

related = m.search(query="What should I cook for dinner?", filters={"user_id": "alice"}, top_k=2)
print("dinner:", [r["memory"] for r in related["results"]])

movies = m.search(query="What kind of movies does alice like?", filters={"user_id": "alice"}, top_k=1)
print("movies:", [r["memory"] for r in movies["results"]])

sports = m.get_all(filters={"user_id": "alice", "category": "sports"})
print("sports:", [r["memory"] for r in sports["results"]])
print("movies, by metadata:", len(m.get_all(filters={"user_id": "alice", "category": "movies"})["results"]), "memories")

memory_id = sports["results"][0]["id"]
m.update(memory_id=memory_id, text="I play tennis every Saturday morning.")
print("updated:", m.get(memory_id)["memory"])
print("history:", [h["event"] for h in m.history(memory_id=memory_id)])

m.delete(memory_id=memory_id)
print("after delete:", len(m.get_all(filters={"user_id": "alice"})["results"]), "memories")

m.delete_all(user_id="alice")
print("after delete_all:", m.get_all(filters={"user_id": "alice"})["results"])
