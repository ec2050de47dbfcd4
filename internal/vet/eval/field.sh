#!/usr/bin/env bash
# field.sh — `wafl vet` on the buggy versions of the field bugs
# (bench/scripts/field/*.field): one row per module, version and package
# (bugs that share them share the row), through modules.sh. The hints go to
# $OUT/<name>.txt; whether one of them is the field bug's racing pair is
# read by hand against the .field file's summary (docs/vet.md).
#
#   internal/vet/eval/field.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
list=$(mktemp)
trap 'rm -f "$list"' EXIT
declare -A seen
for f in "$root"/bench/scripts/field/*.field; do
	name=$(basename "$f" .field)
	mod=$(sed -n 's/^module:[[:space:]]*//p' "$f")
	ver=$(sed -n 's/^version:[[:space:]]*//p' "$f")
	pkg=$(sed -n 's/^package:[[:space:]]*//p' "$f")
	k="$mod@$ver $pkg"
	if [[ -n ${seen[$k]:-} ]]; then continue; fi
	seen[$k]=1
	printf '%s\t%s\t%s\t%s\n' "$name" "$mod" "$ver" "$pkg" >>"$list"
done
# Some field versions are unknown to the checksum database (centrifuge-go).
GONOSUMDB=${GONOSUMDB:-github.com/centrifugal/centrifuge-go} MODULES=$list "$here/modules.sh"
