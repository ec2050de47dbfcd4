package inject

import (
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"unicode/utf8"

	"github.com/memorder/wafl/abi"
)

// logWriter appends JSON lines to the run log (record kinds and keys as in
// abi.RunLog) with one write system call per record and no buffering, so a
// crash loses nothing written before it.
type logWriter struct {
	f        *os.File
	skips    atomic.Int64 // interference and cap skip lines written
	probSkip atomic.Int64 // probability skip lines written
	reorders atomic.Int64 // reorder lines written
	panics   atomic.Int64 // panic lines written
}

func openLog(path string) (*logWriter, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("run log: %v", err)
	}
	return &logWriter{f: f}, nil
}

// rec builds one JSON object. Records come from a fixed set of slots,
// claimed and released without a lock, and only when all are taken from
// the heap: a delay, a skip or an await writes records from inside the
// program under test, which may count its own allocations
// (testing.AllocsPerRun) around the code wafl delays.
type rec struct {
	b    []byte
	slot *recSlot // nil: allocated
}

type recSlot struct {
	busy atomic.Bool
	r    rec
	buf  [256]byte
}

var recSlots [32]recSlot

// recNext spreads the writers over the slots.
var recNext atomic.Uint32

func newRec(ev string, t int64) *rec {
	r := claimRec()
	r.b = append(r.b[:0], `{"`+abi.KeyEv+`":"`...)
	r.b = append(r.b, ev...)
	r.b = append(r.b, '"')
	return r.int(abi.KeyT, t)
}

func claimRec() *rec {
	start := recNext.Add(1)
	for i := range uint32(len(recSlots)) {
		s := &recSlots[(start+i)%uint32(len(recSlots))]
		if s.busy.CompareAndSwap(false, true) {
			s.r = rec{b: s.buf[:0], slot: s}
			return &s.r
		}
	}
	return &rec{b: make([]byte, 0, 256)}
}

// release gives r's slot back.
func (r *rec) release() {
	if s := r.slot; s != nil {
		r.b = nil
		s.busy.Store(false)
	}
}

func (r *rec) key(k string) {
	r.b = append(r.b, ',', '"')
	r.b = append(r.b, k...)
	r.b = append(r.b, '"', ':')
}

func (r *rec) int(k string, v int64) *rec {
	r.key(k)
	r.b = strconv.AppendInt(r.b, v, 10)
	return r
}

func (r *rec) uint(k string, v uint64) *rec {
	r.key(k)
	r.b = strconv.AppendUint(r.b, v, 10)
	return r
}

func (r *rec) float(k string, v float64) *rec {
	r.key(k)
	r.b = strconv.AppendFloat(r.b, v, 'g', -1, 64)
	return r
}

func (r *rec) bool(k string, v bool) *rec {
	r.key(k)
	r.b = strconv.AppendBool(r.b, v)
	return r
}

func (r *rec) str(k, v string) *rec {
	r.key(k)
	r.b = appendJSONString(r.b, v)
	return r
}

// appendJSONString appends s as a JSON string literal.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return append(b, '"')
}

func (w *logWriter) write(r *rec) {
	if w == nil {
		r.release()
		return
	}
	r.b = append(r.b, '}', '\n')
	// A failed write cannot be reported anywhere useful from inside the
	// program under test; the wafl side notices the missing records.
	_, _ = w.f.Write(r.b)
	r.release()
}

func (e *engine) logSetup() {
	if e.log == nil {
		return
	}
	live := 0
	for _, l := range e.locs {
		if !l.dead.Load() {
			live++
		}
	}
	r := newRec(abi.EvSetup, 0).
		int(abi.KeyUnixNs, e.clk.unixStart).
		int(abi.KeyMonoNs, e.clk.monoStart).
		int(abi.KeyPid, int64(os.Getpid())).
		int(abi.KeyRun, int64(e.cfg.run)).
		uint(abi.KeySeed, e.cfg.seed).
		bool(abi.KeySeedSet, e.cfg.seedSet).
		str(abi.KeyPlan, e.cfg.planPath).
		int(abi.KeyLocations, int64(len(e.locs))).
		int(abi.KeyLiveLocations, int64(live)).
		str(abi.KeyAblate, e.cfg.ablate.String())
	e.log.write(r)
}

func (e *engine) logDelay(l *loc, g, n, id uint64, obj uintptr, d, ts int64) {
	if e.log == nil {
		return
	}
	e.log.write(newRec(abi.EvDelay, ts).uint(abi.KeyID, id).uint(abi.KeySite, uint64(l.site)).
		uint(abi.KeyG, g).uint(abi.KeyObj, uint64(obj)).int(abi.KeyNs, d).uint(abi.KeyN, n))
}

func (e *engine) logEnd(l *loc, g, id uint64, actual, te int64, p float64) {
	if e.log == nil {
		return
	}
	e.log.write(newRec(abi.EvEnd, te).uint(abi.KeyID, id).uint(abi.KeySite, uint64(l.site)).
		uint(abi.KeyG, g).int(abi.KeyNs, actual).float(abi.KeyP, p))
}

