#!/bin/bash
# Lane scaling of the lab (docs/lab.md, "Lanes"): the same 32 loads (8 web-2010 pages,
# HTTP/1.1 and SPDY under the whitepaper's conditions, 2 runs, whitepaper DSL) at each
# lane count given (default 1 2 4 8 12 16); prints wall time and CPU (user+sys of the lab
# and its children), then each run's per-cell medians against the 1-lane run and the
# worst headroom figures. Needs root and a release build:
#   cargo build --release -p speedy && sudo bench/lab-lanes.sh 1 2 4 8
set -euo pipefail
BIN=${SPEEDY:-$(dirname "$0")/../target/release/speedy}
OUT=${OUT:-/tmp/speedy-lab-lanes}
LANES=${*:-1 2 4 8 12 16}
mkdir -p "$OUT"
cat > "$OUT/scale.toml" <<'TOML'
name = "scale"
runs = 2
seed = 7
[pages]
synth = 8
calibration = "web-2010"
[[network]]
profile = "whitepaper-dsl"
[[variant]]
name = "http1"
protocol = "http1"
baseline = true
cc = ["cubic", "reno"]
initcwnd = 3
header_compression = "zlib"
[[variant]]
name = "spdy"
protocol = "spdy"
cc = ["cubic", "reno"]
initcwnd = 3
header_compression = "zlib"
TOML
for L in $LANES; do
  rm -rf "$OUT/out$L"
  /usr/bin/time -f "%e %U %S" -o "$OUT/time$L" "$BIN" lab "$OUT/scale.toml" --lanes "$L" \
    --no-report --out "$OUT/out$L" > /dev/null 2> "$OUT/log$L"
done
python3 - "$OUT" $LANES <<'PY'
import json, statistics as st, sys
out, lanes = sys.argv[1], sys.argv[2:]
def rows(L): return [json.loads(l) for l in open(f"{out}/out{L}/results.jsonl")]
def cells(rs):
    c = {}
    for r in rs: c.setdefault((r["page"], r["variant"]), []).append(r["on_load_ms"])
    return c
base = cells(rows(lanes[0]))
print("lanes  wall_s  cpu_s  cell_ratio_median  late_mean_us_max  late_max_ms_max  loader_lag_ms_max  flagged")
for L in lanes:
    rs = rows(L); t = open(f"{out}/time{L}").read().split(); c = cells(rs)
    ratio = st.median([st.median(c[k]) / st.median(base[k]) for k in base if k in c])
    g = lambda f: max(r.get(f, 0) for r in rs)
    print(f"{L:>5} {float(t[0]):7.1f} {float(t[1]) + float(t[2]):6.1f} {ratio:18.3f} {g('link_late_mean_us'):17} "
          f"{g('link_late_max_us') / 1000:16.1f} {g('loader_lag_max_us') / 1000:18.1f} {sum(1 for r in rs if r.get('headroom')):8}")
PY
