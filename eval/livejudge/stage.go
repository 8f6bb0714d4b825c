package livejudge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/conductor-shadow/conductor-shadow/eval"
	"github.com/conductor-shadow/conductor-shadow/eval/gate"
	"github.com/conductor-shadow/conductor-shadow/ingest"
	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// Comparer judges one live pair in both orders: *judge.Pairwise (judge.New).
type Comparer interface {
	Compare(ctx context.Context, prompt, incumbent, candidate string) eval.PairJudgment
}

// Deps are what the stage works with.
type Deps struct {
	// Judge judges the pairs: judge.New over CappedCaller(pool,
	// Config.MaxOutputTokens), so every call's max_tokens bounds its cost.
	Judge Comparer
	// Worker is the judge worker's configuration: its name and model are
	// stored on every row, its list price bounds each judgment's cost.
	Worker shadow.WorkerConfig
	// Key keys the sample's draw (Draw); share it between every process
	// that judges the same traffic (the PII key does).
	Key []byte
	// Live finds a pair's stored row (LiveJudged), so a re-delivered pair is
	// never judged twice, and reads today's spend at Start (the budget
	// survives a restart). Required.
	Live store.LiveJudgmentReader
	// Traces reads the incumbent run of a pair whose delivery carried no
	// answer (ingest.LivePair.Incumbent nil); nil: such pairs are stored
	// unjudged (no_incumbent).
	Traces store.TraceReader
	// Events exports each stored judgment as a gen_ai.evaluation.result
	// event; nil: none.
	Events *Events
	Log    *slog.Logger
	Now    func() time.Time // the clock of the budget and the rows; nil: time.Now
}

// Decisions of a live pair (Stats.Decisions, the metrics' decision label).
const (
	DecisionUnsampled        = "unsampled"         // its draw is above the configured share
	DecisionPaced            = "paced"             // below the share, above the paced probability: budget pacing left it out
	DecisionJudged           = "judged"            // the judge was asked, both orders
	DecisionDecided          = "decided"           // a run had no answer: decided without the judge (a candidate without one loses)
	DecisionAlreadyJudged    = "already_judged"    // a row of this pair was stored before (a re-delivery): not judged twice
	DecisionCandidateSkipped = "candidate_skipped" // the candidate run was skipped by the daily shadow cap: there is no pair
	DecisionUnjudgedBudget   = "unjudged_budget"   // sampled; its upper-bound cost did not fit in today's budget
	DecisionUnjudgedQueue    = "unjudged_queue_full"
	DecisionUnjudgedStopped  = "unjudged_stopped"      // sampled; the process stopped before the judge answered
	DecisionUnjudgedNoInc    = "unjudged_no_incumbent" // sampled; the incumbent run could not be read
)

// Reasons a sampled pair's row was lost (Stats.Dropped).
const (
	DropWriteFailed  = "write_failed"  // the store writer did not take the row
	DropForgotten    = "forgotten"     // the request's data subject was forgotten meanwhile
	DropLookupFailed = "lookup_failed" // the store could not say whether the pair was judged before
	DropStopped      = "stopped"       // offered after Shutdown
)

// Stage is live judging's own bounded stage, fed by the shadow workers
// (ingest.PairSink): Offer decides at once whether a pair is sampled and
// queues it; Config.Concurrency workers judge the queue and write each row
// through the pair's Write (pseudonymized, like every record). Start and
// Shutdown as every long-running part.
type Stage struct {
	cfg    Config
	d      Deps
	budget *Budget
	log    *slog.Logger
	queue  chan task

	mu      sync.Mutex
	started bool
	stopped bool
	cancel  context.CancelFunc
	runCtx  context.Context
	wg      sync.WaitGroup

	countMu   sync.Mutex
	decisions map[string]int64
	dropped   map[string]int64
	offered   atomic.Int64
	calls     atomic.Int64
	lastProb  atomic.Uint64 // math.Float64bits of the last probability used
}

type task struct {
	pair ingest.LivePair
	p    float64
}

