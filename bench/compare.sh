#!/usr/bin/env bash
# Side-by-side server comparison (issue 6): speedy serve against nginx (HTTP/1.1 and h2c,
# one worker) and node-spdy, and the load generator against h2load. Servers are pinned to
# core 0, load generators to core 1. Prints a table of results and ratios.
#   DURATION=10s  measuring time per run      WARMUP=2s  warm-up per run
#   CONNS=100 STREAMS=10                      IDLE=10000 idle SPDY sessions for memory
#   SERVE_ARGS="--header-level 1"             arguments for speedy serve (default: zlib level 1 for
#                                             response headers, the fast setting; nginx's SPDY
#                                             module defaulted to level 0, spdy_headers_comp)
# Needs root (installs nginx and nghttp2-client with apt-get, raises the fd limit).
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10s}; WARMUP=${WARMUP:-2s}; CONNS=${CONNS:-100}; STREAMS=${STREAMS:-10}; IDLE=${IDLE:-10000}
need=()
command -v nginx >/dev/null || need+=(nginx)
command -v h2load >/dev/null || need+=(nghttp2-client)
if [ ${#need[@]} -gt 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null; fi
[ -d interop/node_modules ] || npm ci --prefix interop --no-audit --no-fund --loglevel=error
cargo build --release -p speedy -q
S=$PWD/target/release/speedy
ulimit -n "$(ulimit -Hn)"
W=$(mktemp -d /tmp/speedy-compare.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$W"; }
trap cleanup EXIT
mkdir -p "$W/www"
head -c 1024 /dev/urandom > "$W/www/1k.bin"
head -c $((100 * 1024 * 1024)) /dev/urandom > "$W/www/100m.bin"
chmod -R a+rX "$W"   # nginx's workers run as www-data

# nginx: one worker, HTTP/1.1 on 18080, h2c on 18081.
cat > "$W/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $W/nginx.pid;
error_log $W/nginx.err warn;
events { worker_connections 19000; }
http {
  access_log off;
  sendfile on;
  keepalive_requests 10000000;
  keepalive_timeout 300s;
  server { listen 127.0.0.1:18080; root $W/www; }
  server { listen 127.0.0.1:18081 http2; root $W/www; }
}
CONF
taskset -c 0 nginx -c "$W/nginx.conf" & pids+=($!)
taskset -c 0 "$S" serve --listen 127.0.0.1:18090 --root "$W/www" ${SERVE_ARGS---header-level 1} > "$W/speedy.out" & pids+=($!)
spid=$!
taskset -c 0 node interop/server.js --plain --port 18095 --root "$W/www" > "$W/node.out" 2>&1 & pids+=($!)
sleep 2

# A run with errors still prints its JSON (errors are reported in the table).
B() { taskset -c 1 "$S" bench --threads 1 -D "$DURATION" --warmup "$WARMUP" --json "$@" || true; }
H() { taskset -c 1 h2load -t 1 -D "${DURATION%s}" --warm-up-time="${WARMUP%s}" "$@" 2>&1 | tee -a "$W/h2load.log"; }
# req/s of 2xx responses only: h2load counts any status as done.
rps_h2load() { python3 -c "
import re,sys
t=sys.stdin.read()
rps=float(re.search(r'finished in [0-9.]+s, ([0-9.]+) req/s',t).group(1))
done=int(re.search(r'requests: \d+ total, \d+ started, (\d+) done',t).group(1))
ok=int(re.search(r'status codes: (\d+) 2xx',t).group(1))
print(rps*ok/done if done else 0)"; }
field() { python3 -c "import json,sys; d=json.load(sys.stdin); print(d$1)"; }

echo "== runs (${DURATION} each after ${WARMUP} warm-up; $CONNS connections)"
h2l_h1=$(H --h1 -c "$CONNS" http://127.0.0.1:18080/1k.bin | rps_h2load)
sb_h1_json=$(B --protocol http/1.1 -c "$CONNS" http://127.0.0.1:18080/1k.bin)
h2l_h2c=$(H -c "$CONNS" -m "$STREAMS" http://127.0.0.1:18081/1k.bin | rps_h2load)
sb_h2c_json=$(B --protocol h2 -c "$CONNS" -m "$STREAMS" http://127.0.0.1:18081/1k.bin)
sp_spdy_json=$(B --protocol spdy/3.1 -c "$CONNS" -m "$STREAMS" http://127.0.0.1:18090/1k.bin)
node_json=$(B --protocol spdy/3.1 -c "$CONNS" -m "$STREAMS" http://127.0.0.1:18095/1k.bin || true)
h2l_sp_h1=$(H --h1 -c "$CONNS" http://127.0.0.1:18090/1k.bin | rps_h2load)

sb_h1=$(echo "$sb_h1_json" | field "['requests_per_s']")
sb_h2c=$(echo "$sb_h2c_json" | field "['requests_per_s']")
sb_h2c_p99=$(echo "$sb_h2c_json" | field "['latency_ms']['p99']")
sp=$(echo "$sp_spdy_json" | field "['requests_per_s']")
sp_p99=$(echo "$sp_spdy_json" | field "['latency_ms']['p99']")
node=$(echo "$node_json" | field "['requests_per_s']" 2>/dev/null || echo 0)

echo "== memory: $IDLE idle SPDY sessions held by speedy serve"
rss() { awk '/VmRSS/ {print $2 * 1024}' "/proc/$1/status"; }
r0=$(rss "$spid")
taskset -c 1 "$S" bench --idle "$IDLE" --hold 15s --protocol spdy/3.1 http://127.0.0.1:18090/1k.bin > "$W/idle.out" & ipid=$!
for _ in $(seq 1 600); do grep -q holding "$W/idle.out" 2>/dev/null && break; sleep 0.2; done
sleep 1
r1=$(rss "$spid")
cat "$W/idle.out"
wait "$ipid" || true

echo "== 100 MiB single-stream download"
dl() { taskset -c 1 "$S" bench --threads 1 -c 1 -m 1 -n 3 --warmup 0s --json --protocol "$1" http://127.0.0.1:18090/100m.bin | field "['bytes_per_s']"; }
dl_spdy=$(dl spdy/3.1)
dl_h1=$(dl http/1.1)

python3 - "$h2l_h1" "$sb_h1" "$h2l_h2c" "$sb_h2c" "$sb_h2c_p99" "$sp" "$sp_p99" "$node" "$h2l_sp_h1" "$r0" "$r1" "$IDLE" "$dl_spdy" "$dl_h1" <<'PY'
import sys
a = [float(x) for x in sys.argv[1:]]
h2l_h1, sb_h1, h2l_h2c, sb_h2c, sb_h2c_p99, sp, sp_p99, node, sp_h1, r0, r1, idle, dl_spdy, dl_h1 = a
def row(name, value, ratio="", target=""):
    print(f"{name:<58} {value:>14} {ratio:>9} {target}")
print()
print(f"{'measurement':<58} {'value':>14} {'ratio':>9} target")
row("h2load → nginx HTTP/1.1 (req/s)", f"{h2l_h1:,.0f}")
row("speedy bench → nginx HTTP/1.1 (req/s)", f"{sb_h1:,.0f}", f"{sb_h1/h2l_h1:.2f}", "≥ 0.95 of h2load")
row("h2load → nginx h2c (req/s)", f"{h2l_h2c:,.0f}")
row("speedy bench → nginx h2c (req/s)", f"{sb_h2c:,.0f}", f"{sb_h2c/h2l_h2c:.2f}", "(generator check)")
row("speedy serve SPDY/3.1, speedy bench (req/s)", f"{sp:,.0f}", f"{sp/h2l_h2c:.2f}", "≥ 1 × nginx h2c (h2load)")
row("node-spdy SPDY/3.1, speedy bench (req/s)", f"{node:,.0f}", f"{sp/node if node else float('inf'):.1f}", "speedy ≥ 10 × node-spdy")
row("p99 latency: speedy SPDY/3.1 vs nginx h2c (ms, speedy bench)", f"{sp_p99:.2f} / {sb_h2c_p99:.2f}", f"{sp_p99/sb_h2c_p99:.2f}", "≤ 1")
row("h2load → speedy serve HTTP/1.1 (req/s)", f"{sp_h1:,.0f}", f"{sp_h1/h2l_h1:.2f}", "≥ 1 × nginx HTTP/1.1")
per = (r1 - r0) / idle
row(f"RSS for {idle:,.0f} idle SPDY sessions (MiB)", f"{(r1-r0)/2**20:,.1f}", f"{per/1024:.1f} KiB", "≤ 64 KiB each")
row("100 MiB download, SPDY/3.1 vs HTTP/1.1 (MB/s)", f"{dl_spdy/1e6:,.0f} / {dl_h1/1e6:,.0f}", f"{dl_spdy/dl_h1:.2f}")
PY
