#!/usr/bin/env bash
# ablate.sh — the thesis's Table 6.4 on the corpus: for each bug and each
# ablation mode, TRIES (default 5) tries of a fresh `wafl prepare` and up to
# RUNS (default 5) `wafl detect --runs 1` calls; reports how many tries
# exposed the bug, the median detection runs to expose it (0: the
# preparation run crashed with it) and the mean delays injected per try.
#
# Modes (ABLATIONS, default "full fixed-delay parent-child basic"):
#   full          wafl as it is;
#   fixed-delay   every delay 100 ms instead of the learned length;
#   parent-child  no pruning of pairs that fork edges order;
#   basic         WAFLBASIC (thesis §3, Table 6.4 "no preparation run"):
#                 prepare runs nothing, detection runs find near misses
#                 online and delay them (docs/algorithm.md, "Basic mode").
#                 Its median runs count every test run; full's exclude the
#                 preparation run. A mode may combine parts with commas
#                 (basic,fixed-delay,parent-child is pure WAFLBASIC).
#
# Usage: bench/scripts/ablate.sh [name...]   (default: every bug of bench/scripts/corpus.tsv)
# Environment: WAFL (default: built from this tree), TRIES, RUNS, ABLATIONS,
#   OUT (markdown table; default stdout).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
examples=$root/examples
TRIES=${TRIES:-5}
RUNS=${RUNS:-5}
ABLATIONS=${ABLATIONS:-full fixed-delay parent-child basic}
work=$(mktemp -d "${TMPDIR:-/tmp}/wafl-ablate.XXXXXX")
trap 'rm -rf "$work"' EXIT
# shellcheck source=bench/scripts/workdir.sh
source "$root/bench/scripts/workdir.sh"
die() { echo "ablate.sh: $*" >&2; exit 2; }
if [[ -z ${WAFL:-} ]]; then
	WAFL=$work/wafl
	(cd "$root" && go build -o "$WAFL" ./cmd/wafl) || die "building cmd/wafl failed"
fi
names=("$@")
if [[ ${#names[@]} -eq 0 ]]; then
	while IFS=$'\t' read -r name _; do
		[[ -z $name || $name == \#* ]] && continue
		names+=("$name")
	done <"$root/bench/scripts/corpus.tsv"
fi

# delays LOG: the "N delays injected" count of a detect log (0 if none).
delays() { sed -n 's/.* \([0-9][0-9]*\) delays* injected.*/\1/p' "$1" | tail -1 | grep . || echo 0; }

hdr="| bug |" sep="|---|"
for m in $ABLATIONS; do
	hdr+=" $m: exposed | $m: median runs | $m: delays/try |"
	sep+="---|---|---|"
done
rows=()
for name in "${names[@]}"; do
	row="| \`$name\` |"
	for m in $ABLATIONS; do
		abl=()
		[[ $m != full ]] && abl=(--ablate "$m")
		exposed=0 runs=() dsum=0
		for ((try = 1; try <= TRIES; try++)); do
			d0=$dsum
			dir=$work/$name.$m
			reset_workdir "$dir"
			set +e
			(cd "$examples" && "$WAFL" prepare --dir "$dir" "${abl[@]}" "./$name" >"$dir.prep.log" 2>&1)
			rc=$?
			set -e
			r=-1
			case $rc in
			0) ;;
			1) r=0 ;;
			*) die "prepare ./$name ($m) failed, see $dir.prep.log" ;;
			esac
			for ((run = 1; r < 0 && run <= RUNS; run++)); do
				set +e
				(cd "$examples" && "$WAFL" detect --runs 1 --dir "$dir" "${abl[@]}" "./$name" >"$dir.$run.log" 2>&1)
				rc=$?
				set -e
				dsum=$((dsum + $(delays "$dir.$run.log")))
				case $rc in
				0) ;;
				1) r=$run ;;
				*) die "detect ./$name ($m) failed, see $dir.$run.log" ;;
				esac
			done
			echo "$name $m try $try: runs=$r delays=$((dsum - d0)) load=$(cut -d' ' -f1 /proc/loadavg)" >&2
			if ((r >= 0)); then
				exposed=$((exposed + 1))
				runs+=("$r")
			fi
		done
		median=$(python3 -c 'import statistics,sys; v=[int(x) for x in sys.argv[1:]]; print(statistics.median(v) if v else "-")' "${runs[@]+"${runs[@]}"}")
		row+=" $exposed/$TRIES | $median | $(python3 -c "print('%.1f' % ($dsum / $TRIES))") |"
	done
	rows+=("$row")
done
{
	echo "$hdr"
	echo "$sep"
	printf '%s\n' "${rows[@]}"
} >"${OUT:-/dev/stdout}"
