#!/usr/bin/env bash
# corpus.sh — reproduce every corpus bug with wafl (bench/scripts/repro.sh) and
# check that no fixed twin is reported.
#
# Usage: bench/scripts/corpus.sh [name...]   (default: every bug in bench/scripts/corpus.tsv)
# Environment: WAFL (wafl binary; default builds cmd/wafl of this checkout), RUNS (detection
#   runs per bug, default 3).
# Exit status: 0 when every bug was reported and no twin was, 1 otherwise.
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
RUNS=${RUNS:-3}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/wafl-corpus.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if [[ -z ${WAFL:-} ]]; then
	WAFL=$tmp/wafl
	(cd "$root" && go build -o "$WAFL" ./cmd/wafl) || { echo "corpus.sh: building cmd/wafl failed" >&2; exit 2; }
fi
export WAFL

if [[ $# -gt 0 ]]; then
	names=("$@")
else
	mapfile -t names < <(awk -F'\t' 'NR > 1 && $1 != "" && $1 !~ /^#/ {print $1}' "$root/bench/scripts/corpus.tsv")
fi

bad=0
printf '%-14s %-10s %s\n' bug bug-found fixed-twin
for name in "${names[@]}"; do
	DIR=$tmp/$name "$root/bench/scripts/repro.sh" "$name" --runs "$RUNS" >"$tmp/$name.out" 2>&1
	rc=$?
	case $rc in 1) bug=yes ;; 0) bug=NO; bad=1 ;; *) bug="error($rc)"; bad=1 ;; esac
	DIR=$tmp/$name-fixed "$root/bench/scripts/repro.sh" "$name/fixed" --runs "$RUNS" >"$tmp/$name-fixed.out" 2>&1
	rc=$?
	case $rc in 0) twin=clean ;; 1) twin=REPORTED; bad=1 ;; *) twin="error($rc)"; bad=1 ;; esac
	printf '%-14s %-10s %s\n' "$name" "$bug" "$twin"
	if [[ $bug != yes || $twin != clean ]]; then
		sed 's/^/    /' "$tmp/$name.out" | tail -20
	fi
done
exit $bad
