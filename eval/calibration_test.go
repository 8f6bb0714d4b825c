package eval_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/eval"
	"github.com/conductor-shadow/conductor-shadow/eval/stats"
	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/shadow/simpool"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// TestSimulatorCalibration is the platform's calibration: a known truth
// measured back. Every shipped regression set is run by the suite runner
// through the real HTTP client path against the simulated pool (no latency),
// one single-worker pipeline per simulated worker, graded by the real graders
// (the code set needs python3). Each worker's measured accuracy on each set
// (the adversarial probe sets, which measure attacks, are left out)
// must be consistent with its configured profile: the configured accuracy
// (the mean over the set's cases of Profile.AccuracyFor) lies inside the
// Wilson 95% interval of the measured passes (stats.Wilson). The table is
// logged (go test ./eval -run SimulatorCalibration -v).
func TestSimulatorCalibration(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every shipped set through eight simulated workers")
	}
	setsDir := filepath.Join("..", "regression-sets")
	files, err := filepath.Glob(filepath.Join(setsDir, "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no shipped sets in %s: %v", setsDir, err)
	}
	scfg := simpool.NewDefaultConfig()
	scfg.LatencyScale = 0
	scfg.SetsDir = setsDir
	sim, err := simpool.New(scfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim)
	defer srv.Close()
	cfg := shadow.NewDefaultConfig()
	for i := range cfg.Workers {
		cfg.Workers[i].BaseURL = srv.URL + "/v1"
	}
	pool, err := shadow.NewPool(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	workers := append(simpool.WorkerModels(), simpool.IncumbentModel)
	pipes := make([]shadow.Pipeline, len(workers))
	for i, w := range workers {
		if pipes[i], err = shadow.NewSingle(pool, w); err != nil {
			t.Fatal(err)
		}
	}
	profiles := map[string]simpool.Profile{}
	for _, p := range simpool.DefaultProfiles() {
		profiles[p.Name] = p
	}
	// A generous limit: the simulated programs never loop, and a test program
	// timed out by a busy machine would read as a wrong answer.
	codeCfg := eval.NewDefaultCodeConfig()
	codeCfg.Timeout = 60 * time.Second
	code, err := eval.NewCodeGrader(codeCfg)
	if err != nil {
		t.Fatal(err)
	}
	memo := &memoGrader{Grader: code, seen: map[string]eval.Grade{}}
	graders := func(name string) (eval.Grader, error) {
		if name == eval.GraderCode {
			return memo, nil
		}
		return eval.GraderFor(name)
	}
	z := stats.ZFor(0.95)
	var table strings.Builder
	fmt.Fprintf(&table, "%-30s %-22s %5s %10s %10s %17s %s\n", "worker", "set", "n", "configured", "measured", "Wilson 95% CI", "truncated")
	sort.Strings(files)
	// One store for every set: each set is a suite run of its own id and name.
	st := eval.OpenTestStore(t)
	for _, file := range files {
		set, err := eval.LoadSet(file)
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		simCases, err := simpool.ReadCases(f, file)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(simCases) > 0 && simCases[0].Attack != "" {
			continue // adversarial probes measure attacks, not the profiles' accuracy
		}
		began := time.Now()
		rep, err := eval.RunSuite(context.Background(), eval.SuiteStoresOf(store.NewRoles(st)), set, pipes[0], pipes[1:],
			eval.SuiteOptions{SuiteRunID: "calibration-" + set.Name, Concurrency: 8, Graders: graders})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d cases × %d workers in %s", set.Name, len(set.Cases), len(workers), time.Since(began).Round(time.Millisecond))
		for i, w := range workers {
			var configured float64
			for _, c := range simCases {
				configured += profiles[w].AccuracyFor(simpool.FamilyOf(c))
			}
			configured /= float64(len(simCases))
			s := rep.Pipelines[i].Overall
			if rep.Pipelines[i].Pipeline != pipes[i].Name() || s.GraderErrors > 0 || s.Errors > 0 {
				t.Fatalf("%s on %s: pipeline %s, %d grader errors, %d run errors", w, set.Name, rep.Pipelines[i].Pipeline, s.GraderErrors, s.Errors)
			}
			ci := stats.Wilson(s.Passed, s.Graded, z)
			fmt.Fprintf(&table, "%-30s %-22s %5d %9.1f%% %9.1f%% [%5.1f%%, %5.1f%%] %d\n",
				w, set.Name, s.Graded, 100*configured, 100*s.Accuracy, 100*ci.Low, 100*ci.High, s.Truncated)
			if !ci.Contains(configured) {
				t.Errorf("%s on %s: configured %.1f%% outside the Wilson 95%% interval %s of the measured %d/%d (%d truncated)",
					w, set.Name, 100*configured, ci, s.Passed, s.Graded, s.Truncated)
			}
		}
	}
	t.Logf("simulated worker calibration (configured vs measured accuracy):\n%s", table.String())
}

// memoGrader runs the code grader once per distinct test program: workers
// that give the same code for a case (the canonical solution, the same bug)
// share one run of python. Programs are deterministic, so the grade is the same.
type memoGrader struct {
	eval.Grader
	mu   sync.Mutex
	seen map[string]eval.Grade
}

func (m *memoGrader) Grade(ctx context.Context, c eval.Case, output string) eval.Grade {
	key := c.ID + "\x00" + eval.BuildProgram(c, output)
	m.mu.Lock()
	g, ok := m.seen[key]
	m.mu.Unlock()
	if ok {
		return g
	}
	g = m.Grader.Grade(ctx, c, output)
	if g.Err == nil {
		m.mu.Lock()
		m.seen[key] = g
		m.mu.Unlock()
	}
	return g
}
