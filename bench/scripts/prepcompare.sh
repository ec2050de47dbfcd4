#!/usr/bin/env bash
# prepcompare.sh — show that preparing the tests of a package in one
# process (the default) gives the plans of preparing each test alone
# (--per-test): it prepares a module both ways, in separate work
# directories, and compares every test's candidate pairs
# (bench/plancmp). Preparation is timing-dependent (near-miss windows),
# so it first prepares --per-test twice: the difference between those two
# is the noise the comparison is judged against.
#
# Usage: bench/scripts/prepcompare.sh MODULE_DIR [packages...]   (default ./...)
# Environment: WAFL (wafl binary; default built from this checkout),
#   OUT (directory for the work directories; default a temporary one, kept),
#   NOISE=0 to skip the second --per-test preparation.
# Prints wall and CPU seconds of each preparation and the comparisons.
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
[[ $# -ge 1 ]] || { echo "usage: $0 MODULE_DIR [packages...]" >&2; exit 2; }
mod=$(cd "$1" && pwd); shift
pkgs=("$@"); [[ ${#pkgs[@]} -gt 0 ]] || pkgs=(./...)
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/wafl-prepcompare.XXXXXX")}
mkdir -p "$OUT"
if [[ -z ${WAFL:-} ]]; then
	WAFL=$OUT/wafl
	(cd "$root" && go build -o "$WAFL" ./cmd/wafl) || { echo "prepcompare.sh: building cmd/wafl failed" >&2; exit 2; }
fi
(cd "$root/bench" && go build -o "$OUT/plancmp" ./plancmp) || exit 2

prep() { # name, extra flags...
	local name=$1; shift
	rm -rf "$OUT/$name"
	(cd "$mod" && /usr/bin/time -f "%e %U %S" -o "$OUT/$name.time" \
		"$WAFL" prepare --dir "$OUT/$name" "$@" "${pkgs[@]}" >"$OUT/$name.out" 2>&1)
	read -r wall u s <"$OUT/$name.time"
	printf '%-10s wall %6.2fs cpu %6.2fs  %s\n' "$name" "$wall" "$(echo "$u + $s" | bc)" "$(grep -E '^tests: ' "$OUT/$name.out" | head -1)"
}

prep pertest --per-test
[[ ${NOISE:-1} == 0 ]] || prep pertest2 --per-test
prep package
if [[ ${NOISE:-1} != 0 ]]; then
	echo "== noise: --per-test vs --per-test"
	"$OUT/plancmp" -v "$OUT/pertest" "$OUT/pertest2"
fi
echo "== --per-test vs package run"
"$OUT/plancmp" -v "$OUT/pertest" "$OUT/package"
rc=$?
echo "work directories in $OUT"
exit $rc
