package analyze

// The synthetic trace generator of the analyzer's benchmarks
// (bench_test.go): preparation-run traces with the shape of real ones, a
// root goroutine that forks workers over time, many short-lived objects
// going through init → uses → dispose in a sliding window, a few slow
// objects whose lifetime exceeds the near-miss window, goroutines of
// unknown parent, and hot objects that receive a large share of all uses.
// The output is a deterministic function of the synthConfig.

import (
	"hash/fnv"
	"math/rand/v2"
	"testing"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/internal/trace"
)

// synthConfig sizes a synthetic trace.
type synthConfig struct {
	Events    int     // rows to emit, forks included
	Seed      uint64  // PRNG seed
	Workers   int     // goroutines the root forks (default 256)
	Orphans   int     // goroutines with no known parent (default 16)
	Classes   int     // object classes, 4 sites each (default 1500)
	Window    int     // objects alive at once (default 4096)
	Roles     int     // goroutine roles; a class is made by one role, used by another (default 32)
	Hot       int     // hot objects (default 64)
	HotShare  float64 // share of rows that are uses of hot objects (default 0.5)
	SlowShare float64 // share of classes whose objects live longer than δ (default 0.05)
	StepNs    int     // mean time between rows (default 200 ns)
	BatchSize int     // rows per batch (default 64 Ki)
}

func (c *synthConfig) defaults() {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.Workers, 256)
	def(&c.Orphans, 16)
	def(&c.Classes, 1500)
	def(&c.Window, 4096)
	def(&c.Roles, 32)
	def(&c.Hot, 64)
	def(&c.StepNs, 200)
	def(&c.BatchSize, 64<<10)
	if c.HotShare <= 0 {
		c.HotShare = 0.5
	}
	if c.SlowShare <= 0 {
		c.SlowShare = 0.05
	}
}

const synthRoot = 1

type synthSlot struct {
	obj   uint64
	class int
	owner uint64
	clock uint32
	uses  int
	state uint8 // 0: not yet initialized, 1: in use, 2: disposing
}

