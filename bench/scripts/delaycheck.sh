#!/usr/bin/env bash
# delaycheck.sh — check, without wafl, that every corpus bug crashes when the
# goroutine of its first access is delayed the way wafl would delay it, and
# that the fixed twins survive the same delay.
#
# Copies examples/ to a temporary directory, inserts time.Sleep(DELAY) right
# before the delayed access of each bug (the init of a use-before-init pair,
# the use of a use-after-dispose pair; for appinsights/netmq only the instance
# WAFL's interference control keeps) and at the corresponding place of its
# fixed twin, runs each test TRIES times and counts the runs that panic with a
# MEMORDER failure. Exit status 1 if a bug never panics or a fixed twin fails.
#
# Usage: bench/scripts/delaycheck.sh            Environment: DELAY (10ms), TRIES (10)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
DELAY=${DELAY:-10ms}
TRIES=${TRIES:-10}
work=$(mktemp -d "${TMPDIR:-/tmp}/wafl-delaycheck.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp -r "$root/examples" "$work/examples"
python3 - "$work/examples" "$DELAY" <<'PY'
import sys, os
base, delay = sys.argv[1], sys.argv[2]
# package dir: (file, unique text of the delayed line, lines to go up)
points = {
    'pickfirst': ('pickfirst.go', '\tb.sc = &SubConn{addr: addrs[0]}', 0),
    'pickfirst/fixed': ('pickfirst.go', '\tb.sc = &SubConn{addr: addrs[0]}', 0),
    'informer': ('informer.go', 'c.lister = &Lister{store: inf.store} // BUG', 0),
    'informer/fixed': ('informer.go', '\tc.lister = &Lister{store: inf.store}', 0),
    'equivcache': ('equivcache.go', 'f.equivCache = &EquivalenceCache', 0),
    'equivcache/fixed': ('equivcache.go', 'f.equivCache = &EquivalenceCache', 0),
    'natsstart': ('natsstart.go', 's.sysAcc.addServiceImport(subj) // BUG', 0),
    'natsstart/fixed': ('natsstart.go', 's.sysAcc.addServiceImport(subj)', 0),
    'jsaccounts': ('jsaccounts.go', 'js.accounts[name] = jsa // BUG', 0),
    'jsaccounts/fixed': ('jsaccounts.go', '\tjs.accounts[name] = jsa', 0),
    'natsconsumer': ('natsconsumer.go', 'state := mset.store.State() // BUG', 0),
    'natsconsumer/fixed': ('natsconsumer.go', '\tst := mset.store', 1),
    'dockerstats': ('dockerstats.go', '\t\tc <- e', 0),
    'dockerstats/fixed': ('dockerstats.go', 'case c <- e:', 1),
    'traefikwatch': ('traefikwatch.go', 'case eventCh <- obj:', 1),
    'traefikwatch/fixed': ('traefikwatch.go', 'case eventCh <- obj:', 1),
    'netstack': ('netstack.go', 't.incomingPacket <- p // BUG', 0),
    'netstack/fixed': ('netstack.go', 'case t.incomingPacket <- p:', 1),
    'forcemtu': ('forcemtu.go', 'd.events <- EventMTUUpdate // BUG', 0),
    'forcemtu/fixed': ('forcemtu.go', 'case d.events <- EventMTUUpdate:', 1),
    'quicclose': ('quicclose.go', 'c.closeErr.Store(&closeError{err: err, remote: remote}) // BUG', 0),
    'quicclose/fixed': ('quicclose.go', 'c.closeErr.Store(&closeError{err: err, remote: remote})', 0),
    'redispubsub': ('redispubsub.go', 'return ps.cn.readReply() // BUG', 0),
    'redispubsub/fixed': ('redispubsub.go', 'return cn.readReply()', 0),
    'winiopipe': ('winiopipe.go', 'ch <- p.connectPipe()', 0),
    'winiopipe/fixed': ('winiopipe.go', 'ch <- p.connectPipe()', 0),
    'ddpipe': ('ddpipe.go', '\t\tp.conn = c', 0),
    'ddpipe/fixed': ('ddpipe.go', '\t\tp.conn = c', 0),
    'appinsights': ('appinsights.go', 'm.lstnr = &listener{counts: make(map[string]int)} // BUG', 0),
    'appinsights/fixed': ('appinsights.go', 'm.lstnr = &listener{counts: make(map[string]int)}', 0),
    'netmq': ('netmq.go', '\t\tc.process(pkt)', 0),
    'netmq/fixed': ('netmq.go', '\t\tc.process(pkt)', 0),
    'loadlocal': ('loadlocal.go', 'l := s.l // BUG', 0),
    'loadlocal/fixed': ('loadlocal.go', '\tdefer close(s.done)', 0),
    'atomicswap': ('atomicswap.go', '\tconn := c.conn.Load()', 0),
    'atomicswap/fixed': ('atomicswap.go', '\tconn := c.conn.Load()', 0),
    'capstruct': ('capstruct.go', 'ex.result = &Result{Output: out} // BUG', 0),
    'capstruct/fixed': ('capstruct.go', '\t\tex.result = &Result{Output: out}', 0),
    'wgdone': ('wgdone.go', 'b.wg.Add(1) // BUG', 0),
    'wgdone/fixed': ('wgdone.go', '\t\tb.wg.Add(1)', 0),
    'timerhandler': ('timerhandler.go', 'c.handler(msg) // BUG', 0),
    'timerhandler/fixed': ('timerhandler.go', 'if h := c.handler; h != nil {', 0),
    # Hoisting kernels: the sleep goes before the Lock call (up 1), and
    # their gap is 50 ms, so the delay is 8 × DELAY.
    'lockaddr': ('lockaddr.go', '\ts.setListener(ln)', 1, 8),
    'lockaddr/fixed': ('lockaddr.go', '\ts.setListener(ln)', 1, 8),
    'lockserver': ('lockserver.go', 'dps.server = &HTTPServer{Addr: dps.address, Handler: router} // init', 1, 8),
    'lockserver/fixed': ('lockserver.go', 'dps.server = &HTTPServer{Addr: dps.address, Handler: router}', 1, 8),
}
for pkg, spec in points.items():
    f, text, up = spec[:3]
    mult = spec[3] if len(spec) > 3 else 1
    path = os.path.join(base, pkg, f)
    lines = open(path).read().split('\n')
    hits = [i for i, l in enumerate(lines) if text in l]
    if len(hits) != 1:
        sys.exit(f'delaycheck: {path}: expected one line containing {text!r}, found {len(hits)}')
    d = 'func() time.Duration { d, _ := time.ParseDuration("%s"); return %d * d }()' % (delay, mult)
    lines.insert(hits[0] - up, '\ttime.Sleep(%s)' % d)
    src = '\n'.join(lines)
    if '"time"' not in src:
        src = src.replace('import (', 'import (\n\t"time"', 1)
    open(path, 'w').write(src)
PY
cd "$work/examples"
panics='panic: (runtime error: invalid memory address or nil pointer dereference|assignment to entry in nil map|send on closed channel|close of closed channel|close of nil channel|sync: negative WaitGroup counter)'
status=0
for name in $(cut -f1 "$root/bench/scripts/corpus.tsv" | grep -v '^#'); do
	for pkg in "$name" "$name/fixed"; do
		bin=$work/$(echo "$pkg" | tr / _).test
		go test -c -o "$bin" "./$pkg" >/dev/null || { echo "$pkg: build failed"; status=1; continue; }
		crashes=0 failures=0
		for ((i = 0; i < TRIES; i++)); do
			if ! "$bin" -test.count=1 >"$bin.out" 2>&1; then
				failures=$((failures + 1))
				grep -Eq "$panics" "$bin.out" && crashes=$((crashes + 1))
			fi
		done
		echo "$pkg: $crashes/$TRIES delayed runs panicked, $failures/$TRIES failed"
		if [[ $pkg == */fixed ]]; then
			((failures == 0)) || status=1
		else
			((crashes > 0)) || status=1
		fi
	done
done
exit $status
