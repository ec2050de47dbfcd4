#!/usr/bin/env bash
# overhead.sh — what wafl costs next to `go test`, measured side by side.
#
# For each public module below, at a pinned version fetched through the Go
# module proxy (`go mod download`, copied out of the module cache into a
# scratch directory, never touching the cache), it times in alternating
# rounds, one command after the other in the same round:
#
#   go test -count=1 ./...          (the reference: ratios are to it)
#   go test -race -count=1 ./...
#   wafl prepare ./...
#   wafl detect --runs 1 ./...
#
# with /usr/bin/time (wall, user+system CPU of the command and its children,
# max RSS), after one untimed warm-up round (build caches warm). It writes
# medians, min–max spread and ratios to $OUT with the command line, machine,
# date, load average and the wafl commit. When hyperfine is installed,
# HYPERFINE=1 adds its statistics for the same commands (run after the
# rounds, command by command, so its numbers are not side by side).
#
# Usage: bench/scripts/overhead.sh [module@version ...]
# Environment:
#   ROUNDS (3)   timed rounds per module
#   WAFL         wafl binary to measure (default: built from this checkout)
#   WAFL_BASE    a second wafl binary (say, of main) measured in the same
#                rounds, as "prepare (base)" and "detect (base)"
#   WAFL_COMMIT, WAFL_BASE_COMMIT  what the report calls them
#   OUT          report (default docs/benchmarks-overhead.md; "-" = stdout)
#   LABEL        a word for the report's title line (e.g. before, after)
#   KEEP=1       keep the scratch directory
#   HYPERFINE=1  also run hyperfine (if installed)
#   WARMUP=build the untimed warm-up only builds (go test -run '^$', the
#                same with -race, wafl instrument into each work directory)
#                instead of running every command once; WARMUP=0: none
#   TIMES=DIR    keep the raw measurements (times, ntests) in DIR; with
#   FROM=DIR     only write the report from the measurements kept in DIR
# Exit status: 0 when every measurement ran (a failing test run is noted in
# the report, not fatal), 2 on a setup error.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
ROUNDS=${ROUNDS:-3}
OUT=${OUT:-$root/docs/benchmarks-overhead.md}
LABEL=${LABEL:-}
work=$(mktemp -d "${TMPDIR:-/tmp}/wafl-overhead.XXXXXX")
if [[ ${KEEP:-0} != 1 ]]; then trap 'rm -rf "$work"' EXIT; fi

die() { echo "overhead.sh: $*" >&2; exit 2; }
# shellcheck source=bench/scripts/fetchmod.sh
source "$(dirname "$0")/fetchmod.sh"
[[ -x /usr/bin/time ]] || die "/usr/bin/time is required (Debian package: time)"
command -v go >/dev/null || die "go is not on PATH"

modules=("$@")
if ((${#modules[@]} == 0)); then
	modules=(
		golang.org/x/sync@v0.25.0
		github.com/sourcegraph/conc@v0.3.0
		go.uber.org/zap@v1.28.0
		github.com/hashicorp/yamux@v0.1.2
		github.com/panjf2000/ants/v2@v2.12.1
	)
fi

WAFL=${WAFL:-}
if [[ -z $WAFL ]]; then
	WAFL=$work/wafl
	(cd "$root" && go build -o "$WAFL" ./cmd/wafl) || die "building wafl failed"
fi
[[ -x $WAFL ]] || die "WAFL=$WAFL is not executable"
WAFL=$(realpath "$WAFL") # the commands run in the module's directory
commit=${WAFL_COMMIT:-$(cd "$root" && git describe --always --dirty 2>/dev/null || echo unknown)}
WAFL_BASE=${WAFL_BASE:-}
[[ -z $WAFL_BASE || -x $WAFL_BASE ]] || die "WAFL_BASE=$WAFL_BASE is not executable"
[[ -z $WAFL_BASE ]] || WAFL_BASE=$(realpath "$WAFL_BASE")
base_commit=${WAFL_BASE_COMMIT:-unknown}
args="$*"

# fetch MOD@VER N: copies the module's source into $work/src/N and prints the dir.
fetch() { fetch_module "$1" "$work/src/$2"; }

# measure NAME DIR ROUND CMD...: one timed run; appends "module kind round
# wall cpu rss status" to $data/times.
measure() {
	local mod=$1 kind=$2 dir=$3 round=$4
	shift 4
	local tf=$work/time.$$ st=0
	(cd "$dir" && /usr/bin/time -o "$tf" -f '%e %U %S %M' "$@" >"$work/log.$kind" 2>&1) || st=$?
	# With a non-zero exit, time writes "Command exited with non-zero status N" first.
	read -r wall user sys rss < <(tail -n 1 "$tf")
	echo "$mod $kind $round $wall $(echo "$user + $sys" | bc) $rss $st" >>"$data/times"
	printf '  %-8s round %s: %6.2f s wall %6.2f s CPU (exit %s)\n' "$kind" "$round" "$wall" "$(echo "$user + $sys" | bc)" "$st" >&2
}

kinds=(gotest race prepare detect)
if [[ -n $WAFL_BASE ]]; then kinds+=(prepare0 detect0); fi
cmdline() {
	case $1 in
	gotest) echo "go test -count=1 ./..." ;;
	race) echo "go test -race -count=1 ./..." ;;
	prepare) echo "$WAFL prepare --dir $work/wafl-$2 ./..." ;;
	detect) echo "$WAFL detect --runs 1 --seed 1 --dir $work/wafl-$2 ./..." ;;
	prepare0) echo "$WAFL_BASE prepare --dir $work/wafl0-$2 ./..." ;;
	detect0) echo "$WAFL_BASE detect --runs 1 --seed 1 --dir $work/wafl0-$2 ./..." ;;
	esac
}

