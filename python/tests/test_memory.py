"""`mnemon.Memory` and `mnemon.AsyncMemory`: mem0's API (2.2.1 and the 1.x call forms) and
mnemon's own calls, as installed. Most tests run the hashing embedder (no model) on purpose: they
check shapes and rules, not meaning; the examples run MiniLM."""

import asyncio
import json
import threading

import pytest

import mnemon

T = "2024-01-10T10:00:00"


def open_memory(tmp_path, name="m.db", **kw):
    return mnemon.Memory.open(tmp_path / name, embedder="hashing", **kw)


# A scripted extractor (an explicit test double: facts given, then verified and settled by the
# engine as a model's are): a move that supersedes the old home.
SCRIPT = {
    "I live in Porto, near the river.": [
        {"content": "The user lives in Porto.", "raw": "user: I live in Porto", "when": None,
         "subject": "user", "predicate": "lives in", "object": "Porto", "salience": 1.0}
    ],
    "Big news: I moved to Lisbon last week!": [
        {"content": "The user moved to Lisbon.", "raw": "user: I moved to Lisbon last week", "when": None,
         "subject": "user", "predicate": "moved to", "object": "Lisbon", "salience": 1.0}
    ],
}


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(SCRIPT))
    return path


def test_add_without_inference_stores_each_message_as_a_memory_with_metadata(tmp_path):
    m = open_memory(tmp_path)
    out = m.add(
        [{"role": "system", "content": "be brief"}, {"role": "user", "content": "I prefer window seats.", "name": "ana"}],
        user_id="ana",
        metadata={"category": "travel", "user_id": "mallory"},
        infer=False,
    )
    [item] = out["results"]
    assert (item["event"], item["memory"], item["record"]) == ("ADD", "I prefer window seats.", "note")
    got = m.get(item["id"])
    assert set(got) >= {"id", "memory", "hash", "metadata", "score", "created_at", "updated_at", "user_id"}
    assert got["metadata"] == {"category": "travel"}, "identity keys never come from metadata"
    assert (got["user_id"], got["role"], got["actor_id"], got["score"]) == ("ana", "user", "ana", None)
    import hashlib

    assert got["hash"] == hashlib.md5("I prefer window seats.".encode()).hexdigest()
    # A string is one user message; a repeat is not stored twice.
    assert m.add("I prefer window seats.", user_id="ana", metadata={"category": "travel"}, infer=False)["results"][0][
        "event"
    ] == "NONE"


def test_add_with_inference_stores_rounds_and_the_facts_the_extractor_finds(tmp_path, script):
    m = open_memory(tmp_path, extractor=script)
    first = m.add(
        [{"role": "user", "content": "I live in Porto, near the river."}, {"role": "assistant", "content": "Porto is lovely."}],
        user_id="maya",
        timestamp=T,
    )["results"]
    assert [(r["record"], r["event"]) for r in first] == [("round", "ADD"), ("fact", "ADD")]
    assert first[1]["memory"] == "The user lives in Porto."
    moved = m.add(
        "Big news: I moved to Lisbon last week!", user_id="maya", timestamp="2024-06-02T09:00:00", metadata={"via": "call"}
    )["results"]
    fact = moved[-1]
    assert (fact["event"], fact["memory"], fact["previous_memory"]) == ("UPDATE", "The user moved to Lisbon.", "The user lives in Porto.")
    # The supersession is in both facts' history, with the rule that decided it.
    for key in (fact["id"], fact["previous_id"]):
        update = [h for h in m.history(key) if h["event"] == "UPDATE"]
        assert len(update) == 1, m.history(key)
        assert (update[0]["old_memory"], update[0]["new_memory"]) == ("The user lives in Porto.", "The user moved to Lisbon.")
        assert update[0]["detail"]["rule"] == "functional-value"
    assert m.history(fact["id"])[0]["event"] == "ADD"
    # Search and get_all show the current fact, never the superseded one; rounds with facts are
    # represented by their facts.
    found = m.search("Where does the user live?", filters={"user_id": "maya"}, threshold=0)["results"]
    memories = [r["memory"] for r in found]
    assert "The user moved to Lisbon." in memories and "The user lives in Porto." not in memories
    assert all(r["record"] == "fact" for r in found)
    listed = [r["memory"] for r in m.get_all(filters={"user_id": "maya"})["results"]]
    assert listed == ["The user moved to Lisbon."]
    assert m.facts(user_id="maya")[0]["content"] == "The user moved to Lisbon."
    # The profile holds the current home, once changed.
    [home] = m.profile(user_id="maya")["relations"]
    assert home["relation"] == "lives_in"
    assert [(f["content"], f["value"], f["since"], f["changes"]) for f in home["facts"]] == [
        ("The user moved to Lisbon.", "Lisbon", "2024-06-02", 1)
    ]
    block = m.get_context("Where does the user live?", user_id="maya", budget=1000, profile=100)["context"]
    assert "- lives_in: The user moved to Lisbon. (since 2024-06-02, changed once)" in block
    # A fact carries its round's metadata, and filters by it.
    [lisbon] = m.get_all(filters={"user_id": "maya", "via": "call"})["results"]
    assert (lisbon["memory"], lisbon["metadata"], lisbon["record"]) == ("The user moved to Lisbon.", {"via": "call"}, "fact")
    assert m.get(lisbon["id"])["metadata"] == {"via": "call"}
    assert m.search("Lisbon", filters={"user_id": "maya", "via": {"ne": "call"}}, threshold=0)["results"] == []


