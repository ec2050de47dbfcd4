#!/usr/bin/env bash
# eval.sh — evaluate wafl on the corpus and write docs/evaluation.md.
#
# For every bug in bench/scripts/corpus.tsv:
#   * TRIES (15) independent tries; each is a fresh `wafl prepare` followed by
#     up to RUNS (5) `wafl detect --runs 1` calls in the same work directory
#     (so the plan carries over between runs), stopping at the first report;
#   * records the runs needed to expose the bug (median over exposing tries),
#     how many tries exposed it within 2 runs (the preparation run and the
#     first detection run), and how many at all;
#   * slowdown: mean time an exposing try spends running tests (preparation
#     run + detection runs, from wafl's "time:" summary; builds excluded)
#     divided by one plain run of the test binary;
#   * race: whether `go test -race` reports a data race;
#   * PLAIN (50) plain runs: whether any of them fails.
# For every fixed twin: one prepare + RUNS detect runs must report nothing.
#
# Each of these is measured in every mode of MODES (default "rest load"):
#   rest  the machine as it is;
#   load  while a load generator this script starts keeps every core busy
#         (LOADPROCS busy processes, default 3 per core, so the run queue is
#         about 3x the cores, what a shared CI runner looks like); it is
#         stopped after each bug and at exit, and each generator process
#         ends by itself after LOADMAX seconds (default 7200) in any case.
#
# Usage: bench/scripts/eval.sh [name...]      (default: all bugs)
# Environment: WAFL (wafl binary; default builds cmd/wafl of this checkout), TRIES, RUNS,
#   PLAIN, MODES, LOADPROCS, LOADMAX, OUT (default docs/evaluation.md),
#   ABLATE (passed as --ablate to prepare and detect: fixed-delay, basic,
#   parent-child, interference, hb, decay; bench/scripts/ablate.sh uses it).
# Needs: the wafl CLI (prepare, detect --runs N --json --dir; exit 0 no bug,
#   1 bug, 2 error), python3 (for timing and medians).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
examples=$root/examples
TRIES=${TRIES:-15}
RUNS=${RUNS:-5}
PLAIN=${PLAIN:-50}
OUT=${OUT:-$root/docs/evaluation.md}
MODES=${MODES:-rest load}
LOADPROCS=${LOADPROCS:-$((3 * $(nproc)))}
LOADMAX=${LOADMAX:-7200}
work=$(mktemp -d "${TMPDIR:-/tmp}/wafl-eval.XXXXXX")
loadpids=()
trap 'load_stop; rm -rf "$work"' EXIT

die() { echo "eval.sh: $*" >&2; exit 2; }
command -v python3 >/dev/null || die "python3 is required"
if [[ -z ${WAFL:-} ]]; then
	WAFL=$work/wafl
	(cd "$root" && go build -o "$WAFL" ./cmd/wafl) || die "building cmd/wafl failed"
	wafl_from="built from commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
else
	wafl_from="WAFL=${WAFL}${WAFL_COMMIT:+, built from commit $WAFL_COMMIT}"
fi
"$WAFL" --help >/dev/null 2>&1 || die "$WAFL does not run"

# load_start: LOADPROCS busy processes, each ending by itself after LOADMAX
# seconds (timeout), so a killed script leaves nothing running for long.
load_start() {
	local i
	for ((i = 0; i < LOADPROCS; i++)); do
		timeout "$LOADMAX" sh -c 'while :; do :; done' &
		loadpids+=($!)
	done
}