func (e *engine) logSkip(l *loc, g, n uint64, why string, by uint32) {
	if e.log == nil {
		return
	}
	if why == abi.SkipProbability {
		if e.log.probSkip.Add(1) > abi.MaxProbSkipRecords {
			return
		}
	} else if e.log.skips.Add(1) > abi.MaxSkipRecords {
		return
	}
	r := newRec(abi.EvSkip, e.clk.now()).uint(abi.KeySite, uint64(l.site)).uint(abi.KeyG, g).
		uint(abi.KeyN, n).str(abi.KeyWhy, why)
	if by != 0 {
		r.uint(abi.KeyBy, uint64(by))
	}
	e.log.write(r)
}

// logPartnerSkip records that goroutine g's delay at l was skipped while
// a delay at o, whose partner's path passes l, was in progress: the
// record names o and, when it is still in flight, that delay and the
// goroutine it holds (the side delayed in place of g).
func (e *engine) logPartnerSkip(l *loc, g, n uint64, o *loc) {
	if e.log == nil || e.log.skips.Add(1) > abi.MaxSkipRecords {
		return
	}
	var id, dg uint64
	e.fmu.Lock()
	for i := range e.flight {
		if f := &e.flight[i]; f.site == o.site && f.g != g {
			id, dg = f.id, f.g
			break
		}
	}
	e.fmu.Unlock()
	r := newRec(abi.EvSkip, e.clk.now()).uint(abi.KeySite, uint64(l.site)).uint(abi.KeyG, g).
		uint(abi.KeyN, n).str(abi.KeyWhy, abi.SkipPartner).uint(abi.KeyBy, uint64(o.site))
	if id != 0 {
		r.uint(abi.KeyID, id).uint(abi.KeyDelayG, dg)
	}
	e.log.write(r)
}

func (e *engine) logHB(l1 *loc, second uint32, g2 uint64, d delayRec, gap, t2 int64) {
	if e.log == nil {
		return
	}
	e.log.write(newRec(abi.EvHB, t2).uint(abi.KeyFirst, uint64(l1.site)).uint(abi.KeySecond, uint64(second)).
		uint(abi.KeyID, d.id).uint(abi.KeyG, g2).uint(abi.KeyDelayG, d.g).int(abi.KeyGap, gap).int(abi.KeyDelayNs, d.te-d.ts))
}

func (e *engine) logLate(l1 *loc, second uint32, g2 uint64, d delayRec, t2 int64) {
	if e.log == nil {
		return
	}
	e.log.write(newRec(abi.EvLate, t2).uint(abi.KeyFirst, uint64(l1.site)).uint(abi.KeySecond, uint64(second)).
		uint(abi.KeyID, d.id).uint(abi.KeyG, g2).int(abi.KeyNeedNs, t2-d.ts).int(abi.KeyDelayNs, d.te-d.ts))
}

func (e *engine) logReorder(f inflight, site uint32, g uint64, obj uintptr, t int64) {
	e.reorders.Add(1)
	if e.log == nil || e.log.reorders.Add(1) > abi.MaxReorderRecords {
		return
	}
	e.log.write(newRec(abi.EvReorder, t).uint(abi.KeyFirst, uint64(f.site)).uint(abi.KeySecond, uint64(site)).
		uint(abi.KeyID, f.id).uint(abi.KeyG, g).uint(abi.KeyDelayG, f.g).uint(abi.KeyObj, uint64(obj)))
}

func (e *engine) logFinish(drain int64) {
	if e.log == nil {
		return
	}
	t := e.clk.now()
	if e.basic != nil { // online.addTrap appends to e.locs
		e.basic.mu.Lock()
		defer e.basic.mu.Unlock()
	}
	for _, l := range e.locs {
		e.log.write(newRec(abi.EvLoc, t).uint(abi.KeySite, uint64(l.site)).float(abi.KeyP, l.prob()).
			bool(abi.KeyLive, !l.dead.Load()).int(abi.KeyDelays, l.delays.Load()).
			uint(abi.KeyInstances, l.instances.Load()).int(abi.KeySkipProb, l.skipProb.Load()))
	}
	e.log.write(newRec(abi.EvFinish, t).int(abi.KeyDelays, e.nDelays.Load()).int(abi.KeyDelayNs, e.total.Load()).
		int(abi.KeySkipInterference, e.skipInt.Load()).int(abi.KeySkipCapGoroutine, e.skipCapG.Load()).
		int(abi.KeySkipCapRun, e.skipCapR.Load()).int(abi.KeyHB, e.hbPrunes.Load()).int(abi.KeyReorders, e.reorders.Load()).int(abi.KeyDrainNs, drain).
		int(abi.KeyAwaits, e.awaits.Load()).int(abi.KeySkipPartner, e.skipPart.Load()))
}

// logAwait records that goroutine g waited d ns at dispose site l for a
// late partner (engine.awaitLate).
func (e *engine) logAwait(l *loc, g uint64, d int64) {
	if e.log == nil {
		return
	}
	e.log.write(newRec(abi.EvAwait, e.clk.now()).uint(abi.KeySite, uint64(l.site)).uint(abi.KeyG, g).int(abi.KeyNs, d))
}