data=${FROM:-${TIMES:-$work}}
mkdir -p "$data"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
start=$(date -u '+%Y-%m-%d %H:%M UTC')
if [[ -n ${FROM:-} ]]; then
	[[ -f $FROM/times ]] || die "FROM=$FROM has no times file"
	modules=()
	start="$(cat "$FROM/start" 2>/dev/null || echo "$start")"
	load0="$(cat "$FROM/load0" 2>/dev/null || echo "$load0")"
else
	: >"$data/times"
	: >"$data/ntests"
	echo "$start" >"$data/start"
	echo "$load0" >"$data/load0"
fi
i=0
for mv in "${modules[@]}"; do
	i=$((i + 1))
	dir=$(fetch "$mv" "$i")
	ntests=$(cd "$dir" && go test -list . ./... 2>/dev/null | grep -c '^Test' || true)
	echo "$mv $ntests" >>"$data/ntests"
	case ${WARMUP:-1} in
	1)
		echo "$mv: warm-up" >&2
		for k in "${kinds[@]}"; do
			# shellcheck disable=SC2046
			(cd "$dir" && $(cmdline "$k" "$i") >/dev/null 2>&1) || true
		done
		;;
	build)
		# Builds only: the go test binaries (no test runs) and the
		# instrumented ones of each wafl's work directory.
		echo "$mv: warm-up (builds only)" >&2
		(cd "$dir" && go test -count=1 -run '^$' ./... >/dev/null 2>&1) || true
		(cd "$dir" && go test -race -count=1 -run '^$' ./... >/dev/null 2>&1) || true
		(cd "$dir" && $WAFL instrument --dir "$work/wafl-$i" ./... >/dev/null 2>&1) || true
		if [[ -n $WAFL_BASE ]]; then
			(cd "$dir" && $WAFL_BASE instrument --dir "$work/wafl0-$i" ./... >/dev/null 2>&1) || true
		fi
		;;
	esac
	for r in $(seq "$ROUNDS"); do
		for k in "${kinds[@]}"; do
			# shellcheck disable=SC2046
			measure "$mv" "$k" "$dir" "$r" $(cmdline "$k" "$i")
		done
	done
	if [[ ${HYPERFINE:-0} == 1 ]] && command -v hyperfine >/dev/null; then
		(cd "$dir" && hyperfine --style none --runs "$ROUNDS" -i --export-markdown "$work/hf-$i.md" \
			-n "go test" "$(cmdline gotest "$i")" -n "go test -race" "$(cmdline race "$i")" \
			-n "wafl prepare" "$(cmdline prepare "$i")" -n "wafl detect" "$(cmdline detect "$i")" >/dev/null 2>&1) || true
	fi
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)

