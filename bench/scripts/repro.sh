#!/usr/bin/env bash
# repro.sh — reproduce one corpus bug with wafl.
#
# Usage: bench/scripts/repro.sh <name> [extra wafl detect flags...]
#   Runs, in examples/:  wafl prepare ./<name>
#                        wafl detect --json ./<name> [flags]
#   and prints the report. Exit status is wafl detect's: 0 no bug, 1 bug(s)
#   reported, 2 error.
# Environment:
#   WAFL   path of the wafl binary (default: cmd/wafl of this checkout, built into a temporary
#          directory that is removed on exit)
#   DIR    wafl work directory (default: a fresh temporary directory)
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
examples=$root/examples
[[ $# -ge 1 ]] || { echo "usage: $0 <name> [wafl detect flags]" >&2; exit 2; }
name=${1%/}; shift
[[ -d $examples/$name ]] || { echo "repro.sh: no package examples/$name" >&2; exit 2; }

if [[ -z ${WAFL:-} ]]; then
	bindir=$(mktemp -d "${TMPDIR:-/tmp}/wafl-bin.XXXXXX")
	trap 'rm -rf "$bindir"' EXIT
	WAFL=$bindir/wafl
	(cd "$root" && go build -o "$WAFL" ./cmd/wafl) || { echo "repro.sh: building cmd/wafl failed" >&2; exit 2; }
fi
dir=${DIR:-$(mktemp -d "${TMPDIR:-/tmp}/wafl-work.XXXXXX")}

cd "$examples"
echo "+ wafl prepare --dir $dir ./$name" >&2
"$WAFL" prepare --dir "$dir" "./$name" || { echo "repro.sh: wafl prepare failed" >&2; exit 2; }
echo "+ wafl detect --json --dir $dir ./$name $*" >&2
set +e
"$WAFL" detect --json --dir "$dir" "./$name" "$@" >"$dir/detect.json"
rc=$?
set -e
cat "$dir/detect.json"
case $rc in
0) echo "repro.sh: $name: no bug reported" >&2 ;;
1) echo "repro.sh: $name: bug reported (work dir $dir)" >&2 ;;
*) echo "repro.sh: $name: wafl detect failed with status $rc (work dir $dir)" >&2 ;;
esac
exit $rc
