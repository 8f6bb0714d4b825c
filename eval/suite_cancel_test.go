package eval

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// stopAfterPipeline answers its first n requests at once and then blocks until
// its context ends, calling stop when it starts blocking.
type stopAfterPipeline struct {
	n     int32
	calls atomic.Int32
	stop  func()
}

func (p *stopAfterPipeline) Name() string    { return "stops" }
func (p *stopAfterPipeline) Version() string { return "v1" }
func (p *stopAfterPipeline) Run(ctx context.Context, req shadow.Request, mode string) shadow.Result {
	if p.calls.Add(1) <= p.n {
		return shadow.Result{Run: store.Run{RunID: req.RequestID + "/run", Status: store.StatusOK, FinalOutput: "42", LatencyMs: 5}}
	}
	p.stop()
	<-ctx.Done()
	return shadow.Result{Run: store.Run{RunID: req.RequestID + "/run", Status: store.StatusCancelled, Error: ctx.Err().Error()}}
}

// failRuns is a store whose run inserts fail: a real failure, not a stop.
type failRuns struct {
	store.Store
	store.EvalHistory
	store.OverviewReader
}

func (failRuns) InsertRuns(context.Context, []store.Run) error { return errors.New("disk full") }

// A suite run stopped by its caller is "cancelled" (a stop is not a failure),
// its headline counts the cases finished before the stop, and the finished
// cases stay stored; a store failure is still "error".
func TestSuiteRunCancelledIsNotAFailure(t *testing.T) {
	set, err := LoadSet("testdata/sets/report-mini.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		fail      bool
		status    string
		headline  string
		wantCause error
	}{
		{"stopped after two cases", false, SuiteStatusCancelled, fmt.Sprintf("cancelled after 2 of %d cases", len(set.Cases)), context.Canceled},
		{"store failure", true, SuiteStatusError, "failed: ", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := engine.Open(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			p := &stopAfterPipeline{n: 2, stop: cancel}
			roles := store.NewRoles(st)
			if tc.fail {
				p.n = 100
				roles = store.NewRoles(failRuns{st, st.(store.EvalHistory), st.(store.OverviewReader)})
			}
			id := "suite-" + strings.ReplaceAll(tc.name, " ", "-")
			_, err := RunSuite(ctx, SuiteStoresOf(roles), set, p, nil, SuiteOptions{SuiteRunID: id, Concurrency: 1})
			if err == nil || (tc.wantCause != nil && !errors.Is(err, tc.wantCause)) {
				t.Fatalf("err = %v, want one wrapping %v", err, tc.wantCause)

			}
			sr, err := st.GetSuiteRun(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if sr.Status != tc.status || !strings.HasPrefix(sr.Headline, tc.headline) || sr.FinishedAt.IsZero() {
				t.Errorf("suite run status %q headline %q, want %q and %q…", sr.Status, sr.Headline, tc.status, tc.headline)
			}
			if tc.fail {
				return
			}
			cmp := roles.RunComparer
			if cmp == nil {
				t.Fatal("the store has no store.RunComparer")
			}
			tr, err := cmp.ListScores(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if len(tr) != 2 {
				t.Errorf("scores of the finished cases: %d, want 2", len(tr))
			}
		})
	}
}
