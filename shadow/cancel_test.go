package shadow

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/conductor-shadow/conductor-shadow/store"
)

func TestMarkCancelled(t *testing.T) {
	live := context.Background()
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	res := func(status, runErr string, steps ...store.Step) Result {
		return Result{Run: store.Run{RunID: "r", Status: status, Error: runErr}, Steps: steps}
	}
	canceledStep := store.Step{Index: 0, Status: store.StatusError, Error: "shadow: step 0 (gpt-5): " + context.Canceled.Error()}
	realFailure := store.Step{Index: 1, Status: store.StatusError, Error: "status code 500: upstream failed"}
	cases := []struct {
		name       string
		ctx        context.Context
		in         Result
		wantRun    string
		wantSteps  []string
		wantErrSub string
	}{
		{"live context keeps an error", live, res(store.StatusError, "boom", realFailure), store.StatusError, []string{store.StatusError}, "boom"},
		{"stopped ok run stays ok", stopped, res(store.StatusOK, ""), store.StatusOK, nil, ""},
		{"stopped budget breach keeps its status", stopped, res(store.StatusBudgetExceeded, "budget"), store.StatusBudgetExceeded, nil, "budget"},
		{"stopped error becomes cancelled", stopped, res(store.StatusError, "step failed", canceledStep, realFailure), store.StatusCancelled,
			[]string{store.StatusCancelled, store.StatusError}, "cancelled: context canceled"},
		{"stopped skipped becomes cancelled", stopped, res(store.StatusSkipped, "daily cap"), store.StatusCancelled, nil, "cancelled"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := MarkCancelled(c.ctx, c.in)
			if out.Run.Status != c.wantRun {
				t.Errorf("run status = %q; want %q", out.Run.Status, c.wantRun)
			}
			for i, w := range c.wantSteps {
				if out.Steps[i].Status != w {
					t.Errorf("step %d status = %q; want %q", i, out.Steps[i].Status, w)
				}
			}
			if c.wantErrSub != "" && !strings.Contains(out.Run.Error, c.wantErrSub) {
				t.Errorf("run error = %q; want it to contain %q", out.Run.Error, c.wantErrSub)
			}
		})
	}
	// The input's steps are not modified.
	in := res(store.StatusError, "x", canceledStep)
	_ = MarkCancelled(stopped, in)
	if in.Steps[0].Status != store.StatusError {
		t.Error("MarkCancelled modified its input's steps")
	}
	// A cause set by the canceller is named.
	cctx, ccancel := context.WithCancelCause(context.Background())
	ccancel(errors.New("server shutting down"))
	if out := MarkCancelled(cctx, res(store.StatusError, "x")); !strings.Contains(out.Run.Error, "server shutting down") {
		t.Errorf("error = %q; want the cause", out.Run.Error)
	}
}
