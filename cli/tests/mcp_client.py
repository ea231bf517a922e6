"""Drives a running mnemon MCP server with the official MCP Python SDK and checks every answer.

    python mcp_client.py stdio MNEMON_BINARY DATA_DIR
    python mcp_client.py http URL [TOKEN]

Over stdio the server is started bound to one user (`--user stdio-user`) with the destructive
tools enabled; over HTTP it acts for the whole server, without them.

Exits non-zero with the failed check on stderr; prints one line per passed step.
"""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

EXPECTED_TOOLS = {
    "save_memories", "recall_memories", "add_messages", "search_memories", "list_memories",
    "get_memory", "update_memory", "delete_memory", "count_memories", "copy_memories",
    "export_memories", "get_profile",
}
GATED_TOOLS = {"move_memories", "forget_user"}


def check(condition, what):
    if not condition:
        raise AssertionError(what)
    print("ok:", what.split(":")[0])


def text_of(result):
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def structured(result):
    # The text content mirrors the structured result, for clients that read only text.
    mirrored = json.loads(text_of(result))
    if result.structured_content is not None:
        check(mirrored == result.structured_content, "the text content mirrors the structured result")
        return result.structured_content
    return mirrored


async def exercise(session, user, bound):
    init = await session.initialize()
    check(init.server_info.name == "mnemon", f"server name: {init.server_info}")
    check(bool(init.instructions) and "recall_memories" in init.instructions, "instructions name recall_memories")

    tools = await session.list_tools()
    names = {t.name for t in tools.tools}
    expected = EXPECTED_TOOLS | GATED_TOOLS if bound else EXPECTED_TOOLS
    check(names == expected, f"tool list (destructive tools only when enabled): {sorted(names ^ expected)}")
    by_name = {t.name: t for t in tools.tools}
    has_user = ["user_id" in t.input_schema.get("properties", {}) for t in tools.tools]
    check(not any(has_user) if bound else all(has_user), f"user_id in the schemas only when unbound: {has_user}")
    check("before answering" in by_name["recall_memories"].description, "recall says when to call it")
    check(by_name["save_memories"].input_schema.get("type") == "object", "save has an object schema")
    check(by_name["delete_memory"].annotations.destructive_hint is True, "delete is marked destructive")

    saved = await session.call_tool("save_memories", {
        "user_id": user,
        "memories": [
            "The user is vegetarian and allergic to peanuts.",
            {"content": "Deploys go through the staging cluster first.", "tags": ["ops"],
             "kind": "procedural", "importance": 0.9, "ts": "2026-03-01T10:00:00"},
        ],
    })
    check(not saved.is_error, f"save succeeded: {text_of(saved)}")
    keys = [m["key"] for m in structured(saved)["memories"]]
    check(len(keys) == 2 and all(k.startswith("n-") for k in keys), f"two keys: {keys}")

    again = await session.call_tool("save_memories", {"user_id": user, "memories": [
        {"content": "Deploys go through the staging cluster first.", "tags": ["ops"], "kind": "procedural",
         "importance": 0.9, "ts": "2026-03-01T10:00:00"}]})
    check(structured(again)["memories"] == [{"key": keys[1], "stored": False}], "an exact repeat is not stored twice")

    recalled = await session.call_tool("recall_memories", {"user_id": user, "query": "what can the user eat?"})
    block = structured(recalled)["context"]
    check(not recalled.is_error and "vegetarian" in block, f"recall finds the diet: {block}")
    check(block.startswith("<memory") and "relevance: " in block, "recall is the framed block with labels")
    check(structured(recalled)["memories"][0] == keys[0], "the diet memory ranks first")

    found = await session.call_tool("search_memories", {
        "user_id": user, "query": "how do we deploy?", "filter": {"tags_any": ["OPS"]}})
    hits = structured(found)["hits"]
    check(len(hits) == 1 and hits[0]["note"]["key"] == keys[1], f"search with a tag filter: {hits}")
    check(0.0 <= hits[0]["score"] <= 1.0 and hits[0]["relevance"] in ("high", "medium", "low", "none"), "scores in 0..1")
    unrelated = await session.call_tool("search_memories", {"user_id": user, "query": "xyzzy plugh", "min_score": 0.5})
    check(structured(unrelated)["hits"] == [], "an unrelated query scores below the `low` floor")

    other = await session.call_tool("search_memories", {"user_id": user + "-other", "query": "vegetarian"})
    if bound:
        check(other.is_error and structured(other)["error"]["code"] == "forbidden", "another user is refused")
    else:
        check(structured(other)["hits"] == [], "another user sees nothing")

    deleted = await session.call_tool("delete_memory", {"user_id": user, "key": keys[0]})
    check(structured(deleted)["key"] == keys[0], "delete returns the key")
    gone = await session.call_tool("get_memory", {"user_id": user, "key": keys[0]})
    check(gone.is_error and structured(gone)["error"]["code"] == "not_found", f"deleted is gone: {text_of(gone)}")
    count = await session.call_tool("count_memories", {"user_id": user})
    check(structured(count)["notes"] == 1, f"one memory left: {text_of(count)}")
    profile = await session.call_tool("get_profile", {"user_id": user})
    check(not profile.is_error and structured(profile)["relations"] == [],
          f"a profile without facts is empty: {text_of(profile)}")

    empty = await session.call_tool("save_memories", {"user_id": user, "memories": ["   "]})
    err = structured(empty)["error"]
    check(empty.is_error and err["code"] == "empty_memory" and err["field"] == "memories[0].content",
          f"empty memory is refused with its field: {err}")
    wrong = await session.call_tool("search_memories", {"user_id": user, "query": "x", "limit": "ten"})
    err = structured(wrong)["error"]
    check(wrong.is_error and err["code"] == "invalid_input" and err["field"] == "limit", f"wrong type: {err}")
    outside = await session.call_tool("count_memories", {"user_id": user, "store": "/etc/passwd.db"})
    check(outside.is_error and structured(outside)["error"]["code"] == "forbidden", "a store outside the roots")
    try:
        unknown = await session.call_tool("no_such_tool", {})
        check(unknown.is_error, "an unknown tool is an error")
    except Exception as e:  # the SDK raises a protocol error
        check("unknown tool" in str(e) or "no_such_tool" in str(e), f"an unknown tool is an error: {e}")
    count = await session.call_tool("count_memories", {"user_id": user})
    check(structured(count)["notes"] == 1, "failed calls changed nothing")
    if bound:
        other = await session.call_tool("count_memories", {"user_id": user + "-other"})
        err = structured(other)["error"]
        check(other.is_error and err["code"] == "forbidden" and err["field"] == "user_id",
              f"a bound server refuses another user: {err}")
        forgot = await session.call_tool("forget_user", {})
        check(not forgot.is_error, f"the bound user may be forgotten: {text_of(forgot)}")
        count = await session.call_tool("count_memories", {})
        check(structured(count)["notes"] == 0, "forgotten")
    else:
        gated = await session.call_tool("forget_user", {"user_id": user})
        check(gated.is_error and structured(gated)["error"]["code"] == "forbidden", "forget_user is off")


async def main():
    mode = sys.argv[1]
    if mode == "stdio":
        params = StdioServerParameters(
            command=sys.argv[2],
            args=["mcp", "--embedder", "hashing", "--data", sys.argv[3], "--user", "stdio-user",
                  "--allow-destructive-tools"])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await exercise(session, "stdio-user", bound=True)
    else:
        headers = {"Authorization": f"Bearer {sys.argv[3]}"} if len(sys.argv) > 3 else None
        async with create_mcp_http_client(headers=headers) as http:
            async with streamable_http_client(sys.argv[2], http_client=http) as streams:
                read, write = streams[0], streams[1]
                async with ClientSession(read, write) as session:
                    await exercise(session, "http-user", bound=False)
    print("all checks passed")


if __name__ == "__main__":
    asyncio.run(main())
