#!/usr/bin/env bash
# plainrate.sh — measure the MEMORDER corpus under plain (uninstrumented) runs.
#
# For every bug package listed in bench/scripts/corpus.tsv (and its fixed twin):
#   * build the test binary once with `go test -c`,
#   * run it in N separate processes (PAR at a time) and count failures,
#   * run `go test -race -count=1` and record whether the race detector
#     reported a data race,
# then write docs/corpus.md.
#
# Usage: bench/scripts/plainrate.sh [N]        (N defaults to 200; PAR=2)
# Environment: N, PAR, OUT (default docs/corpus.md), KEEP=1 keeps the work dir.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
examples=$root/examples
N=${1:-${N:-200}}
PAR=${PAR:-2}
OUT=${OUT:-$root/docs/corpus.md}
work=$(mktemp -d "${TMPDIR:-/tmp}/wafl-plainrate.XXXXXX")
if [[ ${KEEP:-0} != 1 ]]; then trap 'rm -rf "$work"' EXIT; fi

die() { echo "plainrate.sh: $*" >&2; exit 2; }
[[ -f $root/bench/scripts/corpus.tsv ]] || die "missing $root/bench/scripts/corpus.tsv"
[[ -f $examples/go.mod ]] || die "missing $examples/go.mod"

# runs BIN N times, PAR at a time; prints the number of failing processes.
plain_failures() {
	local bin=$1 log=$2
	: >"$log"
	seq "$N" | xargs -P "$PAR" -I{} sh -c '"$1" -test.count=1 >/dev/null 2>&1 || echo "run {} failed" >>"$2"' _ "$bin" "$log"
	wc -l <"$log" | tr -d ' '
}

# prints yes if `go test -race` reports a data race, no otherwise.
race_reported() {
	local pkg=$1 log=$2
	(cd "$examples" && go test -race -count=1 "./$pkg" >"$log" 2>&1) || true
	if grep -q "WARNING: DATA RACE" "$log"; then echo yes; else echo no; fi
}

rows=()
while IFS=$'\t' read -r name link pattern kind ordered fidelity; do
	[[ -z $name || $name == \#* ]] && continue
	[[ -d $examples/$name && -d $examples/$name/fixed ]] || die "examples/$name or its fixed/ twin is missing"
	echo "== $name" >&2
	(cd "$examples" && go test -c -o "$work/$name.test" "./$name") || die "building examples/$name failed"
	(cd "$examples" && go test -c -o "$work/$name.fixed.test" "./$name/fixed") || die "building examples/$name/fixed failed"
	bug_fail=$(plain_failures "$work/$name.test" "$work/$name.fail")
	fixed_fail=$(plain_failures "$work/$name.fixed.test" "$work/$name.fixed.fail")
	race=$(race_reported "$name" "$work/$name.race")
	fixed_race=$(race_reported "$name/fixed" "$work/$name.fixed.race")
	if [[ $fixed_fail == 0 ]]; then fixed_ok="yes (0/$N)"; else fixed_ok="NO ($fixed_fail/$N)"; fi
	echo "   plain failures $bug_fail/$N, race: $race; fixed: failures $fixed_fail/$N, race: $fixed_race" >&2
	rows+=("| \`$name\` | $link | $fidelity | $pattern | $kind | $bug_fail/$N | $race | $ordered | $fixed_ok | $fixed_race |")
done <"$root/bench/scripts/corpus.tsv"

echo "== delaycheck.sh" >&2
set +e
delaycheck=$(TRIES=${DELAY_TRIES:-10} "$root/bench/scripts/delaycheck.sh" 2>&1)
delaycheck_rc=$?
set -e
echo "$delaycheck" >&2

goversion=$(go version)
cpus=$(nproc 2>/dev/null || echo "?")
model=$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//' || true)
{
	cat <<HDR
# The wafl MEMORDER bug corpus

\`examples/\` is a separate Go module (\`github.com/memorder/wafl/examples\`, no
dependencies) playing a user module that has never heard of wafl. Each package
reproduces the pattern of a real, fixed MEMORDER bug of a well-known Go project
(the package doc names the project and the issue/PR and explains the race);
\`<name>/fixed/\` is the same code and test with the bug fixed the way the
project fixed it. The code is written from the bug descriptions, simplified to
the racing accesses; it is not copied from the projects.

Every bug is built so that, in a plain run, the racing pair executes about 8 ms
apart in the safe order (the victim waits on a timer, a sleep or an API
round trip), and the test crashes with a real panic when the goroutine of the
first access is delayed by 1.25× that gap — what \`wafl detect\` does.

Measured by \`bench/scripts/plainrate.sh $N\` (each test binary built once with
\`go test -c\`, run in $N separate processes, $PAR in parallel; \`go test -race
-count=1\` once per package). Machine: $cpus CPUs${model:+ ($model)}, $goversion,
$(date -u +%Y-%m-%d).

Columns: *fidelity* — "follows the issue/PR/thesis" when the racing code path
follows the published description, "pattern" when the project is named for the
pattern and the surrounding code is a reconstruction; *plain failures* — failing processes out of $N plain runs of the buggy
package (must stay below 1%); *race* — whether \`go test -race\` reports a data
race on the buggy package; *ordered by* — what orders the two accesses in plain
runs (when it is a mutex, channel or atomic, the race detector is silent);
*fixed twin passes* — failing plain runs of the fixed twin; *fixed race* —
race detector on the fixed twin.

| bug | project / issue | fidelity | pattern | kind | plain failures | race | ordered by | fixed twin passes | fixed race |
|---|---|---|---|---|---|---|---|---|---|
HDR
	printf '%s\n' "${rows[@]}"
	cat <<FTR

## Delay check (without wafl)

\`bench/scripts/delaycheck.sh\` inserts \`time.Sleep(${DELAY:-10ms})\` (≈ 1.25 × the 8 ms gap) right
before the delayed access of each bug, and at the same place in its fixed twin,
and runs each test ${DELAY_TRIES:-10} times (exit status $delaycheck_rc):

\`\`\`
$delaycheck
\`\`\`

## Reproducing a bug with wafl

\`\`\`
bench/scripts/repro.sh <name>      # wafl prepare + wafl detect --json on examples/<name>
bench/scripts/eval.sh              # the whole evaluation -> docs/evaluation.md
\`\`\`

## Notes

- \`appinsights\` and \`netmq\` are the thesis's two interference scenarios
  (§4.4, Fig. 4.2a/b): a detector that delays every candidate location for the
  same time cancels its own delays; WAFL's interference sets avoid that.
- In every bug the delayed access (the init of a use-before-init pair, the use
  of a use-after-dispose pair) is outside any critical section that the other
  goroutine needs, so the injected delay does not stall the other goroutine.
- \`quicclose\` exposes a double close through an init→use pair: delaying the
  run loop's store of the close state lets the application's CloseWithError
  see no close state and close the channel first.
FTR
} >"$OUT"
echo "wrote $OUT" >&2
