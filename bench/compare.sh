#!/usr/bin/env bash
# speedy serve against nginx and h2o (issues 17 and 39), every ratio measured with ONE
# generator on both sides: h2load for HTTP/1.1 and h2c, `speedy bench` for SPDY/3.1
# (speedy) against h2 (nginx, h2o) and for h2 against h2, and `speedy bench` again for the
# p99 latencies (h2load prints no percentiles). Each ratio is against the better of nginx
# and h2o for that row (higher req/s, lower CPU per request, lower p99), named in the
# table. Rounds are interleaved (speedy, nginx, h2o, speedy, ...);
# each cell is the median of the rounds with its min-max. The servers' CPU time per
# request is read from /proc/PID/stat (utime + stime) around each run: the figure that
# does not depend on which side saturates. Servers are pinned to core 0, generators to
# core 1; nginx runs one worker, tuned as its users tune it for static files (sendfile,
# tcp_nopush, open_file_cache, long keep-alive, access log off); h2o one thread
# (num-threads 1), no access log (none unless configured), long timeouts, 128 streams per
# h2 connection (h2o 2.2 has no file-cache directive; it keeps its own).
#
#   DURATION=10s WARMUP=2s ROUNDS=3      per run, and how many interleaved rounds
#   CONNS=100 STREAMS=10                 connections, streams per connection (SPDY, h2)
#   IDLE=10000                           idle SPDY sessions for the memory line
#   DL_ROUNDS=7                          100 MiB downloads per protocol (one takes
#                                        ~0.1 s on loopback; single runs vary ±30%)
#   SERVE_ARGS="--header-level 1 --fixed-header-codes"
#                                        arguments for speedy serve: response headers
#                                        compressed with speedy's fixed-code deflater
#                                        (docs/serve.md), level-1 matches in the same
#                                        zlib stream any SPDY client reads; nginx's
#                                        SPDY module compressed them at 1-9 or, by
#                                        default (spdy_headers_comp 0), not at all
#
# TLS rows: h2 over TLS (h2load, ALPN) against nginx and h2o, and SPDY/3.1 over TLS against
# their h2 over TLS (`speedy bench -k`), each server with one self-signed P-256 certificate;
# connections last the whole run, so each makes one full handshake (no resumption).
#
# Needs root (installs nginx, h2o and nghttp2-client with apt-get, raises the fd limit).
# Prints every run as it goes, then the table; exits 0 (the table says what was met).
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10s}; WARMUP=${WARMUP:-2s}; ROUNDS=${ROUNDS:-3}
CONNS=${CONNS:-100}; STREAMS=${STREAMS:-10}; IDLE=${IDLE:-10000}
DL_ROUNDS=${DL_ROUNDS:-7}
SERVE_ARGS=${SERVE_ARGS---header-level 1 --fixed-header-codes}
need=()
command -v nginx >/dev/null || need+=(nginx)
command -v h2load >/dev/null || need+=(nghttp2-client)
command -v h2o >/dev/null || need+=(h2o)
if [ ${#need[@]} -gt 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null; fi
for port in 18080 18081 18082 18083 18084 18090 18091; do
    if ss -Hltn "sport = :$port" | grep -q .; then
        echo "compare.sh: port $port is in use (by $(ss -Hltnp "sport = :$port" | grep -o 'users:.*')); stop it first" >&2
        exit 2
    fi
done
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
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
    -keyout "$W/key.pem" -out "$W/cert.pem" 2>/dev/null
chmod -R a+rX "$W"   # nginx's workers run as www-data

# nginx: one worker; HTTP/1.1 on 18080, h2c (prior knowledge) on 18081.
cat > "$W/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $W/nginx.pid;
error_log $W/nginx.err warn;
events { worker_connections 19000; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  tcp_nodelay on;
  open_file_cache max=1000 inactive=60s;
  open_file_cache_valid 60s;
  keepalive_requests 10000000;
  keepalive_timeout 300s;
  http2_max_concurrent_streams 128;
  server { listen 127.0.0.1:18080; root $W/www; }
  server { listen 127.0.0.1:18081 http2; root $W/www; }
  server { listen 127.0.0.1:18083 ssl http2; root $W/www;
           ssl_certificate $W/cert.pem; ssl_certificate_key $W/key.pem; }
}
CONF
taskset -c 0 nginx -c "$W/nginx.conf" & pids+=($!)
# h2o: one thread a process. HTTP/1.1 and h2c (prior knowledge) on one port, h2 over TLS
# (ALPN) in a second process, so each has its own CPU count. Started as root it serves as
# nobody (hence no pid or log files of its own in $W).
# h2o_start NAME PORT [EXTRA]: writes $W/NAME.conf (EXTRA: more lines under `listen:`)
# and starts h2o with it on core 0.
h2o_start() {
    cat > "$W/$1.conf" <<CONF
num-threads: 1
http2-max-concurrent-requests-per-connection: 128
http1-request-timeout: 300
http2-idle-timeout: 300
listen:
  host: 127.0.0.1
  port: $2
${3:-}
hosts:
  default:
    paths:
      /:
        file.dir: $W/www
CONF
    taskset -c 0 h2o -c "$W/$1.conf" > "$W/$1.out" 2>&1 &
}
h2o_start h2o 18082; pids+=($!); hpid=$!
h2o_start h2o-tls 18084 "  ssl:
    certificate-file: $W/cert.pem
    key-file: $W/key.pem"; pids+=($!); htpid=$!
taskset -c 0 "$S" serve --listen 127.0.0.1:18090 --root "$W/www" \
    --max-connections $((IDLE + 1024)) --max-connections-per-ip 0 \
    $SERVE_ARGS > "$W/speedy.out" & pids+=($!)
spid=$!
taskset -c 0 "$S" serve --listen 127.0.0.1:18091 --root "$W/www" \
    --tls-cert "$W/cert.pem" --tls-key "$W/key.pem" --max-connections-per-ip 0 \
    $SERVE_ARGS > "$W/speedy-tls.out" & pids+=($!)
stpid=$!
sleep 2
# nginx's worker (the master only forks it): the process that serves.
npid=$(pgrep -P "$(cat "$W/nginx.pid")" | head -1)

cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }   # utime + stime, clock ticks
HZ=$(getconf CLK_TCK)

# gen ARGS...: runs ARGS on core 1 and writes how busy it kept that core (its CPU time,
# user + system, over its wall time) to $W/genbusy: a generator near 100% is what bounds
# that run's req/s, not the server.
gen() {
    python3 -c '
import resource, subprocess, sys, time
t = time.monotonic()
p = subprocess.run(["taskset", "-c", "1"] + sys.argv[2:])
wall = time.monotonic() - t
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
open(sys.argv[1], "w").write(f"{(ru.ru_utime + ru.ru_stime) / wall:.3f}\n")
sys.exit(p.returncode)' "$W/genbusy" "$@"
}

# run NAME SERVER_PID GENERATOR ARGS...: one measured run; appends
# "NAME req/s p99_ms cpu_us_per_req generator_busy" to $W/runs (p99 from speedy bench
# only).
run() {
    local name=$1 pid=$2 gen=$3; shift 3
    local c0 c1 out rps p99 n
    c0=$(cpu "$pid")
    if [ "$gen" = h2load ]; then
        out=$(gen h2load -t 1 -D "${DURATION%s}" --warm-up-time="${WARMUP%s}" "$@" 2>&1)
        c1=$(cpu "$pid")
        read -r rps n < <(python3 -c "
import re,sys
t=sys.stdin.read()
rps=float(re.search(r'finished in [0-9.]+s, ([0-9.]+) req/s',t).group(1))
done=int(re.search(r'requests: \d+ total, \d+ started, (\d+) done',t).group(1))
ok=int(re.search(r'status codes: (\d+) 2xx',t).group(1))
print(rps*ok/done if done else 0, ok)" <<<"$out")
        p99=nan
    else
        out=$(gen "$S" bench --threads 1 -D "$DURATION" --warmup "$WARMUP" --json "$@" 2>/dev/null || true)
        c1=$(cpu "$pid")
        read -r rps p99 n < <(python3 -c "
import json,sys
d=json.load(sys.stdin)
ok=d['status_codes'].get('2xx',0)
print(d['requests_per_s']*ok/max(d['requests'],1), d['latency_ms']['p99'], ok)" <<<"$out")
    fi
    # CPU over the whole run (warm-up included) per request of the whole run: the
    # measured count scaled by (warm-up + duration) / duration.
    python3 - "$name" "$rps" "$p99" "$c0" "$c1" "$HZ" "${DURATION%s}" "${WARMUP%s}" "$n" "$(cat "$W/genbusy")" >> "$W/runs" <<'PY'
import sys
name, rps, p99, c0, c1, hz, d, w, n, busy = sys.argv[1:]
rps, c0, c1, hz, d, w, n = float(rps), float(c0), float(c1), float(hz), float(d), float(w), float(n)
reqs = n * (d + w) / d if n else 0
us = (c1 - c0) / hz * 1e6 / reqs if reqs else float("nan")
print(f"{name} {rps:.1f} {p99} {us:.2f} {float(busy):.3f}")
PY
    tail -1 "$W/runs" | awk '{printf "  %-26s %10.0f req/s  p99 %7s ms  %6.2f µs CPU/req  generator %3.0f%% busy\n", $1, $2, $3, $4, $5 * 100}'
}

echo "== ${ROUNDS} interleaved rounds, ${DURATION} each after ${WARMUP} warm-up; ${CONNS} connections, ${STREAMS} streams"
for r in $(seq 1 "$ROUNDS"); do
    echo "round $r"
    run h1.speedy   "$spid" h2load --h1 -c "$CONNS" http://127.0.0.1:18090/1k.bin
    run h1.nginx    "$npid" h2load --h1 -c "$CONNS" http://127.0.0.1:18080/1k.bin
    run h2c.speedy  "$spid" h2load -c "$CONNS" -m "$STREAMS" http://127.0.0.1:18090/1k.bin
    run h2c.nginx   "$npid" h2load -c "$CONNS" -m "$STREAMS" http://127.0.0.1:18081/1k.bin
    run spdy.speedy "$spid" bench --protocol spdy/3.1 -c "$CONNS" -m "$STREAMS" http://127.0.0.1:18090/1k.bin
    run h2.nginx    "$npid" bench --protocol h2 -c "$CONNS" -m "$STREAMS" http://127.0.0.1:18081/1k.bin
    run h2.speedy   "$spid" bench --protocol h2 -c "$CONNS" -m "$STREAMS" http://127.0.0.1:18090/1k.bin
    run h1b.speedy  "$spid" bench --protocol http1 -c "$CONNS" http://127.0.0.1:18090/1k.bin
    run h1b.nginx   "$npid" bench --protocol http1 -c "$CONNS" http://127.0.0.1:18080/1k.bin
    run h1.h2o      "$hpid" h2load --h1 -c "$CONNS" http://127.0.0.1:18082/1k.bin
    run h2c.h2o     "$hpid" h2load -c "$CONNS" -m "$STREAMS" http://127.0.0.1:18082/1k.bin
    run h2.h2o      "$hpid" bench --protocol h2 -c "$CONNS" -m "$STREAMS" http://127.0.0.1:18082/1k.bin
    run h1b.h2o     "$hpid" bench --protocol http1 -c "$CONNS" http://127.0.0.1:18082/1k.bin
    run h2s.speedy  "$stpid" h2load -c "$CONNS" -m "$STREAMS" https://127.0.0.1:18091/1k.bin
    run h2s.nginx   "$npid" h2load -c "$CONNS" -m "$STREAMS" https://127.0.0.1:18083/1k.bin
    run h2s.h2o     "$htpid" h2load -c "$CONNS" -m "$STREAMS" https://127.0.0.1:18084/1k.bin
    run spdys.speedy "$stpid" bench -k --protocol spdy/3.1 -c "$CONNS" -m "$STREAMS" https://127.0.0.1:18091/1k.bin
    run h2sb.nginx  "$npid" bench -k --protocol h2 -c "$CONNS" -m "$STREAMS" https://127.0.0.1:18083/1k.bin
    run h2sb.h2o    "$htpid" bench -k --protocol h2 -c "$CONNS" -m "$STREAMS" https://127.0.0.1:18084/1k.bin
done

echo "== 100 MiB single-stream download from speedy serve ($DL_ROUNDS each, interleaved)"
dl() { taskset -c 1 "$S" bench --threads 1 -c 1 -m 1 -n 1 --warmup 0s --json --protocol "$1" http://127.0.0.1:18090/100m.bin \
        | python3 -c "import json,sys; print(json.load(sys.stdin)['bytes_per_s'])"; }
for r in $(seq "$DL_ROUNDS"); do
    for p in http1 spdy/3.1 h2; do echo "dl.${p//\//} $(dl "$p")" | tee -a "$W/dl" | awk '{printf "  %-26s %10.0f MB/s\n", $1, $2 / 1e6}'; done
done

echo "== memory: $IDLE idle SPDY sessions held by speedy serve"
rss() { awk '/VmRSS/ {print $2 * 1024}' "/proc/$1/status"; }
r0=$(rss "$spid")
taskset -c 1 "$S" bench --idle "$IDLE" --hold 15s --protocol spdy/3.1 http://127.0.0.1:18090/1k.bin > "$W/idle.out" & ipid=$!
for _ in $(seq 1 600); do grep -q holding "$W/idle.out" 2>/dev/null && break; sleep 0.2; done
# Idle means quiet: wait past speedy serve's --park-after (1 s), when a quiet session
# gives back its zlib contexts and read buffer, and past the heap trim that follows a
# burst of them (up to 4 s later).
sleep 8
r1=$(rss "$spid")
cat "$W/idle.out"
wait "$ipid" || true

python3 - "$W/runs" "$W/dl" "$r0" "$r1" "$IDLE" <<'PY'
import sys, statistics as st
from collections import defaultdict
runs, dls, r0, r1, idle = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
m = defaultdict(lambda: defaultdict(list))
for line in open(runs):
    name, rps, p99, us, busy = line.split()
    for k, v in (("rps", rps), ("p99", p99), ("us", us), ("busy", busy)):
        if v != "nan":
            m[name][k].append(float(v))
def med(name, k):
    v = m[name][k]
    return st.median(v) if v else float("nan")
def cell(name, k, fmt):
    v = m[name][k]
    if not v:
        return "–"
    return f"{fmt(st.median(v))} [{fmt(min(v))}–{fmt(max(v))}]"
n0 = lambda x: f"{x:,.0f}"
n2 = lambda x: f"{x:.2f}"
print()
print(f"{'comparison (same generator both sides)':<44} {'speedy':>28} {'better of nginx, h2o':>34} {'ratio':>6}  target")
def cmp(label, a, refs, k, fmt, target):
    """speedy's row `a` against the better of the reference rows `refs` for metric `k`
    (req/s: the higher median; CPU per request and p99: the lower)."""
    ra = med(a, k)
    have = [r for r in refs if m[r][k]]
    if not have:
        print(f"{label:<44} {cell(a, k, fmt):>28} {'–':>34} {'–':>6}  {target}")
        return
    pick = max if k == "rps" else min
    b = pick(have, key=lambda r: med(r, k))
    rb = med(b, k)
    ratio = ra / rb if rb else float("nan")
    ref = f"{b.split('.')[1]} {cell(b, k, fmt)}"
    print(f"{label:<44} {cell(a, k, fmt):>28} {ref:>34} {ratio:>6.2f}  {target}")
cmp("HTTP/1.1 req/s (h2load --h1)", "h1.speedy", ["h1.nginx", "h1.h2o"], "rps", n0, "≥ 1.3")
cmp("HTTP/1.1 CPU µs/req (h2load --h1)", "h1.speedy", ["h1.nginx", "h1.h2o"], "us", n2, "≤ 0.6")
cmp("HTTP/1.1 p99 ms (speedy bench)", "h1b.speedy", ["h1b.nginx", "h1b.h2o"], "p99", n2, "≤ 1")
cmp("h2c req/s (h2load)", "h2c.speedy", ["h2c.nginx", "h2c.h2o"], "rps", n0, "≥ 1.3")
cmp("h2c CPU µs/req (h2load)", "h2c.speedy", ["h2c.nginx", "h2c.h2o"], "us", n2, "≤ 0.6")
cmp("h2 p99 ms (speedy bench)", "h2.speedy", ["h2.nginx", "h2.h2o"], "p99", n2, "≤ 1")
cmp("SPDY/3.1 vs h2 req/s (speedy bench)", "spdy.speedy", ["h2.nginx", "h2.h2o"], "rps", n0, "≥ 1.3")
cmp("SPDY/3.1 vs h2 CPU µs/req", "spdy.speedy", ["h2.nginx", "h2.h2o"], "us", n2, "≤ 0.6")
cmp("SPDY/3.1 vs h2 p99 ms", "spdy.speedy", ["h2.nginx", "h2.h2o"], "p99", n2, "≤ 1")
cmp("h2 vs h2 req/s (speedy bench)", "h2.speedy", ["h2.nginx", "h2.h2o"], "rps", n0, "(same protocol)")
cmp("h2 over TLS req/s (h2load)", "h2s.speedy", ["h2s.nginx", "h2s.h2o"], "rps", n0, "≥ 1.3")
cmp("h2 over TLS CPU µs/req (h2load)", "h2s.speedy", ["h2s.nginx", "h2s.h2o"], "us", n2, "≤ 0.6")
cmp("SPDY/3.1 vs h2, TLS, req/s (speedy bench)", "spdys.speedy", ["h2sb.nginx", "h2sb.h2o"], "rps", n0, "≥ 1.3")
cmp("SPDY/3.1 vs h2, TLS, CPU µs/req", "spdys.speedy", ["h2sb.nginx", "h2sb.h2o"], "us", n2, "≤ 0.6")
cmp("SPDY/3.1 vs h2, TLS, p99 ms", "spdys.speedy", ["h2sb.nginx", "h2sb.h2o"], "p99", n2, "≤ 1")
d = defaultdict(list)
for line in open(dls):
    k, v = line.split()
    d[k].append(float(v) / 1e6)
h1 = st.median(d["dl.http1"])
for p in ("spdy3.1", "h2"):
    v = d[f"dl.{p}"]
    print(f"{'100 MiB download MB/s, ' + p + ' vs HTTP/1.1':<44} {f'{st.median(v):,.0f} [{min(v):,.0f}–{max(v):,.0f}]':>28} {f'{h1:,.0f} (HTTP/1.1)':>34} {st.median(v)/h1:>6.2f}  ≥ 1.0")
print()
print("generator busy (median of rounds; near 100%: the generator, not the server, bounds that req/s):")
names = ["h1", "h2c", "spdy", "h2", "h1b", "h2s", "spdys", "h2sb"]
print("  " + "   ".join(f"{n}.{s} {med(f'{n}.{s}', 'busy') * 100:.0f}%" for n in names for s in ("speedy", "nginx", "h2o") if m[f"{n}.{s}"]["busy"]))
per = (r1 - r0) / idle
print(f"{f'RSS per idle SPDY session ({idle:,.0f} sessions)':<44} {f'{per/1024:.1f} KiB':>28} {'':>34} {'':>6}  ≤ 12 KiB")
PY
