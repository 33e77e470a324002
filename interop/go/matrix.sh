#!/usr/bin/env bash
# Interop matrix for spdystream-peer (and the kube-peer self-test).
#
#   cd interop/go && go build -o bin/ ./cmd/... && ./matrix.sh
#
# Pairs (client -> server), each only when its tools are there:
#   spdystream -> spdystream, spdystream -> node, node -> spdystream   (node + interop/node_modules)
#   spdystream -> speedy, speedy -> spdystream                         (SPEEDY=/path/to/speedy)
# Cases: small file, 5 MiB random file, 200 small files at --concurrency 100,
# 1 MiB POST to /echo, push page, reset path. Every process is bounded by
# `timeout`; a stalled transfer shows up as a timeout. Prints one line per
# pair x case and exits 1 when anything failed.
#
# Environment: SPEEDY (default /work/bin/speedy if executable), CASE_TIMEOUT
# (seconds a client gets, default 20), PAIRS (space-separated subset of
# ss-ss ss-node node-ss ss-speedy speedy-ss), KUBE=0 to skip the kube-peer test.
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
INTEROP=$(dirname "$HERE")
PEER=$HERE/bin/spdystream-peer
KUBE_PEER=$HERE/bin/kube-peer
SPEEDY=${SPEEDY:-/work/bin/speedy}
CT=${CASE_TIMEOUT:-20}
[ -x "$PEER" ] || { echo "build first: cd interop/go && go build -o bin/ ./cmd/..." >&2; exit 2; }

WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

# --- fixtures ---------------------------------------------------------------
ROOT=$WORK/root
mkdir -p "$ROOT"
echo 'hello from the interop matrix' > "$ROOT/small.txt"
head -c 5242880 /dev/urandom > "$ROOT/big.bin"
for i in $(seq 1 200); do echo "small file $i" > "$ROOT/f$i.txt"; done
echo '<html><link rel=stylesheet href=/push.css>page</html>' > "$ROOT/pushed-page.html"
echo 'body { color: black }' > "$ROOT/push.css"
head -c 1048576 /dev/urandom > "$WORK/post.bin"
echo '/pushed-page.html: /push.css' > "$WORK/push-map.txt"
sha() { sha256sum "$1" | cut -d' ' -f1; }

# --- servers ----------------------------------------------------------------
# start_server NAME CMD... : runs CMD in the background (recorded for the
# cleanup), waits for its `listening on ADDR` line and sets ADDR[NAME].
declare -A ADDR
start_server() {
  local name=$1; shift
  timeout 600 "$@" > "$WORK/$name.out" 2> "$WORK/$name.err" &
  PIDS+=($!)
  for _ in $(seq 1 100); do
    if grep -q '^listening on ' "$WORK/$name.out" 2>/dev/null; then
      ADDR[$name]=$(head -1 "$WORK/$name.out" | awk '{print $3}')
      return 0
    fi
    sleep 0.1
  done
  echo "server $name did not start: $(cat "$WORK/$name.err")" >&2
  return 1
}

start_server ss "$PEER" server --root "$ROOT" || exit 1
HAVE_NODE=0
if command -v node >/dev/null && [ -d "$INTEROP/node_modules/spdy" ]; then
  start_server node node "$INTEROP/server.js" --plain --auto-spdy31 --root "$ROOT" && HAVE_NODE=1
fi
HAVE_SPEEDY=0
if [ -x "$SPEEDY" ]; then
  start_server speedy "$SPEEDY" serve --listen 127.0.0.1:0 --root "$ROOT" \
    --echo-upload --reset-path /reset --push-map "$WORK/push-map.txt" && HAVE_SPEEDY=1
fi

# --- clients ----------------------------------------------------------------
# run_client KIND OUT ARGS... (KIND: ss, node, speedy); prints the exit code.
run_client() {
  local kind=$1 out=$2; shift 2
  local args=() a post="" expect=() conc=1
  while [ $# -gt 0 ]; do
    case $1 in
      --post) post=$2; shift 2 ;;
      --expect-error) expect+=("$2"); shift 2 ;;
      --concurrency) conc=$2; shift 2 ;;
      *) args+=("$1"); shift ;;
    esac
  done
  case $kind in
    ss)
      a=("$PEER" client "${args[@]}" --concurrency "$conc" --timeout "$CT")
      [ -n "$post" ] && a+=(--post "$post")
      for e in "${expect[@]}"; do a+=(--expect-error "$e"); done ;;
    node)
      a=(node "$INTEROP/client.js" "${args[@]}" --protocol spdy/3.1 --concurrency "$conc" --timeout "$CT")
      [ -n "$post" ] && a+=(--post "$post")
      for e in "${expect[@]}"; do a+=(--expect-error "$e"); done ;;
    speedy)
      a=("$SPEEDY" fetch "${args[@]}" --protocol spdy/3.1 --concurrency "$conc")
      [ -n "$post" ] && a+=(--data "$post") ;;
  esac
  timeout $((CT + 10)) "${a[@]}" > "$out" 2> "$out.err"
  echo $?
}