def test_rounds_without_facts_are_found_by_what_the_user_said(tmp_path):
    m = open_memory(tmp_path)
    m.add([{"role": "user", "content": "I love tennis and play every Sunday."}, {"role": "assistant", "content": "Nice!"}], user_id="al")
    [hit] = m.search("tennis on Sunday", filters={"user_id": "al"})["results"]
    assert (hit["record"], hit["memory"], hit["user_id"]) == ("round", "I love tennis and play every Sunday.", "al")
    assert hit["turns"][1] == {"role": "assistant", "content": "Nice!"} and hit["metadata"] is None
    assert 0 < hit["score"] <= 1


def test_search_and_get_all_take_ids_in_filters_or_as_keywords(tmp_path):
    m = open_memory(tmp_path)
    for text in ("Likes jazz.", "Plays the cello.", "Allergic to nuts."):
        m.add(text, user_id="bo", infer=False)
    m.add("Likes techno.", user_id="cy", infer=False)
    v2 = m.search("jazz", filters={"user_id": "bo"}, top_k=2, threshold=0)["results"]
    v1 = m.search("jazz", user_id="bo", limit=2, threshold=0)["results"]
    assert v1 == v2 and len(v2) == 2 and v2[0]["memory"] == "Likes jazz."
    assert all(r["user_id"] == "bo" for r in v2)
    assert [r["memory"] for r in m.get_all(user_id="bo")["results"]] == [
        r["memory"] for r in m.get_all(filters={"user_id": "bo"})["results"]
    ]
    assert len(m.get_all(filters={"user_id": "bo"}, top_k=2)["results"]) == 2
    assert m.search("jazz", filters={"user_id": "bo"}, top_k=0)["results"] == []
    with pytest.raises(ValueError, match="user_id"):
        m.search("jazz", filters={"user_id": "bo"}, user_id="cy")
    with pytest.raises(ValueError, match="at least one of user_id"):
        m.get_all()
    with pytest.raises(mnemon.InvalidInput) as err:
        m.search("jazz", user_id="bo", threshold=1.5)
    assert err.value.field == "threshold"
    with pytest.raises(mnemon.InvalidInput) as err:
        m.search("jazz", user_id="bo", top_k=-1)
    assert err.value.field == "top_k"
    with pytest.raises(mnemon.InvalidInput) as err:
        m.add("x", user_id="has space")
    assert err.value.field == "user_id"


def test_the_threshold_drops_what_scores_below_it(tmp_path):
    m = open_memory(tmp_path)
    m.add("The red bicycle is in the garage.", user_id="u", infer=False)
    m.add("Quarterly taxes are due in April.", user_id="u", infer=False)
    every = m.search("red bicycle garage", user_id="u", threshold=0)["results"]
    assert len(every) == 2 and every[0]["score"] > every[1]["score"]
    strict = m.search("red bicycle garage", user_id="u", threshold=every[0]["score"])["results"]
    assert [r["memory"] for r in strict] == ["The red bicycle is in the garage."]
    # Scores are relevance, not rank: an unrelated query scores below 0.5, the `low` floor.
    unrelated = m.search("xyzzy plugh", user_id="u", threshold=0)["results"]
    assert len(unrelated) == 2 and all(r["score"] < 0.5 for r in unrelated)
    assert m.search("xyzzy plugh", user_id="u", threshold=0.5)["results"] == []


