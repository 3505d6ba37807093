#!/usr/bin/env bash
# What a reader of an HTML report sees first, as a PNG: the report opened in headless Chromium at a
# laptop's screen (1366 x 768 by default). docs/img/report.png, which the README shows, is made
# with it:
#     scripts/screenshot-report.sh docs/results/mariadb-10.11-default-debian-shaped docs/img/report.png
# Needs Debian's chromium (apt-get install chromium). Usage: RUN_DIR OUT.png [WIDTH HEIGHT]
set -euo pipefail
if [ $# -lt 2 ]; then
    echo "usage: $0 RUN_DIR OUT.png [WIDTH HEIGHT]" >&2
    exit 2
fi
run=$1 out=$2 width=${3:-1366} height=${4:-768}
report="$(cd "$run" && pwd)/report.html"
if [ ! -f "$report" ]; then
    echo "$run has no report.html; make one with: pgoforge report $run" >&2
    exit 2
fi
browser=$(command -v chromium || true)
if [ -z "$browser" ]; then
    echo "chromium is not installed; install it with: apt-get install chromium" >&2
    exit 3
fi
# A fresh profile each time, so nothing of another session (zoom, fonts) changes the picture;
# written beside the output and moved into place whole.
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
tmp="$out.tmp.png"
"$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$profile" \
    --window-size="$width,$height" --screenshot="$tmp" "file://$report" 2>/dev/null
mv "$tmp" "$out"
echo "$out: $report at ${width}x${height}"
