#!/usr/bin/env bash
# coldbuild.sh — the instrumented build next to `go test -c` of the same
# packages, from a cold build cache.
#
# For each module below (pinned, fetched through the Go module proxy and
# copied out of the module cache into a scratch directory), each round
# times, one after the other:
#
#   go test -c -vet=off -o BIN/ ./...     (the reference; wafl builds
#                                          with -vet=off too: go test -c
#                                          otherwise runs vet on every
#                                          dependency for its facts)
#   wafl -v instrument --dir WORK ./...   (load, rewrite, runtime, build)
#
# each with a build cache of its own: with STD=warm (default) a copy of a
# cache that holds only the standard-library packages the module's tests
# import (built once per module beforehand), so that both builds compile
# the module, its dependencies and everything wafl adds, and nothing they
# would share anyway; with STD=cold an empty cache (then both also
# compile the standard library, several minutes on two cores). The go
# command's own trace (-debug-trace, added to every go list, build and test
# command by a shim first on PATH, one file per command) says where each
# build spent its time: compile actions summed per kind of package
# (standard library, the module, its dependencies, wafl's runtime) and
# links, whichever go command ran them (wafl's package loading runs go
# list -export, which compiles the dependencies); wafl -v prints its
# load / rewrite / build split.
#
# Usage: bench/scripts/coldbuild.sh [module@version ...]
# Environment: ROUNDS (1), STD (warm|cold), WAFL (default: built from this
# checkout), KEEP=1 keeps the scratch directory.
# Output: a markdown table on stdout (progress on stderr).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
ROUNDS=${ROUNDS:-1}
STD=${STD:-warm}
work=$(mktemp -d "${TMPDIR:-/tmp}/wafl-coldbuild.XXXXXX")
if [[ ${KEEP:-0} != 1 ]]; then trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT; fi
die() { echo "coldbuild.sh: $*" >&2; exit 2; }
# shellcheck source=bench/scripts/fetchmod.sh
source "$(dirname "$0")/fetchmod.sh"
[[ -x /usr/bin/time ]] || die "/usr/bin/time is required (Debian package: time)"
modules=("$@")
if ((${#modules[@]} == 0)); then
	modules=(golang.org/x/sync@v0.24.0 go.uber.org/zap@v1.27.0)
fi
WAFL=${WAFL:-}
if [[ -z $WAFL ]]; then
	WAFL=$work/wafl
	(cd "$root" && go build -o "$WAFL" ./cmd/wafl) || die "building wafl failed"
fi
commit=$(cd "$root" && git describe --always --dirty 2>/dev/null || echo unknown)
realgo=$(command -v go)
mkdir -p "$work/shim"
cat >"$work/shim/go" <<EOS
#!/bin/sh
case "\$1" in
list | build | test)
	sub=\$1
	shift
	exec "$realgo" "\$sub" -debug-trace="\$TRACEDIR/\$sub-\$(date +%s%N)-\$\$.json" "\$@"
	;;
esac
exec "$realgo" "\$@"
EOS
chmod +x "$work/shim/go"

fetch() { fetch_module "$1" "$work/src-$2"; }

# timed NAME CACHE TRACE DIR CMD...: runs CMD with its own GOCACHE and the
# go command's trace; appends "name wall user sys" to $work/times.
timed() {
	local name=$1 cache=$2 tr=$3 dir=$4
	shift 4
	rm -rf "$cache"
	if [[ $STD == warm ]]; then cp -a "$seed" "$cache"; else mkdir -p "$cache"; fi
	local st=0
	mkdir -p "$tr"
	(cd "$dir" && GOCACHE=$cache TRACEDIR=$tr PATH=$work/shim:$PATH /usr/bin/time -o "$work/t" -f '%e %U %S' "$@" \
		>"$work/log.$name" 2>&1) || st=$?
	read -r wall user sys < <(tail -n 1 "$work/t") # after "Command exited with non-zero status N"
	echo "$name $wall $user $sys $st" >>"$work/times"
	printf '  %-24s %7.1f s wall %7.1f s CPU (exit %s)\n' "$name" "$wall" "$(echo "$user + $sys" | bc)" "$st" >&2
	chmod -R u+w "$cache" 2>/dev/null
	rm -rf "$cache"
}

load0=$(cut -d' ' -f1-3 /proc/loadavg)
start=$(date -u '+%Y-%m-%d %H:%M UTC')
: >"$work/times"
i=0
for mv in "${modules[@]}"; do
	i=$((i + 1))
	dir=$(fetch "$mv" "$i")
	mod=${mv%@*}
	seed=$work/seed-$i
	if [[ $STD == warm ]]; then
		echo "$mv: building the standard library packages its tests import into the seed cache" >&2
		# shellcheck disable=SC2046
		(cd "$dir" && GOCACHE=$seed go build $(go list -deps -test -f '{{if .Standard}}{{.ImportPath}}{{end}}' ./... | sort -u)) ||
			echo "$mv: some standard library packages of the seed did not build; the builds compile them" >&2
	fi
	for r in $(seq "$ROUNDS"); do
		timed "gotest-$i-$r" "$work/cache" "$work/trace-gotest-$i-$r" "$dir" go test -c -vet=off -o "$work/bin-$i-$r/" ./...
		timed "wafl-$i-$r" "$work/cache" "$work/trace-wafl-$i-$r" "$dir" "$WAFL" -v instrument --dir "$work/w-$i-$r" ./...
		grep -h '^wafl: load ' "$work/log.wafl-$i-$r" | sed "s/^/  /" >&2 || true
		cp "$work/log.wafl-$i-$r" "$work/phases-$i-$r" 2>/dev/null || true
	done
	echo "$mv $mod" >>"$work/modules"
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)

echo "Cold builds, \`bench/scripts/coldbuild.sh\` (STD=$STD, ROUNDS=$ROUNDS), wafl $commit, $start."
echo "Machine: $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(go version | cut -d' ' -f3-4)."
echo "Load average (1, 5, 15 min) at the start: $load0; at the end: $load1."
echo
python3 - "$work" <<'EOF'
import json, os, re, statistics, sys
work = sys.argv[1]
times = {}
for line in open(os.path.join(work, "times")):
    name, wall, user, sys_, st = line.split()
    times[name] = (float(wall), float(user) + float(sys_), int(st))
mods = [l.split() for l in open(os.path.join(work, "modules"))]

def actions(tracedir):
    """Compile and link action seconds from the go -debug-trace files of a build."""
    evs = []
    for f in sorted(os.listdir(tracedir)) if os.path.isdir(tracedir) else []:
        text = open(os.path.join(tracedir, f)).read().rstrip()
        try:
            data = json.loads(text)
        except Exception:
            try:
                data = json.loads(text.rstrip(",") + "]")
            except Exception:
                continue
        evs += data["traceEvents"] if isinstance(data, dict) else data
    begin, sums = {}, {}
    def add(name, dur):
        m = re.match(r"Executing action \((\w+) (.*)\)", name)
        if not m:
            return
        verb, pkg = m.group(1), m.group(2)
        sums[(verb, pkg)] = sums.get((verb, pkg), 0) + dur / 1e6
    for e in evs:
        ph, name = e.get("ph"), e.get("name", "")
        if ph == "X":
            add(name, e.get("dur", 0))
        elif ph == "B":
            begin[(e.get("tid"), name)] = e["ts"]
        elif ph == "E":
            k = (e.get("tid"), name)
            if k in begin:
                add(name, e["ts"] - begin.pop(k))
    return sums

def kinds(sums, mod):
    out = {"std": 0.0, "module": 0.0, "deps": 0.0, "wafl runtime": 0.0, "link": 0.0, "other": 0.0, "nmodule": 0}
    for (verb, pkg), d in sums.items():
        p = pkg.split(" ")[0]
        if verb == "link":
            out["link"] += d
        elif verb != "build":
            out["other"] += d
        elif p.startswith("github.com/memorder/wafl") or "petermattis/goid" in p:
            out["wafl runtime"] += d
        elif p == mod or p.startswith(mod + "/"):
            out["module"] += d
            out["nmodule"] += 1
        elif "." not in p.split("/")[0]:
            out["std"] += d
        else:
            out["deps"] += d
    return out

print("| module | build | wall s | CPU s | ratio CPU | compile std | compile module (actions) | compile deps | compile wafl runtime | link | exit |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for n, (mv, mod) in enumerate(mods, 1):
    rounds = sorted({k.rsplit("-", 1)[1] for k in times if k.startswith("gotest-%d-" % n)})
    for kind, label in (("gotest", "`go test -c -vet=off`"), ("wafl", "`wafl instrument`")):
        walls = [times["%s-%d-%s" % (kind, n, r)][0] for r in rounds]
        cpus = [times["%s-%d-%s" % (kind, n, r)][1] for r in rounds]
        ref = statistics.median(times["gotest-%d-%s" % (n, r)][1] for r in rounds)
        exits = ",".join(sorted({str(times["%s-%d-%s" % (kind, n, r)][2]) for r in rounds}))
        ks = [kinds(actions(os.path.join(work, "trace-%s-%d-%s" % (kind, n, r))), mod) for r in rounds]
        med = lambda f: statistics.median(k[f] for k in ks)
        rng = lambda v: "%.1f" % statistics.median(v) + (" (%.1f–%.1f)" % (min(v), max(v)) if len(v) > 1 else "")
        print("| %s | %s | %s | %s | %.2f | %.1f | %.1f (%d) | %.1f | %.1f | %.1f | %s |" % (
            mv, label, rng(walls), rng(cpus), statistics.median(cpus) / ref,
            med("std"), med("module"), med("nmodule"), med("deps"), med("wafl runtime"), med("link"), exits))
for f in sorted(os.listdir(work)):
    if f.startswith("phases-"):
        for line in open(os.path.join(work, f)):
            if line.startswith("wafl: load "):
                print()
                print("%s: `%s`" % (f, line.strip()))
EOF
echo
echo "Compile and link columns: seconds of the go command's actions (its"
echo "-debug-trace), summed per kind of package; actions run in parallel, so"
echo "they add up to more than the wall time. Ratio CPU: to \`go test -c\`."