METADATA = [
    {"genre": "jazz", "year": 1959, "tags": ["sax"], "title": "Kind of Blue"},
    {"genre": "rock", "year": 1971, "tags": ["guitar"], "title": "Led Zeppelin IV"},
    {"genre": "jazz", "year": 1965, "tags": ["sax", "piano"], "title": "A Love Supreme"},
]
# Said in a conversation (a round), with the same kind of metadata.
SAID = {"genre": "blues", "year": 1950, "tags": ["harp"], "title": "Blue Moon"}


@pytest.mark.parametrize(
    "condition, expected",
    [
        ({"genre": "jazz"}, {"Kind of Blue", "A Love Supreme"}),
        ({"genre": {"eq": "rock"}}, {"Led Zeppelin IV"}),
        ({"genre": {"ne": "rock"}}, {"Kind of Blue", "A Love Supreme", "Blue Moon"}),
        ({"year": {"in": [1959, 1971]}}, {"Kind of Blue", "Led Zeppelin IV"}),
        ({"year": {"nin": [1959, 1971]}}, {"A Love Supreme", "Blue Moon"}),
        ({"year": {"gt": 1959}}, {"Led Zeppelin IV", "A Love Supreme"}),
        ({"year": {"gte": 1965, "lt": 1971}}, {"A Love Supreme"}),
        ({"year": {"lte": 1959}}, {"Kind of Blue", "Blue Moon"}),
        ({"title": {"contains": "Blue"}}, {"Kind of Blue", "Blue Moon"}),
        ({"title": {"icontains": "love"}}, {"A Love Supreme"}),
        ({"tags": {"contains": "piano"}}, {"A Love Supreme"}),
        ({"title": "*"}, {"Kind of Blue", "Led Zeppelin IV", "A Love Supreme", "Blue Moon"}),
        ({"AND": [{"genre": "jazz"}, {"year": {"gt": 1960}}]}, {"A Love Supreme"}),
        ({"OR": [{"genre": "rock"}, {"year": 1959}]}, {"Kind of Blue", "Led Zeppelin IV"}),
        ({"NOT": [{"genre": "jazz"}]}, {"Led Zeppelin IV", "Blue Moon"}),
    ],
)
def test_metadata_conditions_filter_search_and_get_all(tmp_path, condition, expected):
    m = open_memory(tmp_path)
    for meta in METADATA:
        m.add(f"An album: {meta['title']}.", user_id="dj", metadata=meta, infer=False)
    m.add("I keep playing my Blue Moon album.", user_id="dj", metadata=SAID)
    filters = {"user_id": "dj", **condition}
    searched = {r["metadata"]["title"] for r in m.search("album", filters=filters, threshold=0)["results"]}
    listed = {r["metadata"]["title"] for r in m.get_all(filters=filters)["results"]}
    assert searched == expected and listed == expected


def test_a_metadata_condition_that_cannot_map_is_an_error_naming_it(tmp_path):
    m = open_memory(tmp_path)
    m.add("x", user_id="u", infer=False)
    with pytest.raises(mnemon.InvalidInput) as err:
        m.search("x", filters={"user_id": "u", "year": {"near": 3}})
    assert err.value.field == "filter.metadata.year.near"
    with pytest.raises(mnemon.InvalidInput) as err:
        m.get_all(filters={"user_id": "u", "OR": {"a": 1}})
    assert err.value.field == "filter.metadata.OR"
    with pytest.raises(mnemon.InvalidInput) as err:
        m.search("x", user_id="u", rerank=True)
    assert err.value.field == "rerank"
    with pytest.raises(mnemon.InvalidInput) as err:
        m.add("x", user_id="u", metadata={"a": 1}, timestamp="not a time")
    assert err.value.field == "messages[0].ts"


def test_run_ids_scope_notes_and_rounds(tmp_path):
    m = open_memory(tmp_path)
    m.add("Trip one: booked the hotel.", user_id="u", run_id="trip-1", infer=False)
    m.add("Trip two: booked the train.", user_id="u", run_id="trip-2", infer=False)
    m.add("Trip two: the seat is 42A.", user_id="u", run_id="trip-2")
    two = m.get_all(filters={"user_id": "u", "run_id": "trip-2"})["results"]
    assert {r["memory"] for r in two} == {"Trip two: booked the train.", "Trip two: the seat is 42A."}
    assert all(r["run_id"] == "trip-2" for r in two)
    found = m.search("booked", filters={"user_id": "u", "run_id": "trip-1"}, threshold=0)["results"]
    assert [r["memory"] for r in found] == ["Trip one: booked the hotel."]
    m.delete_all(user_id="u", run_id="trip-2")
    assert [r["memory"] for r in m.get_all(user_id="u")["results"]] == ["Trip one: booked the hotel."]