// New returns a stage; cfg must Validate and be Enabled, deps carry a judge,
// a key and both store readers.
func New(cfg Config, d Deps) (*Stage, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var errs []error
	if !cfg.Enabled() {
		errs = append(errs, errors.New("livejudge: judge.live.share is 0: nothing to judge"))
	}
	if d.Judge == nil {
		errs = append(errs, errors.New("livejudge: no judge"))
	}
	if len(d.Key) == 0 {
		errs = append(errs, errors.New("livejudge: no sampling key"))
	}
	if d.Live == nil {
		errs = append(errs, fmt.Errorf("livejudge: %w", store.NotSupported("store.LiveJudgmentReader")))
	}
	if d.Worker.Name == "" {
		errs = append(errs, errors.New("livejudge: no judge worker"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	s := &Stage{cfg: cfg, d: d, budget: NewBudget(cfg.DailyBudgetUSD, d.Now), log: d.Log,
		queue: make(chan task, cfg.QueueSize), decisions: map[string]int64{}, dropped: map[string]int64{}}
	s.lastProb.Store(math.Float64bits(cfg.Share))
	return s, nil
}

// Start reads today's live judge spend from the store (the budget is not
// reset by a restart) and starts Config.Concurrency judging workers. ctx
// bounds the read; the workers run until Shutdown.
func (s *Stage) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.stopped {
		return errors.New("livejudge: start: already started or stopped")
	}
	day, err := s.d.Live.LiveJudgeDay(ctx, s.d.Now())
	if err != nil {
		return fmt.Errorf("livejudge: start: read today's judge spend: %w", err)
	}
	s.budget.Restore(day)
	s.runCtx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	for range s.cfg.Concurrency {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			for t := range s.queue {
				s.judge(t)
			}
		}()
	}
	s.started = true
	s.log.Info("live judging started", "share", s.cfg.Share, "daily_budget_usd", s.cfg.DailyBudgetUSD,
		"spent_today_usd", day.CostUSD, "judge", s.d.Worker.Name, "concurrency", s.cfg.Concurrency)
	return nil
}

// Shutdown stops taking pairs and lets the workers judge what is queued
// until half of ctx's time is left; then it cancels the judgments under way
// and stores every pair still owed as unjudged ("stopped"): a stop leaves no
// half judgment, and no sampled pair without a row. Safe without Start and
// twice.
func (s *Stage) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return nil
	}
	s.stopped = true
	started := s.started
	if started {
		close(s.queue)
	}
	s.mu.Unlock()
	if !started {
		return nil
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	drain, cancel := context.WithCancel(ctx)
	if dl, ok := ctx.Deadline(); ok {
		drain, cancel = context.WithDeadline(ctx, dl.Add(-time.Until(dl)/2))
	}
	defer cancel()
	select {
	case <-done:
	case <-drain.Done():
		s.cancel() // judgments under way end as "stopped"; the queue is drained as "stopped"
		<-done
	}
	s.cancel()
	return nil
}

// Offer implements ingest.PairSink: it draws the pair and either counts it
// as not sampled or queues it, never waiting for a judging slot.
func (s *Stage) Offer(_ context.Context, pair ingest.LivePair) {
	s.offered.Add(1)
	cand := pair.Candidate
	if cand.Status == store.StatusSkipped {
		s.count(DecisionCandidateSkipped)
		return
	}
	inc := ""
	if pair.Incumbent != nil {
		inc = pair.Incumbent.FinalOutput
	} else {
		inc = cand.FinalOutput
	}
	p := s.budget.Probability(s.cfg.Share, UpperBoundUSD(s.d.Worker.Price(), PromptOf(pair.Exchange.Request.Messages), inc, cand.FinalOutput, s.cfg.MaxOutputTokens))
	s.lastProb.Store(math.Float64bits(p))
	u := Draw(s.d.Key, pair.Exchange.RequestID, cand.Pipeline, cand.PipelineVersion)
	switch {
	case u >= s.cfg.Share:
		s.count(DecisionUnsampled)
		return
	case u >= p:
		s.count(DecisionPaced)
		return
	}
	s.mu.Lock()
	running, queued := s.started && !s.stopped, false
	if running {
		select {
		case s.queue <- task{pair: pair, p: p}:
			queued = true
		default:
		}
	}
	s.mu.Unlock()
	switch {
	case !running:
		s.drop(DropStopped, pair, "offered while live judging is stopped")
	case !queued:
		s.unjudged(task{pair: pair, p: p}, pair.Incumbent, DecisionUnjudgedQueue,
			fmt.Sprintf("queue_full: %d sampled pairs were waiting for a judge (judge.live.queue_size)", s.cfg.QueueSize), eval.PairJudgment{})
	}
}