load_stop() {
	if ((${#loadpids[@]})); then
		kill "${loadpids[@]}" 2>/dev/null || true
		wait "${loadpids[@]}" 2>/dev/null || true
	fi
	loadpids=()
}

loadavg() { cut -d' ' -f1 /proc/loadavg; }

# shellcheck source=bench/scripts/workdir.sh
source "$root/bench/scripts/workdir.sh"

# seconds DURATION...: sums Go-style durations (1.5s, 19ms, 250µs) printed by
# wafl's "time:" summary line.
run_seconds() {
	python3 - "$@" <<'PY'
import re, sys
units = {'ns': 1e-9, 'us': 1e-6, '\u00b5s': 1e-6, 'ms': 1e-3, 's': 1.0, 'm': 60.0, 'h': 3600.0}
total = 0.0
for path in sys.argv[1:]:
    text = open(path, encoding='utf-8', errors='replace').read()
    # "time:     build 1.5s, list 3ms, prepare 19ms" -> count only test runs.
    for m in re.finditer(r'\b(prepare|detect) ((?:[0-9.]+(?:ns|us|\u00b5s|ms|s|m|h))+)', text):
        for v, u in re.findall(r'([0-9.]+)(ns|us|\u00b5s|ms|s|m|h)', m.group(2)):
            total += float(v) * units[u]
print('%.6f' % total)
PY
}

# one_try PKG DIR: sets TRY_EXPOSED (1 when a report came within RUNS),
# TRY_RUNS (detection runs until the first report; 0 when the preparation
# run itself crashed with the bug, which wafl prepare reports with status 1)
# and TRY_SECS (seconds spent running tests: the preparation run and the
# detection runs, builds excluded).
one_try() {
	local pkg=$1 dir=$2 rc run logs
	reset_workdir "$dir"
	TRY_RUNS=0 TRY_EXPOSED=0
	set +e
	(cd "$examples" && "$WAFL" prepare --dir "$dir" ${ABLATE:+--ablate "$ABLATE"} "./$pkg" >"$dir.prepare.out" 2>"$dir.prepare.log")
	rc=$?
	set -e
	logs=("$dir.prepare.log")
	case $rc in
	0) ;;
	1) TRY_EXPOSED=1 ;;
	*) die "wafl prepare ./$pkg failed (status $rc), see $dir.prepare.log" ;;
	esac
	for ((run = 1; TRY_EXPOSED == 0 && run <= RUNS; run++)); do
		set +e
		(cd "$examples" && "$WAFL" detect --runs 1 --json --dir "$dir" ${ABLATE:+--ablate "$ABLATE"} "./$pkg" >"$dir.detect.$run.json" 2>"$dir.detect.$run.log")
		rc=$?
		set -e
		logs+=("$dir.detect.$run.log")
		case $rc in
		0) ;;
		1) TRY_RUNS=$run TRY_EXPOSED=1; break ;;
		*) die "wafl detect ./$pkg failed (status $rc), see $dir.detect.$run.log" ;;
		esac
	done
	TRY_SECS=$(run_seconds "${logs[@]}")
}

