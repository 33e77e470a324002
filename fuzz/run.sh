#!/usr/bin/env bash
# Runs the fuzz targets for SECONDS each (default 25) and prints one summary line per
# target. Exits non-zero if any target crashed, timed out (a hang: -timeout=10 per input)
# or ran out of memory (-rss_limit_mb=2048). Each target's inputs are bounded by its own
# -max_len (below).
#
#   fuzz/run.sh [SECONDS] [TARGET...]
#   FUZZ_RUNS=10000000 FUZZ_SANITIZER=none fuzz/run.sh 0 har_import   # a long run
#
# FUZZ_RUNS, when set, runs each target for that many executions instead of SECONDS
# (SECONDS then bounds nothing: pass 0). FUZZ_SANITIZER picks cargo fuzz's sanitizer
# (address by default; `none` runs the Rust code without AddressSanitizer, 5-7x as many
# executions a second: har_import 1,660/s with it, 11,100/s without).
#
# The targets (the harnesses are in src/, one module per crate surface):
#   frame_decode      spdy: frames through Frame::decode, encode -> decode round trips
#   header_block      spdy: name/value blocks, compressed blocks, compressor round trips
#   server_session    spdy: a server Session against a raw or scripted peer
#   client_session    spdy: a client Session against a raw or scripted peer
#   har_import        speedy-archive: the HAR importer (reader, pages, discovery) and
#                     the in-memory exports of what it imports, read back
#   warc_import       speedy-archive: WARC, plain or gzip (warc::parse, the HTTP
#                     message reader, the importer)
#   mahimahi_import   speedy-archive: Mahimahi records (the protobuf wire codec, the
#                     RequestResponse decoder, encode/decode round trips) and the
#                     folder, built in memory, through the importer
#   wpr_import        speedy-archive: Web Page Replay archives: the JSON, the JSON
#                     through gzip, and raw gzip data (inflation bounded by -max_len)
#   http1_response    speedy-net: HTTP/1.1 response heads and body framing (sans IO),
#                     the stream read at once and in pieces giving the same responses
#   spdy_mux          speedy-net: the SPDY stream multiplexer on its connection loop,
#                     against a scripted peer, with an application of varied manners
#   sctp_packet       speedy-net: SCTP packets (chunks, address stripping, checksums,
#                     the SACK-immediately bit, COOKIE ECHO bundling, the Bundler)
#   sctp_route        speedy-net: the SPDY frame <-> SCTP stream router, both ways
#   h2_server         h2wire: the HTTP/2 server connection against a client of raw
#                     bytes (optionally after a valid preface), answering every request
#                     (bodies, pushes, resets, trailers); its output must decode
#   sctp_association  sctp-proto: an association set up as speedy's (bundling client,
#                     address stripping, the router) whose packets are delivered, lost,
#                     reordered, corrupted and forged with the right tags
#
# Needs the nightly toolchain and python3; installs cargo-fuzz if it is missing. Corpora
# live in fuzz/corpus/TARGET (not committed) and are seeded at run time: the spdy targets
# from the byte vectors of crates/spdy/tests/frames.rs (below), the others by seeds.py
# from the test fixtures (crates/speedy-archive/tests/data and the fixture site,
# speedy-net's response and SCTP test vectors); inputs that once crashed a target are
# kept in fuzz/regressions/TARGET and copied in. Crashes land in fuzz/artifacts/TARGET.
#
# Cost, on 2 cores: a cold build of the fuzz crate 4 min 24 s (1 min 10 s without
# speedy-net, whose tokio, rustls, aws-lc, quinn and hyper are the rest); a rebuild after
# a change to the harnesses 12 s, to speedy-net about 40 s. scripts/test runs every
# target for FUZZ_SECONDS (25 s: 14 targets, about 6 min 15 s with the build done).
set -u
cd "$(dirname "$0")"

secs=${1:-25}
sanitizer=${FUZZ_SANITIZER:-address}
if [ -n "${FUZZ_RUNS:-}" ]; then
    budget=(-runs="$FUZZ_RUNS")
else
    budget=(-max_total_time="$secs")
fi
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(frame_decode header_block server_session client_session
        har_import warc_import mahimahi_import wpr_import
        http1_response spdy_mux sctp_packet sctp_route sctp_association h2_server)
fi

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "run.sh: installing cargo-fuzz" >&2
    cargo install cargo-fuzz --locked || exit 2
fi
if ! rustup toolchain list | grep -q '^nightly'; then
    echo "run.sh: the nightly toolchain is required (rustup toolchain install nightly)" >&2
    exit 2
fi

