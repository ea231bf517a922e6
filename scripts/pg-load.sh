#!/usr/bin/env bash
# Several processes on one PostgreSQL store (issue 16): SERVERS `mnemon serve` processes (1 or 2,
# each with the SmolLM2 extractor), a `mnemon loadtest` against each of two of them (or both
# against the one), and two CLI writers ingesting rounds the servers then extract. Afterwards it
# checks the store: every acknowledged memory and round is there once, every round was
# extracted exactly once, and the load saw no error. Prints the load generators' tables.
#
#   scripts/pg-load.sh            # SERVERS=2 LOAD_SECONDS=30 LOAD_CLIENTS=16 CLI_CALLS=20 EXTRACT_THREADS=2
#
# Needs a release build (cargo build --release -p mnemon-cli) and the fetched models.
set -euo pipefail
cd "$(dirname "$0")/.."
SERVERS=${SERVERS:-2}
SECS=${LOAD_SECONDS:-30}
CLIENTS=${LOAD_CLIENTS:-16}
CALLS=${CLI_CALLS:-20}
THREADS=${EXTRACT_THREADS:-2}
TARGET=${CARGO_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mnemon/target}
BIN=${MNEMON_BIN:-$TARGET/release/mnemon}
MODELS=${MNEMON_MODELS:-${XDG_CACHE_HOME:-$HOME/.cache}/mnemon/models}
GGUF=$MODELS/gguf/SmolLM2-135M-Instruct.Q4_1.gguf
[ -x "$BIN" ] || { echo "no release build at $BIN (cargo build --release -p mnemon-cli)" >&2; exit 2; }
[ -f "$GGUF" ] || { echo "no $GGUF (scripts/fetch-models.sh)" >&2; exit 2; }

URL=$(scripts/postgres.sh start)
PSQL=$(scripts/postgres.sh psql)
DB=mnemon_load_$SERVERS
"$PSQL" -X -q "$URL" -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB"
STORE=${URL%/*}/$DB
sql() { "$PSQL" -X -tA "$STORE" -c "$1"; }
WORK=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

PORTS=(7431 7432)
for i in $(seq 0 $((SERVERS - 1))); do
  "$BIN" serve --store "$STORE" --data "$WORK/data-$i" --embedder hashing --extractor "$GGUF" \
    --extract-threads "$THREADS" --addr "127.0.0.1:${PORTS[$i]}" 2>"$WORK/serve-$i.log" &
  PIDS+=($!)
done
for i in $(seq 0 $((SERVERS - 1))); do
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:${PORTS[$i]}/health" >/dev/null && break; sleep 0.2; done
done

# Two load generators, users of their own (a-*, b-*), through server 0 and the last server.
"$BIN" loadtest --url "http://127.0.0.1:${PORTS[0]}" --prefix a --users 5 --seed 200 \
  --clients "$CLIENTS" --seconds "$SECS" >"$WORK/load-a.txt" 2>"$WORK/load-a.err" &
LA=$!
"$BIN" loadtest --url "http://127.0.0.1:${PORTS[$((SERVERS - 1))]}" --prefix b --users 5 --seed 200 \
  --clients "$CLIENTS" --seconds "$SECS" >"$WORK/load-b.txt" 2>"$WORK/load-b.err" &
LB=$!
# Two CLI writers: CALLS ingests of two rounds each, queued for the servers to extract.
writer() {
  local w=$1 ok=0
  for n in $(seq "$CALLS"); do
    local day=$(( (n - 1) % 28 + 1 ))
    printf '{"role":"user","content":"Writer %s call %s: I planted %s tulips by the shed.","ts":"2026-04-%02dT10:00:00","session":"w%s-%s"}\n{"role":"assistant","content":"Lovely, tulips %s.","ts":"2026-04-%02dT10:00:05","session":"w%s-%s"}\n{"role":"user","content":"Writer %s call %s: my sister visits on day %s.","ts":"2026-04-%02dT11:00:00","session":"w%s-%s"}\n' \
      "$w" "$n" "$n" "$day" "$w" "$n" "$n" "$day" "$w" "$n" "$w" "$n" "$n" "$day" "$w" "$n" >"$WORK/chat-$w-$n.jsonl"
    if "$BIN" ingest --store "$STORE" --user "cli-$w" --embedder hashing "$WORK/chat-$w-$n.jsonl" >/dev/null 2>>"$WORK/cli-$w.err"; then
      ok=$((ok + 1))
    fi
  done
  echo "$ok" >"$WORK/cli-$w.ok"
}
writer 1 &
W1=$!
writer 2 &
W2=$!
wait $LA $LB $W1 $W2

# Every queued round extracted (each user's by whichever server claimed the user).
left_at_end=$(sql 'SELECT count(*) FROM extract_queue')
start=$(date +%s)
for _ in $(seq 600); do [ "$(sql 'SELECT count(*) FROM extract_queue')" = 0 ] && break; sleep 1; done
drained=$(( $(date +%s) - start ))

echo "== $SERVERS server(s) (extractor threads $THREADS each), 2 load generators × $CLIENTS clients × ${SECS} s, 2 CLI writers × $CALLS ingests"
cat "$WORK/load-a.txt" "$WORK/load-b.txt"
fail=0
for p in a b; do
  acked=$(sed -n 's/^acknowledged writes \([0-9]*\) (+ \([0-9]*\) seeded)$/\1 \2/p' "$WORK/load-$p.txt")
  read -r writes seeded <<<"$acked"
  stored=$(sql "SELECT count(*) FROM notes n JOIN users u ON u.id = n.user_id WHERE u.name LIKE '$p-%'")
  errors=$(awk '$1 == "all" {print $7}' "$WORK/load-$p.txt")
  echo "load $p: acknowledged $((writes + seeded)), stored $stored, errors $errors"
  [ "$stored" = $((writes + seeded)) ] && [ "$errors" = 0 ] || fail=1
done
for w in 1 2; do
  ok=$(cat "$WORK/cli-$w.ok")
  stored=$(sql "SELECT count(*) FROM rounds r JOIN users u ON u.id = r.user_id WHERE u.name = 'cli-$w'")
  echo "cli writer $w: $ok of $CALLS ingests acknowledged, $((ok * 2)) rounds expected, $stored stored"
  [ "$ok" = "$CALLS" ] && [ "$stored" = $((ok * 2)) ] || fail=1
done
queued=$(sql 'SELECT count(*) FROM extract_queue')
twice=$(sql "SELECT count(*) FROM rounds r WHERE (SELECT count(*) FROM decisions d WHERE d.user_id = r.user_id \
  AND d.record = r.round_key AND d.kind IN ('round.extracted', 'round.prefiltered')) <> 1")
facts=$(sql 'SELECT count(*) FROM facts')
rounds=$(sql 'SELECT count(*) FROM rounds')
extracted=$(sql "SELECT count(*) FROM decisions WHERE kind = 'round.extracted'")
skipped=$(sql "SELECT count(*) FROM decisions WHERE kind = 'round.prefiltered'")
echo "rounds $rounds: $extracted through the model, $skipped pre-filtered; facts $facts; still queued $queued;" \
  "rounds not extracted exactly once $twice"
echo "queued when the load ended $left_at_end, drained $drained s later"
[ "$queued" = 0 ] && [ "$twice" = 0 ] || fail=1
for i in $(seq 0 $((SERVERS - 1))); do
  grep -i -E "error|panic" "$WORK/serve-$i.log" | head -5 || true
done
[ "$fail" = 0 ] && echo "PASS" || { echo "FAIL"; exit 1; }
