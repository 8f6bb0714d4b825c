package shadow

import (
	"context"
	"fmt"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// StepResult is one executed (or skipped) workflow step.
type StepResult struct {
	Index    int                            // the step's index in the plan
	Step     PlanStep                       // the plan step (resolved: Worker set)
	Messages []openai.ChatCompletionMessage // exactly what was sent; nil when skipped
	Call     Call                           // the call's measurements; zero when skipped
	Status   string                         // store.StatusOK, store.StatusError or store.StatusSkipped
	Err      error                          // why the step failed or was skipped
	// Response is what later steps see as this step's response: Call.Output for a
	// worker step; for a recursive conductor step, the nested workflow's answer
	// (or the previous answer it kept).
	Response string
	// Nested are the steps of the workflow a recursive conductor step ran, one
	// level deeper; nil for worker steps.
	Nested []StepResult
}

// stepFunc runs one step with its messages and returns the call, the response
// later steps see, and the nested steps it ran (recursive conductor steps only).
type stepFunc func(ctx context.Context, i int, st PlanStep, msgs []openai.ChatCompletionMessage) (Call, string, []StepResult, error)

// Execute runs a resolved plan (every step's Worker set) and returns one result per
// step, in plan order.
//
// Step i's worker receives, for each visible earlier step j in index order, the
// turns {user: subtask_j}, {assistant: response_j}, then {user: subtask_i}; "all"
// makes every earlier step visible, [] none. Steps run concurrently: a step waits
// only for the steps its access list names ("all" waits for every earlier step), so
// the messages are exactly those of a one-after-another run, only sooner. A step
// whose visible steps did not all succeed is skipped (store.StatusSkipped) without
// a call. The final answer is the last step's response.
func Execute(ctx context.Context, caller Caller, plan Plan) []StepResult {
	return execute(ctx, plan, 0, func(ctx context.Context, _ int, st PlanStep, msgs []openai.ChatCompletionMessage) (Call, string, []StepResult, error) {
		c, err := caller.Call(ctx, st.Worker, msgs)
		return c, c.Output, nil, err
	})
}

// execute is Execute with the step runner and the recursion depth given.
func execute(ctx context.Context, plan Plan, depth int, run stepFunc) []StepResult {
	n := len(plan.Steps)
	res := make([]StepResult, n)
	done := make([]chan struct{}, n)
	for i := range done {
		done[i] = make(chan struct{})
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(done[i])
			st := plan.Steps[i]
			visible := st.Access.Visible(i)
			for _, j := range visible {
				<-done[j] // each writer closes done[j] after writing res[j]
			}
			res[i] = StepResult{Index: i, Step: st}
			for _, j := range visible {
				if res[j].Status != store.StatusOK {
					res[i].Status = store.StatusSkipped
					res[i].Err = fmt.Errorf("shadow: step %d skipped: step %d it sees did not succeed (%s)", i, j, res[j].Status)
					return
				}
			}
			msgs := make([]openai.ChatCompletionMessage, 0, 2*len(visible)+1)
			for _, j := range visible {
				msgs = append(msgs,
					openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: plan.Steps[j].Subtask},
					openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: res[j].Response},
				)
			}
			msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: st.Subtask})
			res[i].Messages = msgs
			call, response, nested, err := run(withStep(ctx, i, st, depth), i, st, msgs)
			res[i].Call = call
			res[i].Nested = nested
			if err != nil {
				res[i].Status = store.StatusError
				res[i].Err = fmt.Errorf("shadow: step %d (%s): %w", i, st.Worker, err)
				return
			}
			res[i].Status = store.StatusOK
			res[i].Response = response
		}()
	}
	wg.Wait()
	return res
}

// startedOrNow returns the call's start, or now for a call that never started.
func startedOrNow(c Call) time.Time {
	if c.StartedAt.IsZero() {
		return time.Now().UTC()
	}
	return c.StartedAt
}