seed() { # seed TARGET NAME HEX
    mkdir -p "corpus/$1"
    [ -e "corpus/$1/seed-$2" ] || printf '%s' "$3" | xxd -r -p >"corpus/$1/seed-$2"
}
# frame_decode: version byte (0 = v2, 1 = v3, 2 = v3.1), limit byte, then frames.
chromium_v3_syn=800300010000002700000001000000008000
chromium_v3_syn+=38eae3c6a7c202e50e50c24b4a04e50be6b4fc7c240a2808000000ffff
seed frame_decode v3 "0103${chromium_v3_syn}80030003000000080000000100000001800300040000000c000000010400000700100000800300060000000412345678"
seed frame_decode v2 "0003800200010000002500000001000000008000\
38eadfa251b262606260 4e4a2c62604ecbcf8712402e000000ffff8002000700000004000000018002000500000000"
seed frame_decode v31 "0203800300090000000800000000000f000080030007000000080000000100000000000000010100000568656c6c6f"
# header_block: version byte, mode byte (0 raw, 1 compressed blocks, 2 round trip).
seed header_block raw "010000000002000000036261720000000366 6f6f00000003666f6f00000003626172"
seed header_block zlib "0101030000001d38eae3c6a7c202e50e50c24b4a04e50be6b4fc7c240a2808000000ffff"
seed header_block trip "02020901010103610101000402636f6f6b696501"
# sessions: version, knobs, peer compression (4 bytes), mode (odd = script), then steps.
seed server_session script "0200090b0101010100001101220100"
seed client_session script "0200090b01010101000d0001000203"
for t in server_session client_session; do
    seed "$t" raw "01000000000000${chromium_v3_syn:0:2}"
done
# h2_server: knob byte (0x10: a valid preface and SETTINGS first), chunk byte, then the
# client's frames: a GET on stream 1 (HPACK: :method GET, :scheme https, :path /,
# :authority "a"), END_STREAM and END_HEADERS.
seed h2_server get "3007000006010500000001828784410161"
python3 seeds.py || { echo "run.sh: seeds.py failed" >&2; exit 2; }
for d in regressions/*/; do
    [ -d "$d" ] || continue
    t=$(basename "$d")
    mkdir -p "corpus/$t"
    cp -n "$d"* "corpus/$t/" 2>/dev/null || true
done

# max_len TARGET: the largest input of each target (libFuzzer's own guess otherwise).
max_len() {
    case "$1" in
        har_import | warc_import) echo 16384 ;;
        mahimahi_import | wpr_import) echo 8192 ;;
        http1_response | spdy_mux | h2_server) echo 4096 ;;
        sctp_packet | sctp_route | sctp_association) echo 2048 ;;
        *) echo 0 ;;
    esac
}

echo "run.sh: building ${targets[*]}" >&2
for t in "${targets[@]}"; do
    cargo +nightly fuzz build -s "$sanitizer" "$t" >/dev/null 2>&1 ||
        { cargo +nightly fuzz build -s "$sanitizer" "$t"; exit 2; }
done

status=0
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t" "artifacts/$t"
    log=$(mktemp)
    start=$(date +%s)
    cargo +nightly fuzz run -s "$sanitizer" "$t" "corpus/$t" -- \
        "${budget[@]}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -max_len="$(max_len "$t")" >"$log" 2>&1
    rc=$?
    took=$(($(date +%s) - start))
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*')
    corpus=$(find "corpus/$t" -type f | wc -l)
    if [ "$rc" -eq 0 ]; then
        printf 'ok    %-16s %4ss  %10s execs  %7s execs/s  cov %-6s corpus %s\n' \
            "$t" "$took" "${execs:-?}" "$(( ${execs:-0} / (took > 0 ? took : 1) ))" "${cov:-?}" "$corpus"
        # A long run also shows libFuzzer's final statistics.
        [ -n "${FUZZ_RUNS:-}" ] && grep -E '^stat::' "$log" | sed 's/^/      /'
    elif grep -q '^error: could not compile' "$log"; then
        # `cargo fuzz run` rebuilds a stale target; a tree being edited may not build.
        status=1
        printf 'BUILD %-16s failed to build (the tree changed since the build above):\n' "$t"
        grep -E '^error' "$log" | head -5 >&2
    else
        status=1
        printf 'CRASH %-16s %4ss  %10s execs  (exit %s) artifacts in fuzz/artifacts/%s\n' \
            "$t" "$took" "${execs:-?}" "$rc" "$t"
        grep -E 'panicked|ERROR|SUMMARY|Test unit written|timeout' "$log" | head -20 >&2
    fi
    rm -f "$log"
done
exit $status
