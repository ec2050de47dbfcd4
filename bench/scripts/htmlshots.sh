#!/usr/bin/env bash
# htmlshots.sh — the HTML report of one corpus bug per timeline layout,
# screenshot in headless Chromium, into docs/report-html-<kind>.png: what a
# user sees of `wafl report --html`.
#
# Usage: bench/scripts/htmlshots.sh    Environment: WAFL (default: build cmd/wafl)
# Needs Debian's chromium (apt-get install chromium).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/wafl-shots.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if [[ -z ${WAFL:-} ]]; then
	WAFL=$tmp/wafl
	(cd "$root" && go build -o "$WAFL" ./cmd/wafl)
fi
command -v chromium >/dev/null || { echo "htmlshots.sh: chromium not found (apt-get install chromium)" >&2; exit 2; }
cp -r "$root/examples" "$tmp/ex"
rm -rf "$tmp/ex/.wafl"
declare -A layout=([pickfirst]=use-before-init [dockerstats]=use-after-dispose [natsdelete]=check-then-act [wgdone]=waitgroup)
(cd "$tmp/ex" && "$WAFL" detect --runs 5 ./pickfirst ./dockerstats ./natsdelete ./wgdone >/dev/null 2>&1) || true
for bug in "${!layout[@]}"; do
	report=$(ls "$tmp/ex/.wafl/reports/github.com/memorder/wafl/examples/$bug/"*.json | grep -v '\.run[0-9]' | head -1)
	(cd "$tmp/ex" && "$WAFL" report --html "$tmp/$bug.html" "$report" >/dev/null) || [[ $? -eq 1 ]]
	chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
		--disable-background-networking --disable-component-update --disable-sync \
		--user-data-dir="$tmp/chromium-$bug" --window-size=1280,560 \
		--screenshot="$root/docs/report-html-${layout[$bug]}.png" "file://$tmp/$bug.html" >/dev/null 2>&1
	echo "docs/report-html-${layout[$bug]}.png"
done