// judge is one worker's handling of a sampled pair: its incumbent run, the
// check for an earlier row, a decision without the judge when a run has no
// answer, the budget, the judge, the row and its event.
func (s *Stage) judge(t task) {
	ctx := s.runCtx
	cand := t.pair.Candidate
	if ctx.Err() != nil {
		s.unjudged(t, t.pair.Incumbent, DecisionUnjudgedStopped, "stopped: the process stopped before the pair was judged", eval.PairJudgment{})
		return
	}
	inc, err := s.incumbent(ctx, t.pair)
	if err != nil {
		s.unjudged(t, nil, DecisionUnjudgedNoInc, "no_incumbent: "+err.Error(), eval.PairJudgment{})
		return
	}
	if seen, err := s.judgedBefore(ctx, t.pair); err != nil {
		s.drop(DropLookupFailed, t.pair, err.Error())
		return
	} else if seen {
		s.count(DecisionAlreadyJudged)
		return
	}
	if outcome, why, ok := eval.DecideWithoutJudge(*inc, cand, gate.TruncationFail); ok {
		row := s.row(t, inc, eval.PairJudgment{Outcome: outcome})
		row.Note = why
		s.write(t, row, DecisionDecided)
		return
	}
	prompt := PromptOf(t.pair.Exchange.Request.Messages)
	upper := UpperBoundUSD(s.d.Worker.Price(), prompt, inc.FinalOutput, cand.FinalOutput, s.cfg.MaxOutputTokens)
	if !s.budget.Reserve(upper) {
		b := s.budget.Snapshot()
		s.unjudged(t, inc, DecisionUnjudgedBudget, fmt.Sprintf("budget: the judgment could cost up to %.6g USD; %.6g of the %.6g USD daily judge budget are spent or reserved",
			upper, b.SpentUSD+b.ReservedUSD, b.DailyUSD), eval.PairJudgment{})
		return
	}
	j := s.d.Judge.Compare(ctx, prompt, inc.FinalOutput, cand.FinalOutput)
	s.calls.Add(int64(j.Usage.Calls))
	s.budget.Settle(upper, j.Usage.CostUSD, true)
	if ctx.Err() != nil {
		// Cut by the stop: what the calls cost is recorded, no verdict is.
		s.unjudged(t, inc, DecisionUnjudgedStopped, "stopped: the process stopped while the judge was asked; no verdict is kept", eval.PairJudgment{Usage: j.Usage})
		return
	}
	s.write(t, s.row(t, inc, j), DecisionJudged)
}

// incumbent is the pair's incumbent run: the delivery's, else the stored one.
func (s *Stage) incumbent(ctx context.Context, pair ingest.LivePair) (*store.Run, error) {
	if pair.Incumbent != nil {
		return pair.Incumbent, nil
	}
	if s.d.Traces == nil {
		return nil, fmt.Errorf("the delivery carried no incumbent answer and the store cannot read traces: %w", store.NotSupported("store.TraceReader"))
	}
	tr, err := s.d.Traces.GetTrace(ctx, pair.Exchange.RequestID)
	if err != nil {
		return nil, fmt.Errorf("read the incumbent run: %w", err)
	}
	for _, r := range tr.Runs {
		if r.Mode == store.ModeIncumbent && r.SuiteRunID == "" {
			return &r, nil
		}
	}
	return nil, errors.New("the trace has no incumbent run")
}

// judgedBefore reports whether the pair has a stored live row of this judge
// worker (any outcome): a re-delivered exchange whose candidate ran again.
func (s *Stage) judgedBefore(ctx context.Context, pair ingest.LivePair) (bool, error) {
	seen, err := s.d.Live.LiveJudged(ctx, store.LivePairKey{RequestID: pair.Exchange.RequestID, Pipeline: pair.Candidate.Pipeline,
		CandidateRunID: pair.Candidate.RunID, JudgeWorker: s.d.Worker.Name})
	if err != nil {
		return false, fmt.Errorf("look up the pair's judgment: %w", err)
	}
	return seen, nil
}

// row is the stored row of j for t: the live pair's ids, the probability it
// was sampled with, the judge worker's configured model as the judge (one
// key per judge across the dated snapshots an API answers with).
func (s *Stage) row(t task, inc *store.Run, j eval.PairJudgment) store.Judgment {
	if j.Usage.Worker == "" {
		j.Usage.Worker = s.d.Worker.Name
	}
	cand := t.pair.Candidate
	meta := eval.JudgmentMeta{RequestID: t.pair.Exchange.RequestID, Pipeline: cand.Pipeline, PipelineVersion: cand.PipelineVersion,
		CandidateRun: cand.RunID, InclusionProb: t.p}
	if inc != nil {
		meta.IncumbentPipeline, meta.IncumbentRun = inc.Pipeline, inc.RunID
	}
	row := j.Record(meta)
	row.Judge, row.JudgeWorker = s.judgeModel(), s.d.Worker.Name
	row.JudgedAt = s.d.Now().UTC().Truncate(time.Millisecond)
	return row
}

func (s *Stage) judgeModel() string {
	if s.d.Worker.Model != "" {
		return s.d.Worker.Model
	}
	return s.d.Worker.Name
}

// unjudged stores a sampled pair that was not judged, with the reason.
func (s *Stage) unjudged(t task, inc *store.Run, decision, note string, j eval.PairJudgment) {
	j.Outcome = store.JudgmentUnjudged
	row := s.row(t, inc, j)
	row.Note = note
	s.write(t, row, decision)
}