# plain_seconds PKG: wall time of one plain run of the test binary.
plain_seconds() {
	local pkg=$1 bin=$work/$(echo "$1" | tr / _).test
	(cd "$examples" && go test -c -o "$bin" "./$pkg") || die "go test -c ./$pkg failed"
	"$bin" -test.count=1 >/dev/null 2>&1 || true # warm the page cache
	python3 - "$bin" <<'PY'
import subprocess, sys, time
t0 = time.monotonic()
subprocess.run([sys.argv[1], '-test.count=1'], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print('%.6f' % (time.monotonic() - t0))
PY
}

plain_exposes() {
	local pkg=$1 bin=$work/$(echo "$1" | tr / _).test i
	for ((i = 0; i < PLAIN; i++)); do
		"$bin" -test.count=1 >/dev/null 2>&1 || { echo "yes (run $((i + 1)))"; return; }
	done
	echo "no"
}

race_reported() {
	local log=$work/$(echo "$1" | tr / _).race
	(cd "$examples" && go test -race -count=1 "./$1" >"$log" 2>&1) || true
	if grep -q "WARNING: DATA RACE" "$log"; then echo yes; else echo no; fi
}

names=("$@")
if [[ ${#names[@]} -eq 0 ]]; then
	while IFS=$'\t' read -r name _; do
		[[ -z $name || $name == \#* ]] && continue
		names+=("$name")
	done <"$root/bench/scripts/corpus.tsv"
fi

rows=()
fixedrows=()
for name in "${names[@]}"; do
	[[ -d $examples/$name/fixed ]] || die "examples/$name or its fixed twin is missing"
	base=$(plain_seconds "$name")
	race=$(race_reported "$name")
	plain=$(plain_exposes "$name")
	row="| \`$name\` |"
	fixedrow="| \`$name/fixed\` |"
	for mode in $MODES; do
		case $mode in
		rest) ;;
		load) load_start; sleep 2 ;;
		*) die "MODES: unknown mode $mode (want rest, load)" ;;
		esac
		echo "== $name ($mode, load average $(loadavg))" >&2
		runs=()
		exposed=0
		within2=0
		secs=()
		for ((try = 1; try <= TRIES; try++)); do
			one_try "$name" "$work/$name.$mode"
			r=$TRY_RUNS s=$TRY_SECS
			echo "   try $try: exposed=$TRY_EXPOSED runs-to-expose=$r (${s}s of test runs)" >&2
			if [[ $TRY_EXPOSED == 1 ]]; then
				exposed=$((exposed + 1))
				runs+=("$r")
				secs+=("$s")
				((r <= 1)) && within2=$((within2 + 1))
			fi
		done
		median=$(python3 -c 'import statistics,sys; v=[int(x) for x in sys.argv[1:]]; m=statistics.median(v) if v else "-"; print(int(m) if m != "-" and m == int(m) else m)' "${runs[@]+"${runs[@]}"}")
		slowdown=$(python3 -c '
import sys
base=float(sys.argv[1]); secs=[float(x) for x in sys.argv[2:]]
print("%.1fx" % (sum(secs)/len(secs)/base) if secs and base > 0 else "-")' "$base" "${secs[@]+"${secs[@]}"}")

		# fixed twin: nothing may be reported.
		one_try "$name/fixed" "$work/$name.fixed"
		r=$TRY_RUNS
		if [[ $TRY_EXPOSED == 0 ]]; then verdict="nothing reported in $RUNS runs"; else verdict="**REPORTED in run $r**"; fi
		load_stop
		row+=" $within2/$TRIES | $exposed/$TRIES | $median | $slowdown |"
		fixedrow+=" $verdict |"
	done
	rows+=("$row $race | $plain |")
	fixedrows+=("$fixedrow")
done

modehdr="" modesep="" fixedhdr="" fixedsep=""
for mode in $MODES; do
	modehdr+=" $mode: exposed within 2 runs | $mode: tries exposed | $mode: median runs to expose | $mode: slowdown vs one plain run |"
	modesep+="---|---|---|---|"
	fixedhdr+=" $mode |"
	fixedsep+="---|"
done

# Keep the field benchmark's section (written by `make field`).
field=""
[[ -f $OUT ]] && field=$(sed -n '/^<!-- field:begin/,/^<!-- field:end -->/p' "$OUT")
# Keep the ablation section (Table 6.4, written by bench/scripts/ablate.sh runs).
ablation=""
[[ -f $OUT ]] && ablation=$(sed -n '/^<!-- ablation:begin/,/^<!-- ablation:end -->/p' "$OUT")
{
	cat <<HDR
# wafl on the MEMORDER corpus

Generated by \`bench/scripts/eval.sh\` on $(date -u +%Y-%m-%d): $(nproc) CPUs
($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')), $(go version).
wafl: \`$("$WAFL" version 2>/dev/null || echo unknown)\` ($wafl_from).

Each bug gets $TRIES independent tries; a try is a fresh \`wafl prepare\` followed
by up to $RUNS \`wafl detect --runs 1\` calls sharing the plan, stopped at the
first report. *Runs to expose* counts detection runs (the preparation run is
not counted) and is the median over exposing tries; *exposed within 2 runs*
counts tries exposed by the preparation run and the first detection run. *Slowdown* is the mean
time an exposing try spent running tests (the preparation run and the
detection runs, as reported on wafl's \`time:\` line; instrumented builds
excluded) over the wall time of one plain run of the test binary (measured
at rest). *Plain exposes?* runs the uninstrumented test $PLAIN times.

Modes: *rest* is the machine as it is; *load* runs the same tries while
$LOADPROCS busy processes (a shell loop each) keep all $(nproc) cores busy, as
on a shared CI runner (load average about $LOADPROCS).

| bug |$modehdr race detector | $PLAIN plain runs expose? |
|---|${modesep}---|---|
HDR
	printf '%s\n' "${rows[@]}"
	cat <<HDR

## Fixed twins (false positives)

| package |$fixedhdr
|---|$fixedsep
HDR
	printf '%s\n' "${fixedrows[@]}"
	if [[ -n $ablation ]]; then printf '\n%s\n' "$ablation"; fi
	if [[ -n $field ]]; then printf '\n%s\n' "$field"; fi
} >"$OUT"
echo "wrote $OUT" >&2
