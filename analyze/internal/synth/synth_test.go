package synth

import (
	"hash/fnv"
	"testing"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/internal/trace"
)

func digest(t *testing.T, cfg Config) (rows int, forks int, sum uint64) {
	t.Helper()
	h := fnv.New64a()
	var buf [8]byte
	err := Generate(cfg, func(b *trace.Batch) error {
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

func TestGenerateIsDeterministicAndSized(t *testing.T) {
	cfg := Config{Events: 100_000, Seed: 7, Workers: 16, BatchSize: 1000}
	r1, f1, s1 := digest(t, cfg)
	r2, _, s2 := digest(t, cfg)
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
	if _, _, s3 := digest(t, cfg); s3 == s1 {
		t.Fatal("different seeds, same trace")
	}
}