report() {
	echo "# Overhead of wafl next to go test${LABEL:+ ($LABEL)}"
	echo
	echo "Written by \`bench/scripts/overhead.sh\` (ROUNDS=$ROUNDS). wafl commit $commit, $start."
	if [[ -n $WAFL_BASE ]]; then
		echo "The rows marked (base) are wafl at $base_commit, measured in the same rounds."
	fi
	echo "Machine: $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1),"
	echo "$(awk '/MemTotal/ {printf "%.0f GiB RAM", $2/1048576}' /proc/meminfo), $(go version | cut -d' ' -f3-4)."
	echo "Load average (1, 5, 15 min) at the start: $load0; at the end: $load1."
	echo
	echo "Each round runs the four commands one after the other in the module's"
	echo "directory (warm build caches, one untimed warm-up round first), timed by"
	echo "\`/usr/bin/time\`: wall seconds and CPU seconds (user + system, children"
	echo "included). Cells: median (min–max) over the rounds, and the median's ratio"
	echo "to plain \`go test -count=1 ./...\` of the same module. \`detect\` runs with"
	echo "\`--runs 1 --seed 1\` on the plans the \`prepare\` of the same round wrote."
	echo
	python3 - "$data/times" "$data/ntests" <<'EOF'
import sys, statistics
times, ntests = sys.argv[1], sys.argv[2]
rows = {}
order = []
for line in open(times):
    mod, kind, r, wall, cpu, rss, st = line.split()
    if mod not in rows:
        rows[mod] = {}
        order.append(mod)
    rows[mod].setdefault(kind, []).append((float(wall), float(cpu), int(rss), int(st)))
nt = dict(l.split() for l in open(ntests))
names = {"gotest": "go test", "race": "go test -race", "prepare": "wafl prepare", "detect": "wafl detect --runs 1",
         "prepare0": "wafl prepare (base)", "detect0": "wafl detect --runs 1 (base)"}
def cell(v, ref):
    med = statistics.median(v)
    return "%.2f (%.2f–%.2f) ×%.2f" % (med, min(v), max(v), med / ref if ref else float("nan"))
print("| module (tests) | command | wall s | CPU s | max RSS MiB | exit |")
print("|---|---|---|---|---|---|")
for mod in order:
    ref = rows[mod]["gotest"]
    rw = statistics.median(x[0] for x in ref)
    rc = statistics.median(x[1] for x in ref)
    for kind in ("gotest", "race", "prepare0", "prepare", "detect0", "detect"):
        v = rows[mod].get(kind, [])
        if not v:
            continue
        exits = sorted(set(x[3] for x in v))
        print("| %s (%s) | %s | %s | %s | %d | %s |" % (mod, nt.get(mod, "?"), names[kind],
              cell([x[0] for x in v], rw), cell([x[1] for x in v], rc),
              max(x[2] for x in v) // 1024, ",".join(map(str, exits))))
print()
print("Ratios to `go test` (medians), the issue's goals in brackets:")
print()
print("| module | prepare wall [≤1.10] | prepare CPU [≤1.3] | detect wall [≤1.0] | detect CPU | race wall | race CPU |")
print("|---|---|---|---|---|---|---|")
for mod in order:
    m = rows[mod]
    med = lambda k, i: statistics.median(x[i] for x in m[k])
    rw, rc = med("gotest", 0), med("gotest", 1)
    for p, d, tag in (("prepare0", "detect0", " (base)"), ("prepare", "detect", "")):
        if not all(k in m for k in (p, d, "race")):
            continue
        print("| %s%s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |" % (mod, tag,
              med(p, 0) / rw, med(p, 1) / rc, med(d, 0) / rw, med(d, 1) / rc,
              med("race", 0) / rw, med("race", 1) / rc))
EOF
	for f in "$work"/hf-*.md; do
		[[ -f $f ]] || continue
		echo
		echo "hyperfine (command by command, not alternating):"
		echo
		cat "$f"
	done
	echo
	echo "Exit statuses: \`wafl detect\` exits 1 when it found a bug; \`go test\` exits"
	echo "1 when a test failed. Command: \`ROUNDS=$ROUNDS bench/scripts/overhead.sh $args\`."
}

# The report replaces $OUT up to the marker line; what follows the marker
# (notes written by hand) is kept. markerre finds the marker whatever path
# of this script it names.
marker='<!-- end of the part written by bench/scripts/overhead.sh -->'
markerre='^<!-- end of the part written by [^ ]*overhead\.sh -->$'
if [[ $OUT == - ]]; then
	report
else
	notes=$work/notes
	: >"$notes"
	if [[ -f $OUT ]] && grep -q -- "$markerre" "$OUT"; then
		sed -n "/$markerre/,\$p" "$OUT" | tail -n +2 >"$notes"
	fi
	{
		report
		echo
		echo "$marker"
		cat "$notes"
	} >"$OUT.tmp"
	mv "$OUT.tmp" "$OUT"
	echo "overhead.sh: wrote $OUT" >&2
fi