def test_update_delete_history_and_reset(tmp_path):
    m = open_memory(tmp_path)
    key = m.add("Works at Acme.", user_id="u", metadata={"source": "chat"}, infer=False)["results"][0]["id"]
    assert m.update(key, text="Works at Globex.", metadata={"verified": True}) == {"message": "Memory updated successfully!"}
    got = m.get(key)
    assert got["memory"] == "Works at Globex." and got["metadata"] == {"source": "chat", "verified": True}
    assert m.update(key, data="Works at Initech.") == {"message": "Memory updated successfully!"}
    m.update(key, expiration_date="2999-01-01")
    assert m.get(key)["expiration_date"] == "2999-01-01"
    m.update(key, expiration_date="2000-01-01")
    assert m.get_all(user_id="u")["results"] == [], "expired memories are hidden"
    assert len(m.get_all(user_id="u", show_expired=True)["results"]) == 1
    events = [h["event"] for h in m.history(key)]
    assert events == ["ADD", "UPDATE", "UPDATE", "UPDATE", "UPDATE"]
    assert [h["new_memory"] for h in m.history(key)][:3] == [None, None, "Works at Initech."]
    with pytest.raises(ValueError, match="At least one"):
        m.update(key)
    assert m.delete(key) == {"message": "Memory deleted successfully!"}
    assert m.get(key) is None
    with pytest.raises(ValueError, match="not found"):
        m.delete(key)
    with pytest.raises(mnemon.NotFound):
        m.update(key, text="x")
    assert m.history(key) == [], "a deleted memory leaves nothing, its log included"
    round_key = m.add("A round.", user_id="u")["results"][0]["id"]
    with pytest.raises(mnemon.InvalidInput) as err:
        m.update(round_key, text="edited")
    assert err.value.field == "memory_id"
    m.add("Another user's memory.", user_id="v", infer=False)
    m.delete_all(user_id="u")
    assert m.users() == ["v"]
    m.reset()
    assert m.users() == []
    with pytest.raises(ValueError, match="At least one filter"):
        m.delete_all()


def test_agent_ids_keep_an_agents_records_private(tmp_path):
    m = open_memory(tmp_path)
    m.add("Shared: the user is left-handed.", user_id="u", infer=False)
    m.add("Coach: ran 10 km today.", user_id="u", agent_id="coach", infer=False)
    m.add("Chef: likes spicy food.", user_id="u", agent_id="chef", infer=False)
    coach = {r["memory"] for r in m.get_all(filters={"user_id": "u", "agent_id": "coach"})["results"]}
    assert coach == {"Shared: the user is left-handed.", "Coach: ran 10 km today."}
    m.delete_all(user_id="u", agent_id="chef")
    everything = {r["memory"] for r in m.get_all(user_id="u")["results"]}
    assert everything == {"Shared: the user is left-handed.", "Coach: ran 10 km today."}


def test_from_config_takes_mem0_and_mnemon_shapes(tmp_path):
    mem0_shaped = mnemon.Memory.from_config(
        {
            "vector_store": {"provider": "qdrant", "config": {"path": str(tmp_path / "q.db")}},
            "llm": {"provider": "openai", "config": {"model": "gpt-4.1-nano"}},
            "embedder": {"provider": "mnemon", "config": {"model": "hashing"}},
            "version": "v1.1",
        }
    )
    mem0_shaped.add("From a mem0 config.", user_id="u", infer=False)
    assert (tmp_path / "q.db").exists()
    own = mnemon.Memory({"store": str(tmp_path / "o.db"), "embedder": "hashing", "memory_mib": 64})
    own.add("From mnemon keys.", user_id="u", infer=False)
    with pytest.raises(mnemon.InvalidInput):
        mnemon.Memory({"store": str(tmp_path / "x.db"), "embedder": "word2vec"})
    with pytest.raises(mnemon.InvalidInput):
        mnemon.Memory({"store": str(tmp_path / "x.db"), "embedder": "hashing", "no_such_option": 1})


