package shadow

import (
	"context"
	"errors"
	"strings"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// MarkCancelled relabels a run stopped by its caller: when ctx ended (a shutdown,
// the caller's deadline) and the run did not succeed, the run is recorded as
// store.StatusCancelled rather than as an error, and so is every step that failed
// because its context ended. A stop is not a failure: callers shadowing tapped
// traffic treat a cancelled run as work still owed. Budget breaches keep their
// own status (they cancel only the run's budget context, not ctx). res is
// returned unchanged while ctx is live or when the run succeeded.
func MarkCancelled(ctx context.Context, res Result) Result {
	if ctx.Err() == nil || res.Run.Status == store.StatusOK || res.Run.Status == store.StatusBudgetExceeded {
		return res
	}
	cause := context.Cause(ctx)
	why := "cancelled: " + cause.Error()
	if res.Run.Error != "" && !errors.Is(cause, context.Canceled) {
		why += "; " + res.Run.Error
	} else if res.Run.Error != "" {
		why += " (" + res.Run.Error + ")"
	}
	res.Run.Status = store.StatusCancelled
	res.Run.Error = why
	steps := make([]store.Step, len(res.Steps))
	copy(steps, res.Steps)
	for i, s := range steps {
		if s.Status == store.StatusError && stoppedByContext(s.Error) {
			steps[i].Status = store.StatusCancelled
		}
	}
	res.Steps = steps
	return res
}

// stoppedByContext reports whether a recorded error text says the call's context
// ended (errors are stored as text, so the sentinels are matched by message).
func stoppedByContext(msg string) bool {
	return strings.Contains(msg, context.Canceled.Error()) || strings.Contains(msg, context.DeadlineExceeded.Error())
}
