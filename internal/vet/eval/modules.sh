#!/usr/bin/env bash
# modules.sh — `wafl vet` on the real modules of modules.tsv: copies each
# pinned version out of the module cache (go mod download; the cache is never
# written), runs `wafl vet --no-marks` on its packages, and prints one row per
# module: packages, non-test lines, hints by kind, wall seconds. Each module's
# hints go to $OUT/<name>.txt for reading.
#
#   internal/vet/eval/modules.sh [name ...]      # default: every module
#   MODULES=internal/vet/eval/outofsample.tsv internal/vet/eval/modules.sh
#
# MODULES (default modules.tsv next to this script) is the list to run.
# WORK (default a temp dir) holds the copies, OUT (default $WORK/out) the hints.
set -euo pipefail
# A go.work shipped in a module (sentry) names directories the zip lacks.
export GOWORK=off
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
WORK=${WORK:-$(mktemp -d)}
OUT=${OUT:-$WORK/out}
mkdir -p "$OUT"
wafl=$WORK/wafl
(cd "$root" && go build -o "$wafl" ./cmd/wafl)
want=" $* "
printf '| module | version | packages | lines | hints | use-before-init | use-after-dispose | check-then-act | waitgroup | wall s |\n'
printf '|---|---|---|---|---|---|---|---|---|---|\n'
while IFS=$'\t' read -r name mod ver pats <&3; do
	[[ -z $name ]] && continue
	if [[ $# -gt 0 && $want != *" $name "* ]]; then continue; fi
	dest=$WORK/src/$name
	if [[ ! -d $dest ]]; then
		dir=$(cd "$WORK" && GOFLAGS=-mod=mod go mod download -json "$mod@$ver" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
		mkdir -p "$(dirname "$dest")"
		cp -r "$dir" "$dest"
		chmod -R u+w "$dest"
		# A module from before modules (go-cache): name it as its path.
		[[ -f $dest/go.mod ]] || (cd "$dest" && go mod init "$mod" >/dev/null 2>&1 && go mod tidy >/dev/null 2>&1 || true)
		# Replacements by local directories point into the module's own
		# repository (otel's ../): the copy uses the required versions.
		drops=$(cd "$dest" && go mod edit -print | sed 's/^replace //' |
			awk '$0 ~ /=>/ { split($0, p, "=>"); n = split(p[1], l, " "); split(p[2], r, " ")
				if (r[1] ~ /^\.\.?\//) { old = l[1]; if (n > 1) old = old "@" l[2]; print "-dropreplace=" old } }')
		# shellcheck disable=SC2086
		[[ -z $drops ]] || (cd "$dest" && go mod edit $drops && go mod tidy >/dev/null 2>&1 || true)
		(cd "$dest" && go mod download >/dev/null 2>&1 || true)
	fi
	[[ $pats == - ]] && pats=./...
	start=$(date +%s.%N)
	# shellcheck disable=SC2086
	(cd "$dest" && "$wafl" vet --no-marks --json $pats >"$OUT/$name.json" 2>"$OUT/$name.err") || true
	end=$(date +%s.%N)
	# shellcheck disable=SC2086
	(cd "$dest" && "$wafl" vet --no-marks $pats >"$OUT/$name.txt" 2>/dev/null) || true
	# shellcheck disable=SC2086
	npkg=$(cd "$dest" && go list $pats 2>/dev/null | wc -l || true)
	# shellcheck disable=SC2086
	lines=$(cd "$dest" && go list -f '{{$d := .Dir}}{{range .GoFiles}}{{$d}}/{{.}}{{"\n"}}{{end}}' $pats 2>/dev/null | xargs -r cat 2>/dev/null | wc -l || true)
	count() { grep -c "\"kind\": \"$1\"" "$OUT/$name.json" || true; }
	total=$(grep -c '"kind"' "$OUT/$name.json" || true)
	wall=$(echo "$end - $start" | bc -l)
	printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %.1f |\n' "$name" "$ver" "$npkg" "$lines" "$total" \
		"$(count use-before-init)" "$(count use-after-dispose)" "$(count check-then-act)" "$(count waitgroup)" "$wall"
done 3< <(grep -v '^#' "${MODULES:-$here/modules.tsv}") </dev/null
