"""What the Python layer costs over the engine: search latency through `mnemon.Engine` (one JSON
call) and through mem0's `Memory.search` (notes, facts and rounds ranked together), add throughput
of rounds and of notes, and two threads searching one `Memory` against one. Prints a table; compare
with `mnemon bench --notes --embedder hashing --sizes N` (search) and `mnemon bench --embedder
hashing --sizes N` (ingest) on the same machine, never beside another benchmark.

    python python/bench.py [--notes 10000] [--rounds 10000] [--queries 500] [--workload FILE]
    python python/bench.py --add-only [--rounds 10000] [--rounds-out FILE.jsonl]

`--workload` takes the notes and queries `mnemon bench --notes --workload-out FILE` wrote (its
`FILE.<size>.json`): the same store and the same queries as the Rust figure, so the difference
is the layer's cost alone.
"""

import argparse
import json
import statistics
import tempfile
import threading
import time

import mnemon

WORDS = (
    "river stone garden lamp window coffee violin harbor meadow lantern copper pepper orbit canvas "
    "marble ladder thunder velvet basket candle saddle pillow rocket tunnel anchor pebble mirror "
    "falcon walnut bamboo glacier cabinet puzzle blanket compass sparrow kettle hammer feather "
    "island jacket ribbon shadow spiral teapot violet whistle zipper almond bucket cactus dolphin "
    "engine forest gravel helmet igloo jungle kitten lemon mango needle oyster parrot quartz raven "
    "salmon tiger umbrella valley wagon yogurt zebra acorn blossom cereal dragon ember fossil "
    "goblet honey ivory jigsaw koala lilac magnet nectar olive pirate quiver rhubarb saffron"
).split()


class Words:
    """The same stream of words on every run (a linear congruential generator)."""

    def __init__(self, seed):
        self.state = seed

    def sentence(self, n):
        out = []
        for _ in range(n):
            self.state = (self.state * 6364136223846793005 + 1442695040888963407) % (1 << 64)
            out.append(WORDS[(self.state >> 33) % len(WORDS)])
        return " ".join(out)


def percentiles(samples):
    ordered = sorted(samples)
    return statistics.median(ordered) * 1e3, ordered[int(len(ordered) * 0.95)] * 1e3


def timed(fn, items):
    samples = []
    for item in items:
        t = time.perf_counter()
        fn(item)
        samples.append(time.perf_counter() - t)
    return samples


def measure_add(tmp, words, n, jsonl_out=None):
    """Rounds per second through `Engine.call("add_messages")`, sessions of 10 rounds (a user
    turn of 15 words, a reply of 35) into a fresh store; `jsonl_out` gets the same messages as
    JSONL for `mnemon ingest`."""
    r = mnemon.Memory.open(f"{tmp}/rounds.db", embedder="hashing")
    rounds = [
        [
            {"role": "user", "content": words.sentence(15), "ts": "2024-01-01T00:00:00+00:00"},
            {"role": "assistant", "content": words.sentence(35), "ts": "2024-01-01T00:00:00+00:00"},
        ]
        for _ in range(n)
    ]
    sessions = [
        [dict(x, session=f"s{i}") for pair in rounds[i : i + 10] for x in pair] for i in range(0, n, 10)
    ]
    if jsonl_out:
        with open(jsonl_out, "w") as f:
            f.writelines(json.dumps(m) + "\n" for session in sessions for m in session)
    t = time.perf_counter()
    for session in sessions:
        r.engine.call("add_messages", user_id="bench", messages=session)
    return n / (time.perf_counter() - t)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--notes", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=10_000)
    ap.add_argument("--queries", type=int, default=500)
    ap.add_argument("--workload", help="notes and queries written by `mnemon bench --notes --workload-out`")
    ap.add_argument("--add-only", action="store_true", help="only the add figure, alone in its process")
    ap.add_argument("--rounds-out", help="write the added messages here as JSONL, for `mnemon ingest`")
    args = ap.parse_args()
    words = Words(args.notes + 7)
    if args.add_only:
        with tempfile.TemporaryDirectory() as tmp:
            rate = measure_add(tmp, words, args.rounds, args.rounds_out)
        print(f"| add, rounds/s (sessions of 10 rounds) | {rate:.0f} |")
        return
    with tempfile.TemporaryDirectory() as tmp:
        m = mnemon.Memory.open(f"{tmp}/notes.db", embedder="hashing")
        if args.workload:
            with open(args.workload) as f:
                workload = json.load(f)
            notes = [{k: v for k, v in n.items() if v is not None} for n in workload["notes"]]
            given_queries = workload["queries"]
            args.notes = len(notes)
        else:
            notes = [{"content": words.sentence(12), "ts": "2024-01-01T00:00:00+00:00"} for _ in range(args.notes)]
            given_queries = None
        t = time.perf_counter()
        for i in range(0, len(notes), 1000):
            m.remember(notes[i : i + 1000], user_id="bench")
        remember_rate = len(notes) / (time.perf_counter() - t)
        queries = given_queries or [words.sentence(6) for _ in range(args.queries)]
        args.queries = len(queries)
        engine = m.engine
        engine.call("search_memories", user_id="bench", query="warm up the index")
        # One pass to warm caches and the CPU, as `mnemon bench` warms its index; the second counts.
        timed(lambda q: engine.call("search_memories", user_id="bench", query=q), queries)
        native = timed(lambda q: engine.call("search_memories", user_id="bench", query=q), queries)
        mem0 = timed(lambda q: m.search(q, user_id="bench", limit=10), queries)

        # Two threads on one Memory against one thread, the same queries in all, over several
        # passes (one pass takes a quarter of a second: too short to read a ratio from).
        def run(qs):
            for q in qs:
                engine.call("search_memories", user_id="bench", query=q)

        passes = queries * 6
        t = time.perf_counter()
        run(passes)
        one = len(passes) / (time.perf_counter() - t)
        halves = [passes[0::2], passes[1::2]]
        threads = [threading.Thread(target=run, args=(h,)) for h in halves]
        t = time.perf_counter()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        two = len(passes) / (time.perf_counter() - t)

        add_rate = measure_add(tmp, words, args.rounds, args.rounds_out)

    print(f"notes: {args.notes}, queries: {args.queries}, hashing embedder")
    print("| figure | value |")
    print("|---|---|")
    print(f"| remember, notes/s (batches of 1000) | {remember_rate:.0f} |")
    print("| search p50 / p95, Engine.call (ms) | {:.3f} / {:.3f} |".format(*percentiles(native)))
    print("| search p50 / p95, mem0 Memory.search (ms) | {:.3f} / {:.3f} |".format(*percentiles(mem0)))
    print(f"| searches/s, one thread | {one:.0f} |")
    print(f"| searches/s, two threads on one Memory | {two:.0f} ({two / one:.2f}x) |")
    print(f"| add, rounds/s (sessions of 10 rounds) | {add_rate:.0f} |")


if __name__ == "__main__":
    main()
