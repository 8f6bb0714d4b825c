package shadow

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	openai "github.com/sashabaranov/go-openai"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// ErrCallCapReached: a request's model calls hit ConductorConfig.MaxCalls; the
// step was not called.
var ErrCallCapReached = errors.New("shadow: per-request model call cap reached")

// recursiveInstruction is the last user turn of a recursive conductor call: it
// shows the response the parent workflow reached and asks for a correction or
// for three empty lists. %s: the step's subtask, the last response, the question.
// It never spells the lists out ("model_id = [...]"): a conductor that copies the
// instruction into a subtask would otherwise plant a second, empty plan in its
// reply.
const recursiveInstruction = `You wrote the workflow above and it ran. Your instruction for this step:
%s

The response of the workflow's last step so far:
<response>
%s
</response>

If that response is a correct and complete final answer, keep it: reply with the three lists, all three empty. Otherwise reply with a corrective workflow in the same format.

<question>
%s
</question>
`

// workflowRun executes one request's workflow tree: the top-level plan and every
// nested workflow a step that picks the conductor starts.
type workflowRun struct {
	c     *conductorPipeline
	req   Request
	calls atomic.Int64 // model calls made so far, planning calls included
}

// call makes one model call, counted against MaxCalls.
func (w *workflowRun) call(ctx context.Context, worker string, msgs []openai.ChatCompletionMessage) (Call, error) {
	if n := w.calls.Add(1); n > int64(w.c.cfg.MaxCalls) {
		w.calls.Add(-1)
		return Call{Worker: worker}, fmt.Errorf("shadow: call %q: %w (%d)", worker, ErrCallCapReached, w.c.cfg.MaxCalls)
	}
	return w.c.pool.Call(ctx, worker, msgs)
}

// execute runs plan at depth (0: top level); planRaw is the conductor text it
// came from, shown to recursive calls as the parent workflow.
func (w *workflowRun) execute(ctx context.Context, plan Plan, planRaw string, depth int) []StepResult {
	return execute(ctx, plan, depth, MediaParts(w.req.Messages), func(ctx context.Context, i int, st PlanStep, msgs []openai.ChatCompletionMessage) (Call, string, []StepResult, error) {
		if st.Worker != w.c.cfg.Worker {
			c, err := w.call(ctx, st.Worker, msgs)
			return c, c.Output, nil, err
		}
		return w.recurse(ctx, plan, planRaw, i, st, msgs, depth)
	})
}

// recurse runs step i that picked the conductor: the inner call sees the parent
// workflow and the last visible response (msgs' last assistant turn) and returns
// a corrective workflow, run one level deeper, or three empty lists, keeping the
// previous answer. The step's response is the nested workflow's answer or the
// kept one.
func (w *workflowRun) recurse(ctx context.Context, plan Plan, planRaw string, i int, st PlanStep, msgs []openai.ChatCompletionMessage, depth int) (Call, string, []StepResult, error) {
	previous := ""
	for _, m := range msgs {
		if m.Role == openai.ChatMessageRoleAssistant {
			previous = StepOutputText(m.Content)
		}
	}
	prompt, err := BuildConductorPrompt(w.c.menu(depth+1), w.req.Messages, w.c.cfg.MaxSteps)
	if err != nil {
		return Call{Worker: st.Worker}, "", nil, err
	}
	prompt = append(prompt,
		openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: planRaw},
		openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser,
			Content: fmt.Sprintf(recursiveInstruction, st.Subtask, previous, lastUserText(w.req.Messages))},
	)
	call, err := w.call(ctx, st.Worker, prompt)
	if err != nil {
		return call, "", nil, err
	}
	nested, err := ParsePlan(call.Output)
	var pe *PlanError
	if errors.As(err, &pe) && pe.Kind == PlanEmpty {
		return call, previous, nil, nil // keep the previous answer
	}
	if err == nil {
		nested, err = w.c.resolveAt(nested, depth+1)
	}
	if err != nil {
		return call, "", nil, fmt.Errorf("shadow: step %d: nested workflow at depth %d: %w", i, depth+1, err)
	}
	results := w.execute(ctx, nested, call.Output, depth+1)
	last := results[len(results)-1]
	if last.Status != store.StatusOK {
		return call, "", results, fmt.Errorf("shadow: step %d: nested workflow at depth %d failed: %w", i, depth+1, last.Err)
	}
	return call, last.Response, results, nil
}

// record adds results to r at depth under parent (-1 at the top level): first
// every step of this level, in plan order (role "worker"; a step that picked the
// conductor records the inner conductor call, its Output the raw corrective
// workflow), then each recursive step's nested steps after them. Returns the
// error texts of failed steps at this level.
func (w *workflowRun) record(r *runRecorder, results []StepResult, parent, depth int32) []string {
	var failed []string
	idx := make([]int32, len(results))
	for k, sr := range results {
		wc, _ := w.c.pool.Worker(sr.Step.Worker)
		s := r.add(stepInput{role: RoleWorker, worker: sr.Step.Worker, model: wc.Model,
			subtask: sr.Step.Subtask, access: sr.Step.Access.String(), msgs: sr.Messages}, sr.Call, sr.Status, sr.Err)
		idx[k] = s.Index
		r.steps[s.Index].Parent = parent
		r.steps[s.Index].Depth = depth
		if sr.Status == store.StatusError || sr.Status == store.StatusBudgetExceeded {
			failed = append(failed, sr.Err.Error())
		}
	}
	for k, sr := range results {
		if len(sr.Nested) > 0 {
			w.record(r, sr.Nested, idx[k], depth+1)
		}
	}
	return failed
}

// joinErrors joins error texts with "; ".
func joinErrors(msgs []string) error { return errors.New(strings.Join(msgs, "; ")) }
