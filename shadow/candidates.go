package shadow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// Candidate kinds (CandidateConfig.Kind). Adding a kind: its constant here,
// its shape in Validate, its default name in CandidateName when not
// "<kind>:<workers>", and how it is built in NewPipeline (a fixed workflow:
// plan).
const (
	KindConductor  = "conductor"   // the learned planner: the conductor model (Config.Conductor) writes a workflow per request
	KindSingle     = "single"      // one model answers the request as it is
	KindMoA        = "moa"         // Mixture-of-Agents: n proposers, then an aggregator
	KindSelfRefine = "self_refine" // one model answers, then k rounds of feedback + refinement
	KindChain      = "chain"       // a fixed chain of steps, as teams hard-code today
	KindBlackBox   = "blackbox"    // one call to an OpenAI-compatible orchestrator API (e.g. Fugu)
)

// DefaultRefineRounds is the self-refine rounds when CandidateConfig.Rounds is 0.
const DefaultRefineRounds = 2

// Prompts of the fixed candidates; {question} is replaced with the request's
// question (see questionText).
const (
	moaProposerPrompt    = "{question}"
	moaAggregatorPrompt  = "You have been given responses from several models to the request below. Synthesize them into a single, high-quality answer: critically weigh the responses, keep what is correct, fix what is wrong, and give the final answer in the form the request asks for.\n\nRequest:\n{question}"
	refineAnswerPrompt   = "{question}"
	refineFeedbackPrompt = "Review the answer above to the request below. List concrete problems (errors, gaps, unclear parts) and how to fix them; do not rewrite the answer.\n\nRequest:\n{question}"
	refineImprovePrompt  = "Rewrite the answer above, applying the feedback, and give the complete final answer in the form the request asks for.\n\nRequest:\n{question}"
	chainDefaultFirst    = "{question}"
	chainDefaultNext     = "Improve the answer above and give the complete final answer to the request below.\n\nRequest:\n{question}"
)

// CandidateConfig is one candidate pipeline configured in YAML.
type CandidateConfig struct {
	// Name is the pipeline name stored on its runs; default "<kind>:<workers
	// joined by +>" (moa: proposers, then ">" and the aggregator; the
	// conductor: ConductorPipelineName, its only name).
	Name string `yaml:"name"`
	// Kind is one of KindConductor, KindSingle, KindMoA, KindSelfRefine,
	// KindChain, KindBlackBox.
	Kind string `yaml:"kind"`
	// Workers are pool worker names: single, self_refine and blackbox take
	// exactly one; moa takes the proposers (at least 2); chain takes the workers
	// of its steps in order when Steps is empty (each later step sees every
	// earlier one and is asked to improve the answer).
	Workers []string `yaml:"workers"`
	// Aggregator is the moa worker that combines the proposals.
	Aggregator string `yaml:"aggregator"`
	// Rounds is the self_refine rounds, each one feedback and one refinement call
	// (default DefaultRefineRounds).
	Rounds int `yaml:"rounds"`
	// Steps spells out a chain: each step's worker, prompt ({question} is
	// replaced with the request's question) and access list ("all", "[]" or
	// "[0, 2]"; default "all").
	Steps []ChainStep `yaml:"steps"`

	// short: read from the short form "single:<worker>" (ParseCandidate),
	// which keeps the version that form always had (NewSingle's).
	short bool
}

// ParseCandidate reads a candidate's short form (pipelines.candidates):
// "conductor" or "single:<worker>".
func ParseCandidate(s string) (CandidateConfig, error) {
	if s == ConductorPipelineName {
		return CandidateConfig{Kind: KindConductor}, nil
	}
	if w, ok := strings.CutPrefix(s, KindSingle+":"); ok && w != "" {
		return CandidateConfig{Kind: KindSingle, Workers: []string{w}, short: true}, nil
	}
	return CandidateConfig{}, fmt.Errorf("candidate %q: want \"conductor\" or \"single:<worker>\"", s)
}