// synthGenerate emits the trace in batches; the batch passed to emit is
// reused after emit returns. It stops at the first error emit returns.
func synthGenerate(cfg synthConfig, emit func(*trace.Batch) error) error {
	cfg.defaults()
	r := rand.New(rand.NewPCG(cfg.Seed, 0x5eed))
	b := &trace.Batch{}
	rows := 0
	var t int64
	put := func(g uint64, clock uint32, site uint32, obj uint64, op abi.Op) error {
		b.Append(t, g, clock, site, obj, uint8(op))
		rows++
		if len(b.Time) == cfg.BatchSize {
			if err := emit(b); err != nil {
				return err
			}
			b.Reset()
		}
		return nil
	}
	// Goroutines: root 1, workers 2.., orphans after them. Workers are
	// forked one by one during the first tenth of the trace, so objects
	// the root initializes early are fork-ordered with their users.
	rootClock := uint32(1)
	forked := 0
	live := []uint64{synthRoot}
	// byRole[r]: live goroutines of role r (the root has every role).
	byRole := make([][]uint64, cfg.Roles)
	for r := range byRole {
		byRole[r] = []uint64{synthRoot}
	}
	orphanBase := uint64(2 + cfg.Workers)
	for i := 0; i < cfg.Orphans; i++ {
		g := orphanBase + uint64(i)
		live = append(live, g)
		byRole[i%cfg.Roles] = append(byRole[i%cfg.Roles], g)
	}
	pick := func(role int) uint64 {
		gs := byRole[role]
		if len(gs) > 1 && r.IntN(64) != 0 {
			return gs[1+r.IntN(len(gs)-1)] // mostly a worker, rarely the root
		}
		return gs[r.IntN(len(gs))]
	}
	forkEvery := max(cfg.Events/10/max(cfg.Workers, 1), 1)
	classSites := func(c int) (initS, use1, use2, disp uint32) {
		base := uint32(1 + 4*c)
		return base, base + 1, base + 2, base + 3
	}
	hotBase := uint32(1 + 4*cfg.Classes)
	nextObj := uint64(0xc000000000)
	newObj := func() uint64 { nextObj += 0x40; return nextObj }
	// Hot objects: initialized by the root before any fork.
	hot := make([]uint64, cfg.Hot)
	for i := range hot {
		hot[i] = newObj()
		if err := put(synthRoot, rootClock, hotBase+uint32(i%8), hot[i], abi.OpInit); err != nil {
			return err
		}
	}
	fill := func(s *synthSlot) {
		s.obj = newObj()
		s.class = r.IntN(cfg.Classes)
		s.owner = pick(s.class % cfg.Roles)
		if s.owner == synthRoot {
			s.clock = rootClock
		} else {
			s.clock = 1
		}
		s.uses = 1 + r.IntN(16)
		s.state = 0
	}
	slots := make([]synthSlot, cfg.Window)
	for i := range slots {
		fill(&slots[i])
	}
	slowClasses := int(float64(cfg.Classes) * cfg.SlowShare)
	disposeAt := cfg.Events - 2*cfg.Hot
	step := uint64(2*cfg.StepNs - 1)
	for rows < cfg.Events {
		t += 1 + int64(r.Uint64N(step))
		if forked < cfg.Workers && rows >= (forked+1)*forkEvery {
			forked++
			child := uint64(1 + forked)
			if err := put(synthRoot, rootClock, 0, child, abi.OpFork); err != nil {
				return err
			}
			rootClock++
			live = append(live, child)
			byRole[forked%cfg.Roles] = append(byRole[forked%cfg.Roles], child)
			continue
		}
		if rows >= disposeAt {
			// The end of the test: the root disposes the hot objects.
			i := rows - disposeAt
			if i < cfg.Hot {
				if err := put(synthRoot, rootClock, hotBase+16+uint32(i%8), hot[i], abi.OpDispose); err != nil {
					return err
				}
				continue
			}
		}
		if r.Float64() < cfg.HotShare {
			h := r.IntN(cfg.Hot)
			g := live[r.IntN(len(live))]
			c := uint32(1)
			if g == synthRoot {
				c = rootClock
			}
			if err := put(g, c, hotBase+8+uint32(h%8), hot[h], abi.OpUse); err != nil {
				return err
			}
			continue
		}
		s := &slots[r.IntN(len(slots))]
		if s.class < slowClasses && r.IntN(64) != 0 {
			// slow objects progress rarely: their gaps exceed δ
			continue
		}
		initS, use1, use2, disp := classSites(s.class)
		var err error
		switch s.state {
		case 0:
			err = put(s.owner, s.clock, initS, s.obj, abi.OpInit)
			s.state = 1
		case 1:
			// used by the consumer role of the class, or by its maker
			g := s.owner
			if r.IntN(4) != 0 {
				g = pick((s.class*7 + 3) % cfg.Roles)
			}
			c := uint32(1)
			if g == synthRoot {
				c = rootClock
			}
			site := use1
			if r.IntN(2) == 0 {
				site = use2
			}
			err = put(g, c, site, s.obj, abi.OpUse)
			if s.uses--; s.uses == 0 {
				s.state = 2
			}
		case 2:
			if s.class%3 != 0 { // a third of the classes are never disposed
				c := s.clock
				if s.owner == synthRoot {
					c = rootClock
				}
				err = put(s.owner, c, disp, s.obj, abi.OpDispose)
			}
			fill(s)
		}
		if err != nil {
			return err
		}
	}
	if len(b.Time) > 0 {
		return emit(b)
	}
	return nil
}

func synthDigest(t *testing.T, cfg synthConfig) (rows int, forks int, sum uint64) {
	t.Helper()
	h := fnv.New64a()
	var buf [8]byte
	err := synthGenerate(cfg, func(b *trace.Batch) error {
		for i := range b.Time {
			rows++
			if abi.Op(b.Op[i]) == abi.OpFork {
				forks++
			}
			for _, v := range []uint64{uint64(b.Time[i]), b.G[i], uint64(b.Clock[i]), uint64(b.Site[i]), b.Obj[i], uint64(b.Op[i])} {
				for k := range buf {
					buf[k] = byte(v >> (8 * k))
				}
				h.Write(buf[:])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return rows, forks, h.Sum64()
}

func TestSynthGenerateIsDeterministicAndSized(t *testing.T) {
	cfg := synthConfig{Events: 100_000, Seed: 7, Workers: 16, BatchSize: 1000}
	r1, f1, s1 := synthDigest(t, cfg)
	r2, _, s2 := synthDigest(t, cfg)
	if r1 != cfg.Events || r2 != cfg.Events {
		t.Fatalf("rows %d, %d, want %d", r1, r2, cfg.Events)
	}
	if f1 != cfg.Workers {
		t.Fatalf("forks %d, want %d", f1, cfg.Workers)
	}
	if s1 != s2 {
		t.Fatal("same config, different traces")
	}
	cfg.Seed = 8
	if _, _, s3 := synthDigest(t, cfg); s3 == s1 {
		t.Fatal("different seeds, same trace")
	}
}
