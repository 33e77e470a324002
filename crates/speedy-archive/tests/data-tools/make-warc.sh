#!/usr/bin/env bash
# Records crates/speedy-archive/tests/data/wget.warc.gz: GNU wget crawls the pages of
# ./site served by `speedy serve --root site`, writing WARC. Not run by the tests: its
# output is committed.
#
#   ./make-warc.sh [PATH_TO_SPEEDY] [OUT]
#
# Run 1 fetches index.html with its page requisites (-p: CSS, @import, url() images,
# scripts, images), plus the image and JSON that js/app.js loads (wget runs no
# JavaScript, so they are named on the command line), and writes a CDX index. Run 2
# fetches page2.html with its requisites, deduplicating against that index: what it
# shares with page 1 (site.css, base.css, hero.gif, logo.gif) is written as `revisit`
# records (identical-payload-digest profile) that refer to run 1's records by
# WARC-Refers-To. The fixture is the two gzip WARCs concatenated, which is itself a valid
# WARC (a WARC file is a sequence of records; each gzip member holds one).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
speedy=${1:-$here/../../../../target/debug/speedy}
out=${2:-$here/../data/wget.warc.gz}
work=$(mktemp -d)
trap 'kill $server 2>/dev/null || true; rm -rf "$work"' EXIT
"$speedy" serve --listen 127.0.0.1:0 --root "$here/site" >"$work/serve.out" 2>&1 &
server=$!
for _ in $(seq 50); do grep -q 'listening on' "$work/serve.out" && break; sleep 0.1; done
addr=$(sed -n 's/^listening on \([^ ]*\).*/\1/p' "$work/serve.out")
cd "$work"
wget -q -e robots=off -p --warc-file=run1 --warc-cdx -P dl1 \
  "http://$addr/index.html" "http://$addr/img/late.gif" "http://$addr/data/info.json"
wget -q -e robots=off -p --warc-file=run2 --warc-dedup=run1.cdx -P dl2 \
  "http://$addr/page2.html"
cat run1.warc.gz run2.warc.gz >"$out"
echo "$out: $(zcat "$out" | grep -ac '^WARC-Type: response') responses, $(zcat "$out" | grep -ac '^WARC-Type: revisit') revisits ($(wget --version | head -1))"
