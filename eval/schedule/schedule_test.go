package schedule

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestValidate(t *testing.T) {
	ok := Suite{Name: "weekly", Set: "regression-sets/gsm8k-150.jsonl"}
	tests := []struct {
		name string
		cfg  Config
		want []string
	}{
		{"default", NewDefaultConfig(), nil},
		{"default cron", Config{StateFile: "s.json", Suites: []Suite{ok}}, nil},
		{"descriptor", Config{StateFile: "s.json", Suites: []Suite{{Name: "d", Set: "x", Cron: "@daily"}}}, nil},
		{"bad", Config{Suites: []Suite{{Set: "x"}, {Name: "a", Cron: "every tuesday", Limit: -1}, {Name: "a", Set: "y"}}},
			[]string{"state_file is required", "suites[0]: name is required", `suites[1] "a": set is required`,
				`limit must be >= 0, got -1`, `cron "every tuesday"`, `suites[2]: name "a" used twice`}},
	}
	for _, tc := range tests {
		err := tc.cfg.Validate()
		if len(tc.want) == 0 {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: want error", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", tc.name, err, w)
			}
		}
	}
}

func TestMissedRuns(t *testing.T) {
	sched, err := cron.ParseStandard(DefaultCron) // Mondays 06:00 UTC
	if err != nil {
		t.Fatal(err)
	}
	last := time.Date(2026, 11, 2, 6, 0, 0, 0, time.UTC) // a Monday run
	tests := []struct {
		now         time.Time
		count       int
		first, last time.Time
	}{
		{time.Date(2026, 11, 9, 5, 59, 0, 0, time.UTC), 0, time.Time{}, time.Time{}},
		{time.Date(2026, 11, 9, 6, 0, 0, 0, time.UTC), 1, time.Date(2026, 11, 9, 6, 0, 0, 0, time.UTC), time.Date(2026, 11, 9, 6, 0, 0, 0, time.UTC)},
		{time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC), 3, time.Date(2026, 11, 9, 6, 0, 0, 0, time.UTC), time.Date(2026, 11, 23, 6, 0, 0, 0, time.UTC)},
	}
	for _, tc := range tests {
		m, ok := missedRuns(sched, "w", last, tc.now)
		if ok != (tc.count > 0) || m.Count != tc.count || !m.First.Equal(tc.first) || !m.Last.Equal(tc.last) {
			t.Errorf("now %v: got %+v ok=%v, want %d from %v to %v", tc.now, m, ok, tc.count, tc.first, tc.last)
		}
	}
}

type recorder struct {
	mu   sync.Mutex
	runs []string
	ch   chan string
}

func (r *recorder) run(ctx context.Context, s Suite) (string, error) {
	r.mu.Lock()
	r.runs = append(r.runs, s.Name)
	r.mu.Unlock()
	r.ch <- s.Name
	return "suite-" + s.Name, nil
}

func TestStartReportsAndCatchesUpMissedRuns(t *testing.T) {
	now := time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)
	for _, catchUp := range []bool{true, false} {
		dir := t.TempDir()
		state := filepath.Join(dir, "state", "schedules.json")
		if err := writeState(state, map[string]time.Time{"weekly": time.Date(2026, 11, 2, 6, 0, 0, 0, time.UTC)}); err != nil {
			t.Fatal(err)
		}
		cfg := Config{StateFile: state, CatchUp: catchUp, Suites: []Suite{
			{Name: "weekly", Set: "a.jsonl"},
			{Name: "new", Set: "b.jsonl", Cron: "@daily"},
		}}
		rec := &recorder{ch: make(chan string, 4)}
		s, err := New(cfg, rec.run, nil)
		if err != nil {
			t.Fatal(err)
		}
		s.now = func() time.Time { return now }
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := s.Start(context.Background()); err != nil { // twice is harmless
			t.Fatal(err)
		}
		missed := s.Missed()
		if len(missed) != 1 || missed[0].Suite != "weekly" || missed[0].Count != 3 {
			t.Errorf("catchUp=%v: missed %+v", catchUp, missed)
		}
		if catchUp {
			select {
			case name := <-rec.ch:
				if name != "weekly" {
					t.Errorf("caught up %q", name)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("no catch-up run")
			}
		}
		if err := s.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := s.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		got, err := readState(state)
		if err != nil {
			t.Fatal(err)
		}
		// "new" has no history: recorded as a baseline, not run, not missed.
		if !got["new"].Equal(now) {
			t.Errorf("baseline for new: %v", got["new"])
		}
		wantWeekly := time.Date(2026, 11, 2, 6, 0, 0, 0, time.UTC)
		if catchUp {
			wantWeekly = now
		}
		if !got["weekly"].Equal(wantWeekly) {
			t.Errorf("catchUp=%v: weekly last run %v, want %v", catchUp, got["weekly"], wantWeekly)
		}
		if n := len(rec.runs); (catchUp && n != 1) || (!catchUp && n != 0) {
			t.Errorf("catchUp=%v: runs %v", catchUp, rec.runs)
		}
	}
}

func TestLifecycleAndErrors(t *testing.T) {
	if _, err := New(Config{Suites: []Suite{{}}}, func(context.Context, Suite) (string, error) { return "", nil }, nil); err == nil {
		t.Error("invalid config: want error")
	}
	if _, err := New(NewDefaultConfig(), nil, nil); err == nil {
		t.Error("nil run: want error")
	}
	s, err := New(NewDefaultConfig(), func(context.Context, Suite) (string, error) { return "", nil }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Shutdown(context.Background()); err != nil { // without Start
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil { // after Shutdown: nothing
		t.Fatal(err)
	}

	state := filepath.Join(t.TempDir(), "s.json")
	if err := os.WriteFile(state, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err = New(Config{StateFile: state, Suites: []Suite{{Name: "a", Set: "x"}}}, func(context.Context, Suite) (string, error) { return "", nil }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err == nil || !strings.Contains(err.Error(), state) {
		t.Errorf("bad state file: %v", err)
	}
	_ = s.Shutdown(context.Background())
}