// CheckWorkers reports what c names that cfg lacks: a worker not in
// cfg.Workers, or, for the conductor, no cfg.Conductor.Worker.
func (c CandidateConfig) CheckWorkers(cfg Config) error {
	var errs []error
	if c.Kind == KindConductor && cfg.Conductor.Worker == "" {
		errs = append(errs, errors.New("the conductor needs shadow.conductor.worker"))
	}
	for _, w := range c.workers() {
		if _, ok := cfg.Worker(w); !ok {
			errs = append(errs, fmt.Errorf("worker %q is not in shadow.workers", w))
		}
	}
	return errors.Join(errs...)
}

// ChainStep is one step of a fixed chain.
type ChainStep struct {
	Worker string `yaml:"worker"`
	Prompt string `yaml:"prompt"`
	Access string `yaml:"access"`
}

// CandidateName is the pipeline name: Name, or the default (see CandidateConfig).
func (c CandidateConfig) CandidateName() string {
	if c.Name != "" {
		return c.Name
	}
	switch c.Kind {
	case KindConductor:
		return ConductorPipelineName
	case KindMoA:
		return c.Kind + ":" + strings.Join(c.Workers, "+") + ">" + c.Aggregator
	case KindChain:
		if len(c.Steps) > 0 {
			ws := make([]string, len(c.Steps))
			for i, s := range c.Steps {
				ws[i] = s.Worker
			}
			return c.Kind + ":" + strings.Join(ws, ">")
		}
		return c.Kind + ":" + strings.Join(c.Workers, ">")
	}
	return c.Kind + ":" + strings.Join(c.Workers, "+")
}

// Validate checks the candidate's shape (not whether its workers exist: see
// NewPipeline), reporting every problem at once.
func (c CandidateConfig) Validate() error {
	var errs []error
	one := func() {
		if len(c.Workers) != 1 {
			errs = append(errs, fmt.Errorf("workers: %s takes exactly one worker, got %d", c.Kind, len(c.Workers)))
		}
	}
	switch c.Kind {
	case KindConductor:
		if len(c.Workers) > 0 || c.Aggregator != "" || len(c.Steps) > 0 {
			errs = append(errs, errors.New("workers: the conductor takes none here: its model and pool are shadow.conductor's"))
		}
		if c.Name != "" && c.Name != ConductorPipelineName {
			errs = append(errs, fmt.Errorf("name: the conductor is named %q", ConductorPipelineName))
		}
	case KindSingle, KindBlackBox:
		one()
	case KindSelfRefine:
		one()
		if c.Rounds < 0 {
			errs = append(errs, fmt.Errorf("rounds: must be >= 0 (0: default %d), got %d", DefaultRefineRounds, c.Rounds))
		}
	case KindMoA:
		if len(c.Workers) < 2 {
			errs = append(errs, fmt.Errorf("workers: moa takes at least 2 proposers, got %d", len(c.Workers)))
		}
		if c.Aggregator == "" {
			errs = append(errs, errors.New("aggregator: required for moa"))
		}
	case KindChain:
		if len(c.Steps) == 0 && len(c.Workers) == 0 {
			errs = append(errs, errors.New("steps or workers: a chain needs at least one step"))
		}
		if len(c.Steps) > 0 {
			if _, err := c.chainPlan("q"); err != nil {
				errs = append(errs, err)
			}
		}
	case "":
		errs = append(errs, errors.New("kind: required"))
	default:
		errs = append(errs, fmt.Errorf("kind: %q is not one of conductor, single, moa, self_refine, chain, blackbox", c.Kind))
	}
	for i, w := range c.Workers {
		if w == "" {
			errs = append(errs, fmt.Errorf("workers[%d]: empty name", i))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("candidate %q: %w", c.CandidateName(), err)
	}
	return nil
}

// ValidateCandidates validates each candidate and that their names are unique
// (also against reserved, e.g. the string candidates configured elsewhere).
func ValidateCandidates(cs []CandidateConfig, reserved ...string) error {
	var errs []error
	seen := map[string]bool{}
	for _, r := range reserved {
		seen[r] = true
	}
	for i, c := range cs {
		if err := c.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("candidate_pipelines[%d]: %w", i, err))
		}
		if n := c.CandidateName(); seen[n] {
			errs = append(errs, fmt.Errorf("candidate_pipelines[%d]: name %q is used twice", i, n))
		} else {
			seen[n] = true
		}
	}
	return errors.Join(errs...)
}

