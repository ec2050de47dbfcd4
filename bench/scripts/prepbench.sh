#!/usr/bin/env bash
# prepbench.sh — prepare's cost with package runs next to --per-test and
# plain go test, side by side: after one untimed warm-up of each, ROUNDS
# rounds alternate `go test -count=1 ./...`, `wafl prepare` and
# `wafl prepare --per-test` in MODULE_DIR (each wafl mode keeps its own work
# directory, so the instrumented build is warm), timed by /usr/bin/time.
# Prints "module kind round wall cpu exit load1" lines and the build/prepare
# phase split of each wafl run.
#
# Usage: bench/scripts/prepbench.sh MODULE_DIR   Environment: WAFL (required), ROUNDS (3), WORK (tmp)
set -u
dir=$(cd "$1" && pwd); rounds=${ROUNDS:-3}; name=$(basename "$dir")
W=${WAFL:?set WAFL to a wafl binary}
work=${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/wafl-prepbench.XXXXXX")}
cd "$dir"
go test -count=1 ./... >/dev/null 2>&1
"$W" prepare --dir "$work/pkg" ./... >/dev/null 2>&1
"$W" prepare --per-test --dir "$work/per" ./... >/dev/null 2>&1
for r in $(seq "$rounds"); do
	for k in gotest package pertest; do
		case $k in
		gotest) cmd=(go test -count=1 ./...) ;;
		package) cmd=("$W" prepare --dir "$work/pkg" ./...) ;;
		pertest) cmd=("$W" prepare --per-test --dir "$work/per" ./...) ;;
		esac
		/usr/bin/time -f "%e %U %S" -o "$work/time" "${cmd[@]}" >"$work/log" 2>&1
		st=$?
		read -r w u s <"$work/time"
		echo "$name $k $r $w $(echo "$u + $s" | bc) $st $(cut -d' ' -f1 /proc/loadavg) $(grep -h '^time:' "$work/log" | tr -s ' ' | cut -d' ' -f2-)"
	done
done