// write stores row through the pair's Write (on a context the stop does not
// cancel, bounded to 30 s), counts decision, and exports the event.
func (s *Stage) write(t task, row store.Judgment, decision string) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx()), 30*time.Second)
	defer cancel()
	if err := t.pair.Write(wctx, []store.Judgment{row}); err != nil {
		reason := DropWriteFailed
		if errors.Is(err, ingest.ErrForgotten) {
			reason = DropForgotten
		}
		s.drop(reason, t.pair, err.Error())
		return
	}
	s.count(decision)
	if s.d.Events != nil && row.Outcome != store.JudgmentUnjudged {
		s.d.Events.Emit(wctx, t.pair.Span, row)
	}
}

func (s *Stage) ctx() context.Context {
	if s.runCtx != nil {
		return s.runCtx
	}
	return context.Background()
}

func (s *Stage) count(decision string) {
	s.countMu.Lock()
	s.decisions[decision]++
	s.countMu.Unlock()
}

func (s *Stage) drop(reason string, pair ingest.LivePair, why string) {
	s.countMu.Lock()
	s.dropped[reason]++
	n := s.dropped[reason]
	s.countMu.Unlock()
	s.log.Warn("live judging: a sampled pair's row was not stored", "reason", reason, "request_id", pair.Exchange.RequestID,
		"candidate", pair.Candidate.Pipeline, "err", why, "dropped_total", n)
}

// Stats are the stage's counters since New, and the budget's state.
type Stats struct {
	Share   float64 `json:"share"`   // configured
	Offered int64   `json:"offered"` // live pairs handed in
	// Decisions counts pairs by decision (Decision*); Dropped sampled pairs
	// whose row was lost, by reason (Drop*).
	Decisions map[string]int64 `json:"decisions"`
	Dropped   map[string]int64 `json:"dropped"`
	Calls     int64            `json:"calls"`     // judge calls made
	Queued    int              `json:"queued"`    // sampled pairs waiting for a slot
	LastProb  float64          `json:"last_prob"` // the inclusion probability of the last pair offered
	Budget    BudgetSnapshot   `json:"budget"`    // today's spend against the daily judge budget
	Worker    string           `json:"judge"`     // the judge worker
}

// Stats returns the stage's counters.
func (s *Stage) Stats() Stats {
	s.countMu.Lock()
	defer s.countMu.Unlock()
	out := Stats{Share: s.cfg.Share, Offered: s.offered.Load(), Decisions: map[string]int64{}, Dropped: map[string]int64{},
		Calls: s.calls.Load(), Queued: len(s.queue), LastProb: math.Float64frombits(s.lastProb.Load()), Budget: s.budget.Snapshot(), Worker: s.d.Worker.Name}
	for k, v := range s.decisions {
		out.Decisions[k] = v
	}
	for k, v := range s.dropped {
		out.Dropped[k] = v
	}
	return out
}

// Sampled is how many pairs were sampled (every decision but unsampled,
// paced and candidate_skipped) plus those whose row was lost.
func (st Stats) Sampled() int64 {
	var n int64
	for k, v := range st.Decisions {
		if k != DecisionUnsampled && k != DecisionPaced && k != DecisionCandidateSkipped {
			n += v
		}
	}
	for k, v := range st.Dropped {
		if k != DropStopped {
			n += v
		}
	}
	return n
}

// Detail is the stage's line in /readyz's detail: share, today's spend, and
// what was left unjudged or lost.
func (st Stats) Detail() string {
	s := fmt.Sprintf("judge %s, share %.3g (last p %.3g): %d of %d pairs sampled, %d judged, %d decided without the judge; %.4g of %.4g USD today",
		st.Worker, st.Share, st.LastProb, st.Sampled(), st.Offered, st.Decisions[DecisionJudged], st.Decisions[DecisionDecided], st.Budget.SpentUSD, st.Budget.DailyUSD)
	if n := st.Decisions[DecisionPaced]; n > 0 {
		s += fmt.Sprintf("; %d paced out by the budget", n)
	}
	for _, k := range []string{DecisionUnjudgedBudget, DecisionUnjudgedQueue, DecisionUnjudgedStopped, DecisionUnjudgedNoInc} {
		if n := st.Decisions[k]; n > 0 {
			s += fmt.Sprintf("; %s %d", k, n)
		}
	}
	for _, k := range []string{DropWriteFailed, DropForgotten, DropLookupFailed, DropStopped} {
		if n := st.Dropped[k]; n > 0 {
			s += fmt.Sprintf("; dropped %s %d", k, n)
		}
	}
	return s
}

var _ ingest.PairSink = (*Stage)(nil)