// Callable returns every worker c may call over cfg's pool: the conductor
// its planner (cfg.Conductor.Worker) and any worker of the pool, the other
// kinds the workers they name. Unknown to the pool or not, in order, with
// repeats.
func (c CandidateConfig) Callable(cfg Config) []string {
	if c.Kind == KindConductor {
		out := []string{cfg.Conductor.Worker}
		for _, w := range cfg.Workers {
			out = append(out, w.Name)
		}
		return out
	}
	return c.workers()
}

// workers returns every worker the candidate calls.
func (c CandidateConfig) workers() []string {
	out := append([]string{}, c.Workers...)
	if c.Aggregator != "" {
		out = append(out, c.Aggregator)
	}
	for _, s := range c.Steps {
		out = append(out, s.Worker)
	}
	return out
}

// plan builds the fixed workflow of a moa, self_refine or chain candidate for
// question q.
func (c CandidateConfig) plan(q string) (Plan, error) {
	fill := func(tmpl string) string { return strings.ReplaceAll(tmpl, "{question}", q) }
	var p Plan
	add := func(worker, prompt string, a Access) {
		p.Steps = append(p.Steps, PlanStep{Worker: worker, ModelID: -1, Subtask: fill(prompt), Access: a})
	}
	switch c.Kind {
	case KindMoA:
		for _, w := range c.Workers {
			add(w, moaProposerPrompt, AccessSteps())
		}
		add(c.Aggregator, moaAggregatorPrompt, AccessAll())
	case KindSelfRefine:
		rounds := c.Rounds
		if rounds == 0 {
			rounds = DefaultRefineRounds
		}
		w := c.Workers[0]
		add(w, refineAnswerPrompt, AccessSteps())
		for r := range rounds {
			answer := 2 * r // the latest answer's step
			add(w, refineFeedbackPrompt, AccessSteps(answer))
			add(w, refineImprovePrompt, AccessSteps(answer, answer+1))
		}
	case KindChain:
		return c.chainPlan(q)
	default:
		return Plan{}, fmt.Errorf("shadow: candidate kind %q has no fixed workflow", c.Kind)
	}
	return p, nil
}

// chainPlan is the chain's workflow: Steps as configured, or Workers in order.
func (c CandidateConfig) chainPlan(q string) (Plan, error) {
	steps := c.Steps
	if len(steps) == 0 {
		for i, w := range c.Workers {
			prompt := chainDefaultNext
			if i == 0 {
				prompt = chainDefaultFirst
			}
			steps = append(steps, ChainStep{Worker: w, Prompt: prompt})
		}
	}
	var p Plan
	for i, s := range steps {
		a := AccessAll()
		if s.Access != "" && s.Access != "all" {
			if err := json.Unmarshal([]byte(s.Access), &a); err != nil {
				return Plan{}, fmt.Errorf("steps[%d].access: %q: want \"all\", \"[]\" or a list of earlier step indices", i, s.Access)
			}
		}
		if s.Worker == "" || strings.TrimSpace(s.Prompt) == "" {
			return Plan{}, fmt.Errorf("steps[%d]: worker and prompt are required", i)
		}
		p.Steps = append(p.Steps, PlanStep{Worker: s.Worker, ModelID: -1,
			Subtask: strings.ReplaceAll(s.Prompt, "{question}", q), Access: a})
	}
	if _, err := checkStructure(p); err != nil {
		return Plan{}, fmt.Errorf("steps: %w", err)
	}
	return p, nil
}

