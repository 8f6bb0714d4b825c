package shadow

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/conductor-shadow/conductor-shadow/shadow/shadowtest"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// selfPlan: gemma-3-27b solves, then the conductor (Model 7) checks the workflow.
const selfPlan = `model_id = [0, 7]
subtasks = ["Solve it.", "Check the workflow."]
access_list = [[], "all"]`

const keepLists = "Looks right.\nmodel_id = []\nsubtasks = []\naccess_list = []"

// recursivePool is a fake whose conductor answers top-level calls with selfPlan
// and recursive calls (more than the two prompt messages) with inner; the pool
// shows the conductor as Model 7.
func recursivePool(t *testing.T, inner string, edit func(*ConductorConfig)) (*shadowtest.Server, Pipeline) {
	t.Helper()
	s := scripted{plan: selfPlan, override: func(r shadowtest.Request) (shadowtest.Reply, bool) {
		if r.Decoded.Model == "conductor" && len(r.Decoded.Messages) > 2 {
			return shadowtest.Reply{Content: inner, PromptTokens: 1, CompletionTokens: 1}, true
		}
		return shadowtest.Reply{}, false
	}}
	srv, pool := newFake(t, s)
	cfg := pool.Config().Conductor
	cfg.Pool = append(cfg.Pool, "conductor")
	if edit != nil {
		edit(&cfg)
	}
	p, err := NewConductor(pool, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return srv, p
}

type stepShape struct {
	role, worker  string
	parent, depth int32
	status        string
}

func shapes(steps []store.Step) []stepShape {
	out := make([]stepShape, len(steps))
	for i, s := range steps {
		out[i] = stepShape{s.Role, s.Worker, s.Parent, s.Depth, s.Status}
	}
	return out
}

func TestConductorRecursion(t *testing.T) {
	gemmaAnswer := answerFor("gemma-3-27b", []openai.ChatCompletionMessage{{Role: "user", Content: "Solve it."}})
	gptAnswer := answerFor("gpt-5", []openai.ChatCompletionMessage{{Role: "user", Content: "Fix it."}})
	tests := []struct {
		name       string
		inner      string
		edit       func(*ConductorConfig)
		wantStatus string
		wantOutput string
		wantErr    string
		want       []stepShape
		wantCalls  int32
	}{
		{
			name:       "corrective workflow",
			inner:      "model_id = [6]\nsubtasks = [\"Fix it.\"]\naccess_list = [[]]",
			wantStatus: store.StatusOK, wantOutput: gptAnswer, wantCalls: 4,
			want: []stepShape{
				{RoleConductor, "conductor", -1, 0, store.StatusOK},
				{RoleWorker, "gemma-3-27b", -1, 0, store.StatusOK},
				{RoleWorker, "conductor", -1, 0, store.StatusOK},
				{RoleWorker, "gpt-5", 2, 1, store.StatusOK},
			},
		},
		{
			name:       "three empty lists keep the previous answer",
			inner:      keepLists,
			wantStatus: store.StatusOK, wantOutput: gemmaAnswer, wantCalls: 3,
			want: []stepShape{
				{RoleConductor, "conductor", -1, 0, store.StatusOK},
				{RoleWorker, "gemma-3-27b", -1, 0, store.StatusOK},
				{RoleWorker, "conductor", -1, 0, store.StatusOK},
			},
		},
		{
			name:       "depth cap",
			inner:      "model_id = [7]\nsubtasks = [\"Check again.\"]\naccess_list = [\"all\"]",
			wantStatus: store.StatusError, wantErr: "nested workflow at depth 2: plan: recursion_unsupported", wantCalls: 4,
			want: []stepShape{
				{RoleConductor, "conductor", -1, 0, store.StatusOK},
				{RoleWorker, "gemma-3-27b", -1, 0, store.StatusOK},
				{RoleWorker, "conductor", -1, 0, store.StatusError},
				{RoleWorker, "conductor", 2, 1, store.StatusError},
			},
		},
		{
			name:       "call cap",
			inner:      "model_id = [6]\nsubtasks = [\"Fix it.\"]\naccess_list = [[]]",
			edit:       func(c *ConductorConfig) { c.MaxCalls = 3 },
			wantStatus: store.StatusError, wantErr: "per-request model call cap reached", wantCalls: 3,
			want: []stepShape{
				{RoleConductor, "conductor", -1, 0, store.StatusOK},
				{RoleWorker, "gemma-3-27b", -1, 0, store.StatusOK},
				{RoleWorker, "conductor", -1, 0, store.StatusError},
				{RoleWorker, "gpt-5", 2, 1, store.StatusError},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, p := recursivePool(t, tt.inner, tt.edit)
			res := p.Run(context.Background(), userRequest("What is 6 times 7?"), store.ModeCandidate)
			if res.Run.Status != tt.wantStatus || res.Run.FinalOutput != tt.wantOutput || !strings.Contains(res.Run.Error, tt.wantErr) {
				t.Errorf("run %q output %q error %q; want %q %q containing %q",
					res.Run.Status, res.Run.FinalOutput, res.Run.Error, tt.wantStatus, tt.wantOutput, tt.wantErr)
			}
			got := shapes(res.Steps)
			if len(got) != len(tt.want) {
				t.Fatalf("steps %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("step %d = %+v, want %+v", i, got[i], tt.want[i])
				}
				if res.Steps[i].Index != int32(i) {
					t.Errorf("step %d has Index %d", i, res.Steps[i].Index)
				}
			}
			if res.Run.Calls != tt.wantCalls || int32(len(srv.Requests())) != tt.wantCalls {
				t.Errorf("run counts %d calls, server saw %d; want %d", res.Run.Calls, len(srv.Requests()), tt.wantCalls)
			}
			// The first recursive call sees the parent workflow and the last response.
			rec := srv.RequestsFor("conductor")[1].Decoded.Messages
			if len(rec) != 4 || rec[2].Role != "assistant" || rec[2].Content != selfPlan ||
				!strings.Contains(rec[3].Content, "<response>\n"+gemmaAnswer+"\n</response>") ||
				!strings.Contains(rec[3].Content, "Check the workflow.") {
				t.Errorf("recursive call messages %+v: want the prompt, the parent workflow and the last response", rec)
			}
		})
	}
}

func TestResolveRejectsSelfWithoutRecursion(t *testing.T) {
	plan, err := ParsePlan(selfPlan)
	if err != nil {
		t.Fatal(err)
	}
	pool := append(NewDefaultConfig().Conductor.Pool, "conductor")
	if _, err := plan.Resolve(pool, "conductor", DefaultMaxSteps); err == nil {
		t.Fatal("Resolve accepted a step that picks the conductor")
	}
	if _, err := plan.resolve(pool, "conductor", DefaultMaxSteps, true); err != nil {
		t.Fatalf("resolve with recursion allowed: %v", err)
	}
}

// menuModels returns the model numbers the conductor prompt's menu offers.
func menuModels(t *testing.T, msgs []openai.ChatCompletionMessage) map[int]bool {
	t.Helper()
	out := map[int]bool{}
	for _, line := range strings.Split(msgs[1].Content, "\n") {
		var i int
		if _, err := fmt.Sscanf(line, "Model %d:", &i); err == nil {
			out[i] = true
		}
	}
	return out
}

// With the conductor listed in its own pool, the menu shown at each depth and
// the validator applied to plans made at that depth agree: a one-step plan
// picking Model i resolves exactly when the menu offered Model i; at the depth
// cap the conductor is neither offered nor accepted, and the other workers keep
// their numbers.
func TestMenuAndValidatorAgreeAtEveryDepth(t *testing.T) {
	for _, maxDepth := range []int{1, 2, 3} {
		_, p := recursivePool(t, keepLists, func(c *ConductorConfig) { c.MaxDepth = maxDepth })
		c := p.(*conductorPipeline)
		self := slices.Index(c.cfg.Pool, c.cfg.Worker)
		for depth := 0; depth <= maxDepth; depth++ {
			prompt, err := BuildConductorPrompt(c.menu(depth), userRequest("What is 6 times 7?").Messages, c.cfg.MaxSteps)
			if err != nil {
				t.Fatal(err)
			}
			offered := menuModels(t, prompt)
			if wantSelf := depth < maxDepth; offered[self] != wantSelf {
				t.Errorf("max_depth %d depth %d: conductor (Model %d) offered=%v, want %v", maxDepth, depth, self, offered[self], wantSelf)
			}
			for i := range c.cfg.Pool {
				plan, err := ParsePlan(fmt.Sprintf("model_id = [%d]\nsubtasks = [\"Answer.\"]\naccess_list = [[]]", i))
				if err != nil {
					t.Fatal(err)
				}
				_, err = c.resolveAt(plan, depth)
				if accepted := err == nil; accepted != offered[i] {
					t.Errorf("max_depth %d depth %d Model %d: menu offers %v, validator accepts %v (%v)", maxDepth, depth, i, offered[i], accepted, err)
				}
			}
		}
	}
}

// At the depth cap the recursive call's prompt no longer lists the conductor.
func TestRecursiveCallAtCapHidesConductor(t *testing.T) {
	inner := "model_id = [7]\nsubtasks = [\"Check again.\"]\naccess_list = [\"all\"]"
	srv, p := recursivePool(t, inner, nil) // max_depth 2
	p.Run(context.Background(), userRequest("What is 6 times 7?"), store.ModeCandidate)
	calls := srv.RequestsFor("conductor")
	if len(calls) != 3 {
		t.Fatalf("%d conductor calls, want 3 (depth 0, 1, 2)", len(calls))
	}
	for depth, want := range []bool{true, true, false} {
		msgs := calls[depth].Decoded.Messages
		if got := strings.Contains(msgs[1].Content, "Model 7: conductor"); got != want {
			t.Errorf("call planning depth %d lists the conductor: %v, want %v", depth, got, want)
		}
	}
}
