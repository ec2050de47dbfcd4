# fetchmod.sh — sourced by overhead.sh and coldbuild.sh.
#
# fetch_module MOD@VER DEST: copies the module's source from the module cache
# (downloading it through the proxy if needed) to DEST, writable, with its
# own dependencies downloaded, and prints DEST. The module cache is never
# written to; the copy is what gets built. Uses the caller's die and $work.
fetch_module() {
	local mv=$1 dest=$2 dir
	dir=$(cd "$work" && GOFLAGS=-mod=mod go mod download -json "$mv" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	[[ -n $dir && -d $dir ]] || die "go mod download $mv gave no directory"
	mkdir -p "$(dirname "$dest")"
	cp -r "$dir" "$dest"
	chmod -R u+w "$dest"
	(cd "$dest" && go mod download >/dev/null 2>&1 || true)
	echo "$dest"
}
