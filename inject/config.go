package inject

import (
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/plans"
)

// config is everything a detection run is set up from.
type config struct {
	plan      *plans.Plan
	planPath  string
	seed      uint64
	seedSet   bool // WAFL_SEED was given (else the seed was drawn and is logged)
	run       int
	logPath   string
	crashPath string
	ablate    abi.Ablation
}

// configFromEnv reads the detection-run environment and opens the crash
// output. It does not open the log; newEngine does.
func configFromEnv() (config, error) {
	// Child processes the test starts (the helper-process pattern re-runs
	// the test binary) must not run detection too: they would delay with
	// this run's plan and seed and write into this run's log and crash
	// file. Read the variables once, then take them out of the
	// environment.
	defer func() {
		for _, k := range []string{abi.EnvPlan, abi.EnvSeed, abi.EnvRun, abi.EnvAblate, abi.EnvLog, abi.EnvCrash} {
			os.Unsetenv(k)
		}
	}()
	var c config
	c.planPath = os.Getenv(abi.EnvPlan)
	if c.planPath == "" {
		return c, fmt.Errorf("%s=%s but %s is not set", abi.EnvMode, abi.ModeDetect, abi.EnvPlan)
	}
	p, err := plans.Load(c.planPath)
	if err != nil {
		return c, err
	}
	if err := checkBinary(p, c.planPath); err != nil {
		return c, err
	}
	c.plan = p
	if s := os.Getenv(abi.EnvSeed); s != "" {
		c.seed, err = strconv.ParseUint(s, 10, 64)
		if err != nil || c.seed > abi.MaxSeed {
			return c, fmt.Errorf("%s=%q: not a decimal number from 0 to 2^53-1", abi.EnvSeed, s)
		}
		c.seedSet = true
	} else {
		c.seed = mix64(uint64(time.Now().UnixNano())^uint64(os.Getpid())<<32) >> 12 // below 2^52 (abi.MaxSeed)
	}
	if s := os.Getenv(abi.EnvRun); s != "" {
		c.run, err = strconv.Atoi(s)
		if err != nil || c.run < 0 {
			return c, fmt.Errorf("%s=%q: not a run number", abi.EnvRun, s)
		}
	}
	if c.ablate, err = abi.ParseAblation(os.Getenv(abi.EnvAblate)); err != nil {
		return c, fmt.Errorf("%s: %w", abi.EnvAblate, err)
	}
	c.logPath = os.Getenv(abi.EnvLog)
	c.crashPath = os.Getenv(abi.EnvCrash)
	// A bug report shows every goroutine's stack, not only the panicking
	// one (GOTRACEBACK=single is Go's default). SetTraceback never lowers
	// a level set by GOTRACEBACK.
	debug.SetTraceback("all")
	if c.crashPath != "" {
		f, err := os.OpenFile(c.crashPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return c, fmt.Errorf("crash output: %v", err)
		}
		// SetCrashOutput duplicates the descriptor; ours can be closed.
		err = debug.SetCrashOutput(f, debug.CrashOptions{})
		f.Close()
		if err != nil {
			return c, fmt.Errorf("crash output %s: %v", c.crashPath, err)
		}
	}
	return c, nil
}

// effective returns the parameters with the run caps and grace defaulted:
// a zero cap or grace (a plan written before the field existed) means the
// package plans default.
func effective(p plans.Params) plans.Params {
	if p.MaxDelayPerGoroutineNs == 0 {
		p.MaxDelayPerGoroutineNs = plans.DefaultMaxDelayPerGoroutineNs
	}
	if p.MaxDelayPerRunNs == 0 {
		p.MaxDelayPerRunNs = plans.DefaultMaxDelayPerRunNs
	}
	if p.GraceNs == 0 {
		p.GraceNs = plans.DefaultGraceNs
	}
	return p
}
