package pipeline

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"
)

// idleCPUs says how many CPUs stayed idle over the last fraction of a
// second: from /proc/stat's idle and iowait time of the whole machine, at
// most runtime.NumCPU(), and, when the cgroup wafl runs in has a CPU
// quota (cgroup v2 cpu.max), at most what the cgroup left of its quota.
// It is 0 where neither can be read, and on the first call, which starts
// the measure: the gate then admits nothing beyond the workers.
func idleCPUs() float64 {
	idleMeter.mu.Lock()
	defer idleMeter.mu.Unlock()
	return idleMeter.sample(time.Now())
}

var idleMeter meter

// meter keeps the last readings of the CPU counters.
type meter struct {
	mu         sync.Mutex
	at         time.Time
	idle, all  float64 // /proc/stat jiffies of every CPU
	cgUsage    float64 // cgroup cpu.stat usage_usec
	last       float64
	haveSample bool
}

// minWindow is the shortest interval a measure spans.
const minWindow = 150 * time.Millisecond

func (m *meter) sample(now time.Time) float64 {
	if m.haveSample && now.Sub(m.at) < minWindow {
		return m.last
	}
	idle, all, cpus, ok := procStat()
	if !ok {
		return 0
	}
	usage, quota := cgroupCPU()
	if m.haveSample {
		free := 0.0
		if d := all - m.all; d > 0 {
			free = (idle - m.idle) / d * float64(cpus)
		}
		free = min(free, float64(runtime.NumCPU()))
		if quota > 0 && usage >= m.cgUsage {
			used := (usage - m.cgUsage) / float64(now.Sub(m.at).Microseconds())
			free = min(free, quota-used)
		}
		m.last = max(free, 0)
	}
	m.at, m.idle, m.all, m.cgUsage, m.haveSample = now, idle, all, usage, true
	return m.last
}

// procStat reads the idle (idle + iowait) and total jiffies of all CPUs
// and how many CPUs there are.
func procStat() (idle, all float64, cpus int, ok bool) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, 0, false
	}
	for _, l := range bytes.Split(data, []byte("\n")) {
		switch {
		case bytes.HasPrefix(l, []byte("cpu ")):
			for i, f := range bytes.Fields(l)[1:] {
				v, err := strconv.ParseFloat(string(f), 64)
				if err != nil {
					return 0, 0, 0, false
				}
				if i >= 8 { // guest time is counted in user time already
					break
				}
				all += v
				if i == 3 || i == 4 {
					idle += v
				}
			}
			ok = true
		case bytes.HasPrefix(l, []byte("cpu")):
			cpus++
		}
	}
	return idle, all, cpus, ok && cpus > 0
}

// cgroupCPU reads the cgroup v2 CPU usage (µs) and quota (CPUs; 0 when
// the cgroup has none or there is no cgroup v2).
func cgroupCPU() (usage, quota float64) {
	max, err := os.ReadFile("/sys/fs/cgroup/cpu.max")
	if err != nil {
		return 0, 0
	}
	f := bytes.Fields(max)
	if len(f) != 2 || string(f[0]) == "max" {
		return 0, 0
	}
	q, err1 := strconv.ParseFloat(string(f[0]), 64)
	p, err2 := strconv.ParseFloat(string(f[1]), 64)
	if err1 != nil || err2 != nil || p <= 0 {
		return 0, 0
	}
	stat, err := os.ReadFile("/sys/fs/cgroup/cpu.stat")
	if err != nil {
		return 0, 0
	}
	for _, l := range bytes.Split(stat, []byte("\n")) {
		if v, ok := bytes.CutPrefix(l, []byte("usage_usec ")); ok {
			if u, err := strconv.ParseFloat(string(bytes.TrimSpace(v)), 64); err == nil {
				return u, q / p
			}
		}
	}
	return 0, 0
}
