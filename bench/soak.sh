#!/bin/bash
# The server's soak (issue 19): IDLE idle SPDY/3.1 sessions held open (default 10,000)
# while a load generator with connection churn runs for SECS seconds (default 60): short
# `speedy bench` runs back to back, each opening its own connections (-c 50) and closing
# them at its end. Then every client leaves and the server's RSS is sampled each second
# for 30 s. Prints one line per phase and a verdict: errors must be 0 and the RSS 30 s
# after the clients left must be under BOUND_MB (default 64). Needs a release build:
#   cargo build --release -p speedy && bench/soak.sh [IDLE] [SECS]
# Environment: SPEEDY (binary), OUT (work directory), BOUND_MB, PORT.
set -euo pipefail
BIN=${SPEEDY:-$(dirname "$0")/../target/release/speedy}
OUT=${OUT:-/tmp/speedy-soak}
IDLE=${1:-10000}
SECS=${2:-60}
BOUND_MB=${BOUND_MB:-64}
PORT=${PORT:-18643}
ulimit -n "$(ulimit -Hn)"  # each process holds about IDLE descriptors
mkdir -p "$OUT/root"
head -c 1024 /dev/urandom > "$OUT/root/a.bin"
rss_mb() { awk '/^VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }

"$BIN" serve --root "$OUT/root" --listen "127.0.0.1:$PORT" \
    --max-connections $((IDLE + 1024)) --max-connections-per-ip 0 --idle-timeout 600 > "$OUT/serve.log" 2>&1 &
SERVER=$!
cleanup() {
    kill "$SERVER" 2>/dev/null || true
    [ -n "${HOLD:-}" ] && kill "$HOLD" 2>/dev/null || true
    wait 2>/dev/null || true
}
trap cleanup EXIT
for _ in $(seq 50); do
    grep -q listening "$OUT/serve.log" 2>/dev/null && break
    sleep 0.1
done
URL="http://127.0.0.1:$PORT/a.bin"
echo "server pid $SERVER: RSS at start $(rss_mb "$SERVER") MB"

# The idle sessions: one request each, then held for the whole soak.
HOLD_S=$((SECS + 60))
"$BIN" bench "$URL" --idle "$IDLE" --hold "${HOLD_S}s" --json > "$OUT/idle.json" 2> "$OUT/idle.err" &
HOLD=$!
for _ in $(seq 600); do
    n=$(ls "/proc/$SERVER/fd" | wc -l)
    [ "$n" -ge "$IDLE" ] && break
    sleep 0.2
done
echo "idle sessions open: $(( $(ls "/proc/$SERVER/fd" | wc -l) )) server fds, RSS $(rss_mb "$SERVER") MB"

# The churning load, SECS seconds of it.
errors=0
requests=0
runs=0
end=$((SECONDS + SECS))
peak=0
while [ $SECONDS -lt $end ]; do
    out=$("$BIN" bench "$URL" -c 50 -m 4 -D 2s --warmup 0s --json 2>>"$OUT/churn.err")
    runs=$((runs + 1))
    e=$(printf '%s' "$out" | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j.get("errors", 0) + j.get("failed", 0))')
    r=$(printf '%s' "$out" | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j.get("requests", 0))')
    errors=$((errors + e))
    requests=$((requests + r))
    now=$(rss_mb "$SERVER")
    peak=$(python3 -c "print(max($peak, $now))")
done
echo "churn: $runs runs of 50 new connections, $requests requests, $errors errors; peak RSS $peak MB"

kill "$HOLD" 2>/dev/null || true
wait "$HOLD" 2>/dev/null || true
HOLD=
for s in $(seq 30); do
    sleep 1
    printf '%s ' "$(rss_mb "$SERVER")"
done
echo
after=$(rss_mb "$SERVER")
echo "RSS 30 s after the clients left: $after MB (bound $BOUND_MB MB)"
if [ "$errors" -eq 0 ] && python3 -c "import sys; sys.exit(0 if $after < $BOUND_MB else 1)"; then
    echo "soak: ok"
else
    echo "soak: FAILED"
    exit 1
fi
