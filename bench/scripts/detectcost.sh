#!/usr/bin/env bash
# detectcost.sh — where `wafl detect --runs 1` spends its time when nothing
# changed: its phases, and the fixed cost of one
# detection run next to the test's own time.
#
# In MODULE_DIR (a copy of a module, see overhead.sh's fetch) it prepares
# once (untimed, work directory $WORK/w), then for each wafl binary given
# (WAFL, and WAFL_BASE if set, alternating within each round) it times
# ROUNDS runs of
#
#   wafl -v detect --runs 1 --seed 1 --dir WORKDIR ./...
#
# with /usr/bin/time (wall, user+system CPU). Each binary has a work
# directory of its own, prepared by itself. Per run it prints wafl's
# phases (build = load + rewrite + go test -c + hashing, list = the test
# binaries' -test.list, detect = the detection runs), the instrumented
# build's load/rewrite/build split, and for the detect phase: the number
# of runs, the sum of the tests' own durations (the "--- PASS/FAIL: T (Xs)"
# lines of the runs' outputs) and what is left per run (process start,
# runtime setup, plan copy, exit grace, judging the run, saving the plan).
#
# Then, for the first package with a plan that has candidates, it times
# N=20 starts of its test binary running no test (-test.run ^$): with the
# hooks off, and in detection mode with that plan (runtime setup: the plan
# read and decoded, the binary hashed against the plan, the run log).
#
# Usage: bench/scripts/detectcost.sh MODULE_DIR
# Environment: WAFL (required), WAFL_BASE (optional), ROUNDS (3), N (20),
# WORK (default: a temporary directory, removed unless KEEP=1).
set -euo pipefail
dir=$(cd "$1" && pwd)
W=${WAFL:?set WAFL to a wafl binary}
B=${WAFL_BASE:-}
rounds=${ROUNDS:-3}
n=${N:-20}
work=${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/wafl-detectcost.XXXXXX")}
mkdir -p "$work"
if [[ -z ${WORK:-} && ${KEEP:-0} != 1 ]]; then trap 'rm -rf "$work"' EXIT; fi
cd "$dir"
name=$(go list -m)
kinds=(new)
[[ -n $B ]] && kinds=(base new)
bin() { if [[ $1 == base ]]; then echo "$B"; else echo "$W"; fi; }
for k in "${kinds[@]}"; do
	"$(bin "$k")" prepare --dir "$work/$k" ./... >"$work/prepare-$k.log" 2>&1 || true
	"$(bin "$k")" detect --runs 1 --seed 1 --dir "$work/$k" ./... >/dev/null 2>&1 || true # warm-up
done
echo "# $name, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u '+%H:%M UTC')"
echo "# kind round wall cpu exit | wafl phases | instrument split | runs, Σ test s, fixed s/run"
for r in $(seq "$rounds"); do
	for k in "${kinds[@]}"; do
		find "$work/$k/logs" -name '*.run*.log' -delete 2>/dev/null || true
		st=0
		/usr/bin/time -f '%e %U %S' -o "$work/time" "$(bin "$k")" -v detect --runs 1 --seed 1 --dir "$work/$k" ./... >"$work/log-$k" 2>&1 || st=$?
		read -r wall u s < <(tail -n 1 "$work/time")
		phases=$(grep -h '^time:' "$work/log-$k" | tr -s ' ' | cut -d' ' -f2- || true)
		split=$(grep -h '^wafl: load ' "$work/log-$k" | cut -d' ' -f2- || true)
		runs=$(grep -h '^detect:' "$work/log-$k" | sed 's/^detect: *\([0-9]*\) run.*/\1/' || echo 0)
		tsum=$(find "$work/$k/logs" -name '*.run*.log' -exec grep -h -- '^--- \(PASS\|FAIL\|SKIP\): Test[^ ]* (' {} + 2>/dev/null |
			sed 's/.*(\([0-9.]*\)s)$/\1/' | awk '{s += $1} END {printf "%.2f", s}')
		dphase=$(echo "$phases" | sed -n 's/.*detect \([0-9.]*\)\(m\?s\).*/\1 \2/p' | awk '{v = $1; if ($2 == "ms") v /= 1000; printf "%.3f", v}')
		fixed=$(awk -v d="${dphase:-0}" -v t="$tsum" -v n="${runs:-0}" 'BEGIN {if (n > 0) printf "%.3f", (d - t) / n; else print "-"}')
		echo "$k $r $wall $(echo "$u + $s" | bc) $st | $phases | $split | $runs runs, $tsum s, $fixed s/run"
	done
done
# Process start and runtime setup of one detection run.
k=${kinds[-1]}
plan=$(find "$work/$k/plans" -name '*.json' -print0 | xargs -0 grep -l '"locations": \[$' 2>/dev/null | head -1 || true)
[[ -n $plan ]] || plan=$(find "$work/$k/plans" -name '*.json' | head -1)
rel=${plan#"$work/$k/plans/"}
pkg=$(dirname "$rel")
binary=$work/$k/bin/$pkg.test
pdir=$(go list -f '{{.Dir}}' "$pkg")
echo "# process start, $pkg ($(du -m "$binary" | cut -f1) MB binary), plan $(basename "$plan"), N=$n"
for mode in off detect; do
	/usr/bin/time -f '%e %U %S' -o "$work/time" bash -c '
		cd "$1"
		for i in $(seq "$2"); do
			if [[ $3 == detect ]]; then
				WAFL_MODE=detect WAFL_PLAN=$5 WAFL_SEED=1 WAFL_RUN=1 WAFL_LOG=$6/x.wlog WAFL_CRASH=$6/x.crash "$4" -test.run "^$" >/dev/null 2>&1
			else
				"$4" -test.run "^$" >/dev/null 2>&1
			fi
		done' _ "$pdir" "$n" "$mode" "$binary" "$plan" "$work" || echo "# $mode: a run failed"
	read -r wall u s < <(tail -n 1 "$work/time")
	awk -v m="$mode" -v w="$wall" -v c="$(echo "$u + $s" | bc)" -v n="$n" 'BEGIN {printf "%s: %.1f ms wall, %.1f ms CPU per start\n", m, 1000 * w / n, 1000 * c / n}'
done
