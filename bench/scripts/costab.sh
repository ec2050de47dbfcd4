#!/usr/bin/env bash
# costab.sh — two wafl binaries side by side on one module, as the hunt
# runs them: go test -count=1, go test -race -count=1, and for each wafl
# `prepare` then `detect --runs RUNS --seed 1` in a work directory emptied
# before each round (the same path every round, as the hunt's), all in the
# module's directory. One untimed warm-up round first; then ROUNDS rounds,
# the two wafls' order alternating between rounds. Each command is timed
# by /usr/bin/time (wall, user + system CPU of it and its children), with
# the 1-minute load average before it.
#
# Usage: bench/scripts/costab.sh MODULE_DIR NAME_A WAFL_A NAME_B WAFL_B [wafl and go test flags...]
# Environment: ROUNDS (3), RUNS (3), OUT (directory for the TSV and the
# outputs; default a temporary directory), WARMUP (1; 0 skips it).
# Output: OUT/times.tsv (round, command, wall s, CPU s, exit, load) and a
# summary of medians and ratios on stdout.
set -euo pipefail
dir=$1 na=$2 wa=$3 nb=$4 wb=$5
shift 5
flags=("$@")
ROUNDS=${ROUNDS:-3}
RUNS=${RUNS:-3}
WARMUP=${WARMUP:-1}
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/costab.XXXXXX")}
mkdir -p "$OUT"
tsv=$OUT/times.tsv
: >"$tsv"
timed() { # round name cmd...
	local round=$1 name=$2
	shift 2
	local load st=0
	load=$(cut -d' ' -f1 /proc/loadavg)
	(cd "$dir" && /usr/bin/time -o "$OUT/t" -f '%e %U %S' "$@" >"$OUT/$name.$round.out" 2>&1) || st=$?
	read -r wall user sys < <(tail -n 1 "$OUT/t")
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$name" "$wall" "$(echo "$user + $sys" | bc)" "$st" "$load" >>"$tsv"
	printf '  round %s %-16s %7.2f s wall %7.2f s CPU exit %s load %s\n' "$round" "$name" "$wall" "$(echo "$user + $sys" | bc)" "$st" "$load" >&2
}
gotestflags=()
for ((i = 0; i < ${#flags[@]}; i++)); do
	case ${flags[i]} in
	--skip) gotestflags+=(-skip "${flags[i + 1]}"); i=$((i + 1)) ;;
	--short) gotestflags+=(-short) ;;
	esac
done
wafl_pair() { # round name binary
	local round=$1 name=$2 bin=$3 work=$OUT/work-$2
	rm -rf "$work"
	timed "$round" "$name-prepare" "$bin" prepare --dir "$work" --timeout 3m "${flags[@]}" ./...
	timed "$round" "$name-detect" "$bin" detect --dir "$work" --timeout 3m --runs "$RUNS" --seed 1 "${flags[@]}" ./...
}
first=1
((WARMUP)) && first=0
for r in $(seq "$first" "$ROUNDS"); do
	timed "$r" plain go test -count=1 "${gotestflags[@]}" ./...
	timed "$r" race go test -race -count=1 "${gotestflags[@]}" ./...
	if ((r % 2)); then
		wafl_pair "$r" "$na" "$wa"
		wafl_pair "$r" "$nb" "$wb"
	else
		wafl_pair "$r" "$nb" "$wb"
		wafl_pair "$r" "$na" "$wa"
	fi
done
python3 - "$tsv" "$na" "$nb" <<'PY'
import sys, statistics, collections
tsv, na, nb = sys.argv[1:4]
rows = collections.defaultdict(list)
loads = []
for line in open(tsv):
    r, name, wall, cpu, st, load = line.split('\t')
    if r == '0':
        continue
    rows[name].append((float(wall), float(cpu), st))
    loads.append(float(load))
med = {k: (statistics.median(w for w, _, _ in v), statistics.median(c for _, c, _ in v)) for k, v in rows.items()}
print(f"rounds: {len(rows['plain'])}, 1-min load before the commands: {min(loads):.2f}–{max(loads):.2f}")
print("| command | wall s (median) | CPU s (median) | rounds' walls | exits |")
print("|---|--:|--:|---|---|")
for k in ['plain', 'race', f'{na}-prepare', f'{na}-detect', f'{nb}-prepare', f'{nb}-detect']:
    v = rows[k]
    print(f"| {k} | {med[k][0]:.2f} | {med[k][1]:.2f} | {' '.join(f'{w:.1f}' for w, _, _ in v)} | {' '.join(s.strip() for _, _, s in v)} |")
for n in (na, nb):
    # per round sums, then the median of the per-round ratios to race
    ws, cs = [], []
    for i in range(len(rows['race'])):
        pw = rows[f'{n}-prepare'][i][0] + rows[f'{n}-detect'][i][0]
        pc = rows[f'{n}-prepare'][i][1] + rows[f'{n}-detect'][i][1]
        ws.append(pw / rows['race'][i][0]); cs.append(pc / rows['race'][i][1])
    print(f"{n}: (prepare+detect) ÷ race, median of rounds: wall {statistics.median(ws):.2f}, CPU {statistics.median(cs):.2f}; per round wall {' '.join(f'{x:.2f}' for x in ws)}")
PY