# check OUT RC KIND CASE : exit 0 when the output is right for the case.
check() {
  python3 - "$@" "$ROOT" "$WORK/post.bin" <<'EOF'
import hashlib, json, sys
out, rc, kind, case, root, post = sys.argv[1:7]
rc = int(rc)
lines = []
for l in open(out):
    l = l.strip()
    if l.startswith('{'):
        try: lines.append(json.loads(l))
        except ValueError: pass
def h(p): return hashlib.sha256(open(p, 'rb').read()).hexdigest()
def why(msg):
    print(msg); sys.exit(1)
if rc == 124: why('client killed by timeout (hung)')
errs = [l for l in lines if 'error' in l]
ok = [l for l in lines if 'error' not in l]
if case == 'reset':
    if not errs: why('no error reported for /reset')
    if kind != 'speedy' and rc != 0: why('exit %d' % rc)
    print('error: ' + errs[0]['error']); sys.exit(0)
if errs: why('%s (exit %d)' % (errs[0]['error'], rc))
if rc != 0: why('exit %d' % rc)
def want(path, expect_sha, pushed=False):
    m = [l for l in ok if l['url'].endswith(path) and bool(l.get('pushed')) == pushed]
    if not m: why('no %sresponse for %s' % ('pushed ' if pushed else '', path))
    if m[0].get('status') != 200: why('%s: status %r' % (path, m[0].get('status')))
    if m[0].get('sha256') != expect_sha: why('%s: sha256 mismatch (%s bytes)' % (path, m[0].get('bytes')))
if case == 'small': want('/small.txt', h(root + '/small.txt'))
elif case == 'big': want('/big.bin', h(root + '/big.bin'))
elif case == 'post': want('/echo', h(post))
elif case == 'push':
    want('/pushed-page.html', h(root + '/pushed-page.html'))
    want('/push.css', h(root + '/push.css'), pushed=True)
elif case == 'many':
    good = [l for l in ok if l.get('status') == 200]
    if len(good) != 200: why('%d of 200 responses' % len(good))
EOF
}

FAILED=0
PAIRS=${PAIRS:-ss-ss ss-node node-ss ss-speedy speedy-ss}
printf '%-12s %-6s %-5s %s\n' PAIR CASE RESULT DETAIL
for pair in $PAIRS; do
  client=${pair%-*} server=${pair#*-}
  case $pair in *node*) [ $HAVE_NODE = 1 ] || { echo "$pair: skipped (no node-spdy)"; continue; } ;; esac
  case $pair in *speedy*) [ $HAVE_SPEEDY = 1 ] || { echo "$pair: skipped (no $SPEEDY)"; continue; } ;; esac
  base=http://${ADDR[$server]}
  for case in small big many post push reset; do
    out=$WORK/$pair-$case.out
    case $case in
      small) rc=$(run_client "$client" "$out" "$base/small.txt") ;;
      big)   rc=$(run_client "$client" "$out" "$base/big.bin") ;;
      many)  rc=$(run_client "$client" "$out" $(for i in $(seq 1 200); do echo "$base/f$i.txt"; done) --concurrency 100) ;;
      post)  rc=$(run_client "$client" "$out" "$base/echo" --post "$WORK/post.bin") ;;
      push)  rc=$(run_client "$client" "$out" "$base/pushed-page.html") ;;
      reset) rc=$(run_client "$client" "$out" "$base/reset" --expect-error "$base/reset") ;;
    esac
    if detail=$(check "$out" "$rc" "$client" "$case"); then res=PASS; else res=FAIL; FAILED=1; fi
    printf '%-12s %-6s %-5s %s\n' "$pair" "$case" "$res" "$detail"
  done
done

if [ "${KUBE:-1}" = 1 ] && [ -x "$KUBE_PEER" ]; then
  start_server kubelet "$KUBE_PEER" kubelet --listen 127.0.0.1:0 || exit 1
  addr=${ADDR[kubelet]}
  head -c 307200 /dev/urandom > "$WORK/stdin.bin"
  head -c 10485760 /dev/urandom > "$WORK/pf.bin"
  for code in 0 3; do
    line=$(timeout 60 "$KUBE_PEER" exec --url "http://$addr/exec?exit=$code" --stdin "$WORK/stdin.bin" 2>"$WORK/exec.err")
    rc=$?
    if python3 -c '
import json, sys
r = json.loads(sys.argv[1])
ok = sys.argv[2] == "0" and r["exit_code"] == int(sys.argv[3]) and r["stdout_bytes"] == 307200 \
     and r["stdout_sha256"] == sys.argv[4] and r["stderr"] == "speedy-kube-double stderr\n"
sys.exit(0 if ok else 1)' "$line" "$rc" "$code" "$(sha "$WORK/stdin.bin")" 2>/dev/null; then res=PASS; else res=FAIL; FAILED=1; fi
    printf '%-12s %-6s %-5s %s\n' kube exec-$code "$res" "$line"
  done
  line=$(timeout 60 "$KUBE_PEER" port-forward --url "http://$addr/portforward" --remote-port 8080 --send "$WORK/pf.bin" 2>"$WORK/pf.err")
  if [ $? = 0 ]; then res=PASS; else res=FAIL; FAILED=1; fi
  printf '%-12s %-6s %-5s %s\n' kube pf-10M "$res" "$line"
fi
exit $FAILED