// NewPipeline builds the candidate c over pool: every kind, one factory. The
// conductor is NewConductor with the pool's Config().Conductor; single is a
// single call (NewSingle when read from its short form); blackbox is
// one call of the orchestrator's worker (configure it in the pool with the
// orchestrator's base URL, model and prices; Fugu's orchestration usage is
// priced), recorded as one step of role "orchestrator"; moa, self_refine and
// chain run a fixed workflow through the same executor as the conductor's plans
// (each step sees only its prompt and the steps its access list names). Errors:
// c invalid, or a worker not in the pool (ErrUnknownWorker).
func NewPipeline(pool *Pool, c CandidateConfig) (Pipeline, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("shadow: new pipeline: %w", err)
	}
	for _, w := range c.workers() {
		if _, ok := pool.Worker(w); !ok {
			return nil, fmt.Errorf("shadow: new pipeline %q: worker %q: %w", c.CandidateName(), w, ErrUnknownWorker)
		}
	}
	switch {
	case c.Kind == KindConductor:
		return NewConductor(pool, pool.Config().Conductor)
	case c.Kind == KindSingle && c.short:
		return NewSingle(pool, c.Workers[0])
	}
	name := c.CandidateName()
	version := versionHash(struct {
		Kind, Candidate, Workers any
	}{"candidate-v1", c, versionWorkers(pool, c.workers()...)})
	switch c.Kind {
	case KindSingle, KindBlackBox:
		w, _ := pool.Worker(c.Workers[0])
		role := RoleWorker
		if c.Kind == KindBlackBox {
			role = RoleOrchestrator
		}
		return &singlePipeline{pool: pool, worker: w, name: name, version: version, role: role}, nil
	}
	return &fixedPipeline{pool: pool, cfg: c, name: name, version: version}, nil
}

// RoleOrchestrator is the role of a black-box orchestrator's single call.
const RoleOrchestrator = "orchestrator"

// fixedPipeline runs a moa, self_refine or chain candidate.
type fixedPipeline struct {
	pool    *Pool
	cfg     CandidateConfig
	name    string
	version string
}

func (f *fixedPipeline) Name() string    { return f.name }
func (f *fixedPipeline) Version() string { return f.version }

// Run executes the candidate's workflow for the request's question (step k at
// Index k, role "worker"; Run.Plan holds the workflow as JSON). The final output
// is the last step's response; a failed step makes the status error.
func (f *fixedPipeline) Run(ctx context.Context, req Request, mode string) Result {
	r := newRunRecorder(f.name, f.version, mode, req)
	q := questionText(req.Messages)
	if q == "" {
		r.fail(store.StatusError, ErrNoUserMessage)
		return r.result()
	}
	plan, err := f.cfg.plan(q)
	if err != nil {
		r.fail(store.StatusError, err)
		return r.result()
	}
	r.run.Plan = plan.JSON()
	results := ExecuteWithMedia(ctx, f.pool, plan, MediaParts(req.Messages))
	var failed []string
	for _, sr := range results {
		w, _ := f.pool.Worker(sr.Step.Worker)
		r.add(stepInput{role: RoleWorker, worker: sr.Step.Worker, model: w.Model,
			subtask: sr.Step.Subtask, access: sr.Step.Access.String(), msgs: sr.Messages}, sr.Call, sr.Status, sr.Err)
		if sr.Status == store.StatusError {
			failed = append(failed, sr.Err.Error())
		}
	}
	if last := results[len(results)-1]; last.Status == store.StatusOK {
		r.run.FinalOutput = last.Response
	}
	if len(failed) > 0 {
		r.fail(store.StatusError, joinErrors(failed))
	}
	return r.result()
}

// questionText is what the fixed candidates' prompts call {question}: the last
// user message's text, preceded by the earlier turns as "[role]\ntext" lines when
// the conversation has any. Empty when there is no user message.
func questionText(msgs []openai.ChatCompletionMessage) string {
	last := lastUserIndex(msgs)
	if last < 0 {
		return ""
	}
	if last == 0 {
		return MessageText(msgs[0])
	}
	var b strings.Builder
	b.WriteString("Earlier turns of the conversation:\n")
	for _, m := range msgs[:last] {
		fmt.Fprintf(&b, "[%s]\n%s\n", m.Role, MessageText(m))
	}
	b.WriteString("\nQuestion:\n")
	b.WriteString(MessageText(msgs[last]))
	return b.String()
}

var _ Pipeline = (*fixedPipeline)(nil)
