"""`mnemon.Engine` and the exceptions, as installed."""

import sys
import threading
import time

import pytest

import mnemon


def open_engine(tmp_path, **kw):
    return mnemon.Engine(data=tmp_path / "data", embedder="hashing", **kw)


def test_operations_take_and_give_python_values(tmp_path):
    e = open_engine(tmp_path)
    saved = e.call("save_memories", user_id="ana", memories=[{"content": "Ana is vegetarian.", "tags": ["diet"]}])
    key = saved["memories"][0]["key"]
    found = e.call("search_memories", user_id="ana", query="vegetarian", filter={"tags_any": ["diet"]})
    assert [h["note"]["key"] for h in found["hits"]] == [key]
    got = e.call("get_memory", user_id="ana", key=key)
    assert (got["record"], got["content"]) == ("note", "Ana is vegetarian.")


def test_none_is_null_and_an_argument_left_out_is_left_as_it_is(tmp_path):
    e = open_engine(tmp_path)
    key = e.call("save_memories", user_id="ana", memories=[{"content": "Ana is vegetarian.", "title": "Diet"}])[
        "memories"
    ][0]["key"]
    e.call("update_memory", user_id="ana", key=key, importance=0.9)
    assert e.call("get_memory", user_id="ana", key=key)["title"] == "Diet"
    e.call("update_memory", user_id="ana", key=key, title=None)
    assert e.call("get_memory", user_id="ana", key=key)["title"] is None


def test_errors_are_typed_and_name_their_field(tmp_path):
    e = open_engine(tmp_path)
    with pytest.raises(mnemon.EmptyMemory) as err:
        e.call("save_memories", user_id="ana", memories=["ok", ""])
    assert isinstance(err.value, mnemon.InvalidInput) and isinstance(err.value, ValueError)
    assert (err.value.code, err.value.field) == ("empty_memory", "memories[1].content")
    assert e.call("count_memories", user_id="ana")["notes"] == 0, "a failed call changes nothing"
    with pytest.raises(mnemon.NotFound) as err:
        e.call("get_memory", user_id="ana", key="n-0000000000000000")
    assert isinstance(err.value, LookupError) and err.value.code == "not_found"
    with pytest.raises(mnemon.InvalidInput) as err:
        e.call("recall_memories", user_id="ana", query="x", unknown_field=1)
    assert "unknown_field" in str(err.value)
    with pytest.raises(mnemon.BudgetTooSmall):
        e.call("recall_memories", user_id="ana", query="x", budget=1)
    # A value JSON cannot hold is refused, never turned into null (nor a default).
    with pytest.raises(ValueError, match="JSON"):
        e.call("save_memories", user_id="ana", memories=[{"content": "a", "importance": float("nan")}])
    assert e.call("count_memories", user_id="ana")["notes"] == 0


def test_opening_validates_its_arguments(tmp_path):
    with pytest.raises(mnemon.InvalidInput) as err:
        mnemon.Engine(data=tmp_path, embedder="word2vec")
    assert err.value.field == "embedder"
    with pytest.raises(mnemon.InvalidInput) as err:
        mnemon.Engine(data=tmp_path, embedder="hashing", extract_cache=tmp_path / "c.db")
    assert err.value.field == "extract_cache"


def test_a_store_built_under_another_embedder_is_refused_with_its_pins(tmp_path):
    store = tmp_path / "one.db"
    e = mnemon.Engine(store, data=tmp_path, embedder="hashing")
    e.call("save_memories", user_id="ana", memories=["Ana is vegetarian."])
    del e
    with pytest.raises(mnemon.PinMismatch) as err:
        mnemon.Engine(store, data=tmp_path, embedder="minilm")
    assert "embedder" in str(err.value)
    names = {d.key: d for d in err.value.differences}
    assert names["embedder.name"].stored == "hashing-v1"
    assert names["embedder.name"].expected == "all-MiniLM-L6-v2-int8"


def test_the_gil_is_released_while_the_engine_works(tmp_path):
    e = open_engine(tmp_path)
    e.call("save_memories", user_id="ana", memories=[f"note {i} about cooking" for i in range(500)])
    ticks = []
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0)

    old = sys.getswitchinterval()
    # Python code alone never hands the GIL over now: only a call that releases it does.
    sys.setswitchinterval(100)
    t = threading.Thread(target=tick)
    t.start()
    try:
        during = []
        for _ in range(5):
            before = len(ticks)
            e.call("search_memories", user_id="ana", query="cooking", limit=500)
            during.append(len(ticks) - before)
    finally:
        stop.set()
        t.join()
        sys.setswitchinterval(old)
    assert any(during), f"the other thread never ran during a call: {during}"