def test_native_calls(tmp_path):
    m = open_memory(tmp_path)
    saved = m.remember(["The user is vegetarian.", {"content": "Deploy with make release.", "kind": "procedural"}], user_id="u")
    assert [s["stored"] for s in saved["memories"]] == [True, True]
    m.add([{"role": "user", "content": "My sister Ana lives in Oslo.", "ts": T}, {"role": "assistant", "content": "Noted."}], user_id="u")
    context = m.get_context("Where does my sister live?", user_id="u", budget=500)
    assert "Oslo" in context["context"] and context["tokens"] <= 500
    recalled = m.recall("Where does my sister live?", user_id="u", top_k=1)
    assert recalled["rounds"][0]["turns"][0]["content"] == "My sister Ana lives in Oslo."
    # A long reply is trimmed for the question, unless every round is asked for whole.
    advice = " ".join(f"Tip number {i} is about packing light for a long mountain hike." for i in range(12))
    m.add([{"role": "user", "content": "Tips for my hike?", "ts": T}, {"role": "assistant", "content": advice + " Your boots are blue."}], user_id="u")
    trimmed = m.get_context("What colour are my boots?", user_id="u", budget=1000)["context"]
    whole = m.get_context("What colour are my boots?", user_id="u", budget=1000, whole_rounds=True)["context"]
    assert "Your boots are blue." in trimmed and "[…]" in trimmed and "Tip number 5" not in trimmed
    assert "Tip number 5" in whole and "[…]" not in whole
    page = m.list(user_id="u", filter={"kinds": ["procedural"]})
    assert [n["content"] for n in page["notes"]] == ["Deploy with make release."]
    assert "vegetarian" in m.export(user_id="u")
    assert m.rounds(user_id="u")[0]["ts"] == T
    assert any(d["kind"] == "round.stored" for d in m.decisions(user_id="u"))
    out = tmp_path / "backup.db"
    assert m.backup(out) > 0
    assert mnemon.Memory.open(out, embedder="hashing").users() == ["u"]
    forgotten = m.forget_user("u")
    assert (forgotten["rounds"], forgotten["notes"]) == (2, 2)
    assert m.users() == []


def test_a_dump_imports_into_another_store(tmp_path):
    m = open_memory(tmp_path)
    m.add("Remember the milk.", user_id="u", infer=False)
    m.add("I moved to Lisbon.", user_id="u")
    dump = m.export(user_id="u", format="jsonl")
    other = open_memory(tmp_path, "other.db")
    report = other.import_(dump)
    assert (report["notes"], report["rounds"], report["users"]) == (1, 1, ["u"])
    assert other.export(user_id="u", format="jsonl") == dump
    with pytest.raises(mnemon.InvalidInput):
        other.import_(dump)  # the user has records there now


CHATS = __import__("pathlib").Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "chats"


@pytest.mark.parametrize("fmt,name,rounds", [("chatgpt", "chatgpt.json", 3), ("claude", "claude.json", 4)])
def test_a_chat_history_imports_once(tmp_path, fmt, name, rounds):
    m = open_memory(tmp_path)
    first = m.import_chats(CHATS / name, fmt, user_id="ana")
    assert (first["rounds_stored"], first["rounds_duplicate"]) == (rounds, 0)
    assert all(set(s) == {"entry", "reason"} for s in first["skipped"]) and first["skipped"]
    again = m.import_chats(CHATS / name, fmt, user_id="ana")
    assert (again["rounds_stored"], again["rounds_duplicate"]) == (0, rounds)
    assert len(m.rounds(user_id="ana")) == rounds
    with pytest.raises(mnemon.InvalidInput) as e:
        m.import_chats(CHATS / name, "myspace", user_id="ana")
    assert e.value.field == "format"


def test_async_memory_runs_calls_as_coroutines(tmp_path):
    async def main():
        async with mnemon.AsyncMemory.open(tmp_path / "a.db", embedder="hashing") as m:
            await asyncio.gather(*(m.add(f"Fact number {i}.", user_id="u", infer=False) for i in range(8)))
            found = await m.search("Fact number 3", user_id="u", limit=1)
            listed = await m.get_all(user_id="u", limit=100)
            return found["results"][0]["memory"], len(listed["results"])

    assert asyncio.run(main()) == ("Fact number 3.", 8)


def test_one_memory_serves_many_threads(tmp_path):
    m = open_memory(tmp_path)
    m.add("A note written before the threads start.", user_id="u", infer=False)
    names = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
    errors = []

    def work(name):
        try:
            m.add(f"Agent {name} was here.", user_id="u", infer=False)
            m.add(f"Agent {name} said hello.", user_id="u")
            found = m.search(f"{name} was here", user_id="u", limit=1)["results"]
            assert found[0]["memory"] == f"Agent {name} was here.", found
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(n,)) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(m.get_all(user_id="u", limit=100)["results"]) == 1 + 2 * len(names)
