package eval

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/conductor-shadow/conductor-shadow/eval/gate"
	"github.com/conductor-shadow/conductor-shadow/ingest/segment"
	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/store/dataflow"
)

// DefaultConcurrency is the number of cases a suite run works on at once.
const DefaultConcurrency = 8

// Suite run statuses (store.SuiteRun.Status).
const (
	SuiteStatusRunning = "running"
	SuiteStatusDone    = "done"
	SuiteStatusError   = "error"
	// SuiteStatusCancelled: the caller's context was cancelled (a stop, such
	// as SIGTERM or a client hanging up, not a failure); Headline says how many
	// cases finished before the stop. Equal to store.StatusCancelled.
	SuiteStatusCancelled = store.StatusCancelled
)

// Config is the eval package's configuration.
type Config struct {
	// Concurrency is how many cases a suite run works on at once. Default 8.
	Concurrency int `yaml:"concurrency"`
	// Code configures the code grader.
	Code CodeConfig `yaml:"code"`
}

// NewDefaultConfig returns Concurrency 8 and NewDefaultCodeConfig.
func NewDefaultConfig() Config {
	return Config{Concurrency: DefaultConcurrency, Code: NewDefaultCodeConfig()}
}

// Validate reports a non-positive concurrency or a bad code config.
func (c Config) Validate() error {
	if c.Concurrency <= 0 {
		return fmt.Errorf("eval: config: concurrency must be > 0, got %d", c.Concurrency)
	}
	return c.Code.Validate()
}

// SuiteOptions tune one suite run. Zero values take the defaults.
type SuiteOptions struct {
	// SuiteRunID names the run; generated ("suite-<UTC time>-<random hex>") if empty.
	SuiteRunID string
	// Concurrency is how many cases run at once (default 8). Within a case the
	// incumbent and every candidate run at the same time.
	Concurrency int
	// Limit runs only the first Limit cases of the set; 0 runs all.
	Limit int
	// Progress, when set, gets a live bar (count, ETA, cost so far, errors) when
	// it is a terminal, else one line each time another 10% of cases is done.
	Progress io.Writer
	// progressBar forces (tests) the bar on or off; nil decides by terminal.
	progressBar *bool
	// Graders resolves a case's grader name; default GraderFor.
	Graders func(name string) (Grader, error)
	// Policy is the gate policy for the verdict; nil uses gate.NewDefaultPolicy().
	Policy *gate.Policy
	// Seed seeds the report's bootstraps; 0 derives it from the suite run id.
	Seed uint64
	// NoiseRun runs the incumbent a second time per case (A′, pipeline name
	// incumbent name + RerunSuffix, mode incumbent) for the noise floor.
	NoiseRun bool
	// ShiftWindow, when positive, is the report's shift window, the
	// ShiftWindow before the run finished: it adds a shift section (the set's
	// segment mix against the live traffic received in it; eval/shift, needs a
	// store with store.SegmentReader). The report's live section (Report.Live,
	// with SuiteStores.Live) does not depend on it: each candidate version's
	// live verdict covers its sequence since its shadowing started.
	ShiftWindow time.Duration
	// Canaries is how many canaries of each kind check the LLM judge of the
	// suite's judged cases, per candidate: identical answers (must tie), an
	// answer padded with its own repeated content (must not win) and, for
	// pairwise cases, a judged pair again with the labels swapped (must
	// agree). Each pairwise canary costs two judge calls (both orders), a
	// rubric canary one; 0 means DefaultCanaries.
	Canaries int
	// DataFlows, when set with a positive ShiftWindow, adds the record of
	// data flows of the report's live window (Report.DataFlows): every party
	// outside the platform that received data in it, this suite run's calls
	// included (dataflow.Build, which serve and the CLI hand in with the
	// configured recipients).
	DataFlows func(ctx context.Context, from, to time.Time) (*dataflow.Record, error)
	// LatencyScales, when set, is asked once the cases are done for the factors
	// the simulated pool scaled latencies by (shadow.Pool.SimulatedLatencyScales);
	// the report says so.
	LatencyScales func() []string
}

// RerunSuffix is appended to the incumbent's name for its A′ run.
const RerunSuffix = "#rerun"

// isIncumbent reports whether pipeline i (incumbent first) runs in mode
// incumbent: the incumbent and its A′ re-run.
func isIncumbent(i int, p shadow.Pipeline) bool {
	_, again := p.(rerun)
	return i == 0 || again
}

// rerun is the incumbent under another name, for the A′ run.
type rerun struct{ shadow.Pipeline }

func (r rerun) Name() string { return r.Pipeline.Name() + RerunSuffix }

// RunSuite sends every case of set (or the first opts.Limit) through the
// incumbent (mode store.ModeIncumbent) and each candidate (store.ModeCandidate),
// grades each run's final output with the case's grader, and stores everything:
// the suite run row (status "running" at start; "done" with Headline,
// ReportMarkdown and ReportJSON at the end, "error" with the failure in
// Headline, or "cancelled" when ctx was cancelled — a stop is not a failure —
// with the cases finished before the stop in Headline), the case snapshot, one store.Request per case (Source
// store.SourceSuite, RequestID SuiteRunID+"/"+case id), the runs, their steps and
// one store.Score per run. Finished cases are written in batches, requests
// before their runs: when SuiteFlushCases are buffered, when a case finishes
// and the oldest buffered one waited SuiteFlushInterval, and the rest when the
// last case is done or the suite stops.
// Pipelines' own failures are stored as failed runs and
// count against accuracy; they never stop the suite. A store error, an unknown
// grader, bad arguments or ctx cancellation stop it with an error.
//
// The report is computed from the runs and grades of this call (not read back
// from the store). It carries the paired statistics and gate verdict per
// candidate (Report.Analyze with opts.Policy, default gate.NewDefaultPolicy),
// the noise floor when opts.NoiseRun, and the regressions since the previous
// suite run of the same set and candidate (store.EvalHistory). The finished row also stores Verdict, GatePolicyVersion
// and ReportHTML. An invalid opts.Policy is rejected before anything is stored.
//
// It writes and reads through st (SuiteStores); a missing required role is an
// error wrapping store.ErrNotSupported naming it, before anything is stored;
// so is a missing st.Judgments when a case is graded pairwise (its
// judgments, and the canaries', are stored there).
//
// Cases graded pairwise are judged as pairs: each other pipeline's answer
// against the incumbent's, in both orders (PairJudge, judgeRunPair). After the
// cases, the suite's LLM judge answers opts.Canaries canaries of each kind
// per candidate (runCanaries); the report's Judging section and the judge
// rows of the gate table (gate.CheckJudge) rest on them.
//
// When st.Looks is set, each candidate's earlier looks of its
// group-sequential plan (same set name, incumbent, candidate version and
// policy version) are read before the analysis and this run's look is stored
// after it (gate.LooksGate); without it every run is its plan's first look.
func RunSuite(ctx context.Context, st SuiteStores, set *Set, incumbent shadow.Pipeline, candidates []shadow.Pipeline, opts SuiteOptions) (*Report, error) {
	r, err := newSuiteRunner(st, set, incumbent, candidates, opts)
	if err != nil {
		return nil, err
	}
	return r.run(ctx)
}

// SuiteStores are the store roles a suite run uses, resolved once where the
// program is wired (SuiteStoresOf(store.NewRoles(st))).
type SuiteStores struct {
	Traces   store.TraceWriter    // the cases' requests, runs, steps and scores
	Suites   store.SuiteWriter    // the suite run row and the case snapshot
	History  store.EvalHistory    // the previous suite run of the set and candidate
	Overview store.OverviewReader // shadow traffic per day for the sample-size advice
	// Segments is optional: without it a report asked for a shift section
	// says why it has none.
	Segments store.SegmentReader
	// Judgments is required only when a case is graded pairwise.
	Judgments store.JudgmentWriter
	// Looks is optional: it keeps the looks of each candidate's
	// group-sequential plan; without it every run is its plan's first look.
	Looks store.LookStore
	// Live is optional: without it the report's live section says why it
	// is missing.
	Live store.LiveReader
}

// SuiteStoresOf picks a suite run's roles out of r.
func SuiteStoresOf(r store.Roles) SuiteStores {
	return SuiteStores{Traces: r.TraceWriter, Suites: r.SuiteWriter, History: r.EvalHistory,
		Overview: r.OverviewReader, Segments: r.SegmentReader, Judgments: r.JudgmentWriter, Looks: r.LookStore, Live: r.LiveReader}
}

// check names the first required role st lacks.
func (st SuiteStores) check() error {
	for _, r := range []struct {
		name    string
		present bool
	}{{"store.TraceWriter", st.Traces != nil}, {"store.SuiteWriter", st.Suites != nil},
		{"store.EvalHistory", st.History != nil}, {"store.OverviewReader", st.Overview != nil}} {
		if !r.present {
			return store.NotSupported(r.name)
		}
	}
	return nil
}

type suiteRunner struct {
	traces    *caseWriter
	judgments store.JudgmentWriter // the canaries' judgments (the cases' go through traces)
	suites    store.SuiteWriter
	history   store.EvalHistory
	overview  store.OverviewReader
	live      store.LiveReader // the report's live section; nil: the section says why it is missing
	set       *Set
	cases     []Case
	pipelines []shadow.Pipeline // incumbent first
	graders   map[string]Grader
	opts      SuiteOptions
	row       store.SuiteRun
	segmenter *segment.Segmenter // segments of each case's prompt (no novelty: the set is its own vocabulary)
	// segments reads the live segment mix for the report's shift section; nil
	// with segmentsErr (store.ErrNotSupported) when the store has no such role.
	segments    store.SegmentReader
	segmentsErr error
	// looks keeps the group-sequential looks of (set, incumbent, candidate
	// version, policy version); nil when the store has none (every run is then
	// the first look of its plan, and the report says so).
	looks     store.LookStore
	casesDone int // cases finished (every pipeline run, graded, stored) when the run stopped
}

func newSuiteRunner(st SuiteStores, set *Set, incumbent shadow.Pipeline, candidates []shadow.Pipeline, opts SuiteOptions) (*suiteRunner, error) {
	if err := st.check(); err != nil {
		return nil, fmt.Errorf("eval: run suite: %w", err)
	}
	switch {
	case set == nil || len(set.Cases) == 0:
		return nil, errors.New("eval: run suite: empty regression set")
	case incumbent == nil:
		return nil, errors.New("eval: run suite: nil incumbent")
	case opts.Concurrency < 0:
		return nil, fmt.Errorf("eval: run suite: concurrency must be >= 0, got %d", opts.Concurrency)
	case opts.Limit < 0:
		return nil, fmt.Errorf("eval: run suite: limit must be >= 0, got %d", opts.Limit)
	case opts.Canaries < 0:
		return nil, fmt.Errorf("eval: run suite: canaries must be >= 0, got %d", opts.Canaries)
	}
	if opts.Canaries == 0 {
		opts.Canaries = DefaultCanaries
	}
	if opts.Concurrency == 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.Graders == nil {
		opts.Graders = GraderFor
	}
	if opts.SuiteRunID == "" {
		opts.SuiteRunID = NewSuiteRunID(time.Now())
	}
	if opts.Policy != nil {
		if err := opts.Policy.Validate(); err != nil {
			return nil, fmt.Errorf("eval: run suite: %w", err)
		}
	}
	pipelines := []shadow.Pipeline{incumbent}
	seen := map[string]bool{incumbent.Name(): true}
	names := make([]string, 0, len(candidates))
	for i, c := range candidates {
		if c == nil {
			return nil, fmt.Errorf("eval: run suite: candidate %d is nil", i)
		}
		if seen[c.Name()] {
			return nil, fmt.Errorf("eval: run suite: pipeline name %q used twice", c.Name())
		}
		seen[c.Name()] = true
		pipelines = append(pipelines, c)
		names = append(names, c.Name())
	}
	if opts.NoiseRun {
		if seen[incumbent.Name()+RerunSuffix] {
			return nil, fmt.Errorf("eval: run suite: pipeline name %q used twice", incumbent.Name()+RerunSuffix)
		}
		pipelines = append(pipelines, rerun{incumbent})
	}
	cases := set.Cases
	if opts.Limit > 0 && opts.Limit < len(cases) {
		cases = cases[:opts.Limit]
	}
	graders := map[string]Grader{}
	for _, c := range cases {
		if _, ok := graders[c.Grader]; ok {
			continue
		}
		g, err := opts.Graders(c.Grader)
		if err != nil {
			return nil, fmt.Errorf("eval: run suite: case %s: %w", c.ID, err)
		}
		graders[c.Grader] = g
	}
	// Pairwise judgments are stored in a table of their own (so are the
	// rubric judge's canaries, when the store has it).
	judgments := st.Judgments
	for _, g := range graders {
		if _, ok := g.(PairJudge); ok && judgments == nil {
			return nil, fmt.Errorf("eval: run suite: %w", store.NotSupported("store.JudgmentWriter"))
		}
	}
	return &suiteRunner{
		traces: &caseWriter{traces: st.Traces, judgments: judgments}, judgments: judgments, suites: st.Suites, history: st.History, overview: st.Overview, live: st.Live, set: set, cases: cases, pipelines: pipelines, graders: graders, opts: opts, segmenter: segment.New(nil),
		segments: st.Segments, looks: st.Looks,
		row: store.SuiteRun{
			SuiteRunID: opts.SuiteRunID,
			SetName:    set.Name,
			SetVersion: set.Version,
			Incumbent:  incumbent.Name(),
			Candidates: names,
			Status:     SuiteStatusRunning,
			Cases:      int32(len(cases)),
		},
	}, nil
}

// NewSuiteRunID returns "suite-<UTC time as 20060102T150405Z>-<8 random hex>".
func NewSuiteRunID(now time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "suite-" + now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

func (r *suiteRunner) run(ctx context.Context) (*Report, error) {
	r.row.StartedAt = time.Now().UTC()
	if err := r.suites.InsertSuiteRuns(ctx, []store.SuiteRun{r.row}); err != nil {
		return nil, fmt.Errorf("eval: run suite %s: insert suite run: %w", r.row.SuiteRunID, err)
	}
	snapshot := make([]store.Case, len(r.cases))
	for i, c := range r.cases {
		snapshot[i] = store.Case{
			SuiteRunID: r.row.SuiteRunID, SetName: r.set.Name, SetVersion: r.set.Version,
			CaseID: c.ID, Category: c.Category, Input: c.Input, Reference: c.Reference,
			Choices: c.Choices, Grader: c.Grader,
		}
		if len(c.Extra) > 0 {
			extra, err := json.Marshal(c.Extra)
			if err != nil {
				return nil, r.finishWithError(ctx, fmt.Errorf("eval: run suite %s: case %s: encode extra: %w", r.row.SuiteRunID, c.ID, err))
			}
			snapshot[i].Extra = string(extra)
		}
	}
	if err := r.suites.InsertCases(ctx, snapshot); err != nil {
		return nil, r.finishWithError(ctx, fmt.Errorf("eval: run suite %s: insert cases: %w", r.row.SuiteRunID, err))
	}

	prog := newProgress(r.opts.Progress, r.row.SuiteRunID, len(r.cases), r.opts.progressBar)
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	results := make([]*caseRecord, len(r.cases))
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range min(r.opts.Concurrency, len(r.cases)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				rec, err := r.runCase(runCtx, r.cases[i])
				if err == nil {
					err = r.traces.add(runCtx, rec.batch, rec.judgments)
				}
				if err != nil {
					cancel(err)
					continue
				}
				rec.batch, rec.judgments = store.Batch{}, nil // stored; the runs' answers stay for the canaries
				results[i] = rec
				prog.add(rec.outcomes)
			}
		}()
	}
feed:
	for i := range r.cases {
		select {
		case jobs <- i:
		case <-runCtx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	for _, o := range results {
		if o != nil {
			r.casesDone++
		}
	}
	if err := context.Cause(runCtx); err != nil {
		return nil, r.finishWithError(ctx, fmt.Errorf("eval: run suite %s: %w", r.row.SuiteRunID, err))
	}
	if err := r.traces.flush(ctx); err != nil {
		return nil, r.finishWithError(ctx, fmt.Errorf("eval: run suite %s: %w", r.row.SuiteRunID, err))
	}

	var outcomes []Outcome
	for _, rec := range results {
		outcomes = append(outcomes, rec.outcomes...)
	}
	canaries, err := r.runCanaries(ctx, results)
	if err != nil {
		return nil, r.finishWithError(ctx, fmt.Errorf("eval: run suite %s: %w", r.row.SuiteRunID, err))
	}
	r.row.FinishedAt = time.Now().UTC()
	versions := map[string]string{}
	for _, p := range r.pipelines {
		versions[p.Name()] = p.Version()
	}
	rep := BuildReport(ReportMeta{
		SuiteRunID: r.row.SuiteRunID, SetName: r.set.Name, SetVersion: r.set.Version,
		Incumbent: r.row.Incumbent, Candidates: r.row.Candidates,
		StartedAt: r.row.StartedAt, FinishedAt: r.row.FinishedAt, LatencyScales: r.latencyScales(), Versions: versions,
	}, outcomes)
	rep.Canaries = canaries
	rerunName := ""
	if r.opts.NoiseRun {
		rerunName = r.row.Incumbent + RerunSuffix
	}
	pol := gate.NewDefaultPolicy()
	if r.opts.Policy != nil {
		pol = *r.opts.Policy
	}
	previous, err := r.previousLooks(ctx, pol, versions)
	if err != nil {
		return nil, r.finishWithError(ctx, err)
	}
	if err := rep.Analyze(AnalysisOptions{Policy: r.opts.Policy, Seed: r.opts.Seed, Rerun: rerunName,
		ShadowCasesPerDay: shadowCasesPerDay(ctx, r.overview, r.row.FinishedAt), Looks: previous}); err != nil {
		return nil, r.finishWithError(ctx, err)
	}
	if err := r.storeLooks(ctx, rep); err != nil {
		return nil, r.finishWithError(ctx, err)
	}
	if err := rep.ComparePrevious(ctx, r.history); err != nil {
		return nil, r.finishWithError(ctx, err)
	}
	if r.opts.ShiftWindow > 0 {
		var err error
		if r.segments == nil {
			err = fmt.Errorf("eval: shift: %w", store.NotSupported("store.SegmentReader"))
		} else {
			rep.Shift, err = ShiftOf(ctx, r.segments, r.set, r.row.FinishedAt.Add(-r.opts.ShiftWindow), r.row.FinishedAt)
		}
		if err != nil {
			rep.ShiftError = err.Error()
		}
	}
	// The live verdicts of the run's candidate versions as of its end: each
	// version's one sequence since its shadowing started (no window).
	if rep.Policy != nil {
		pol = *rep.Policy
	}
	if pol.Quality != nil {
		var err error
		rep.Live, err = LiveVerdicts(ctx, r.live, LiveQuery{Candidates: rep.Candidates, Versions: rep.Versions, AsOf: r.row.FinishedAt}, pol)
		if err != nil {
			rep.LiveError = err.Error()
		}
	}
	if r.opts.ShiftWindow > 0 && r.opts.DataFlows != nil {
		var err error
		if rep.DataFlows, err = r.opts.DataFlows(ctx, r.row.FinishedAt.Add(-r.opts.ShiftWindow), r.row.FinishedAt); err != nil {
			rep.DataFlowsError = err.Error()
		}
	}
	js, err := rep.JSON()
	if err != nil {
		return nil, r.finishWithError(ctx, err)
	}
	page, err := rep.HTML()
	if err != nil {
		return nil, r.finishWithError(ctx, err)
	}
	r.row.ReportHTML = page
	r.row.Status = SuiteStatusDone
	r.row.Headline = rep.Headline
	r.row.ReportMarkdown = rep.Markdown()
	r.row.ReportJSON = string(js)
	r.row.Verdict = rep.Verdict
	r.row.GatePolicyVersion = rep.Policy.Version
	if err := r.suites.InsertSuiteRuns(ctx, []store.SuiteRun{r.row}); err != nil {
		return nil, fmt.Errorf("eval: run suite %s: insert finished suite run: %w", r.row.SuiteRunID, err)
	}
	return rep, nil
}

// lookKey names the group-sequential plan of candidate in this run.
func (r *suiteRunner) lookKey(pol gate.Policy, candidate, version string) store.LookKey {
	return store.LookKey{SetName: r.set.Name, Incumbent: r.row.Incumbent, Candidate: candidate, CandidateVersion: version, PolicyVersion: pol.Version}
}

// previousLooks reads each candidate's earlier looks (nil without a look
// store or with looks off).
func (r *suiteRunner) previousLooks(ctx context.Context, pol gate.Policy, versions map[string]string) (map[string][]gate.Look, error) {
	if r.looks == nil || pol.LookSpending() == gate.SpendingNone {
		return nil, nil
	}
	out := map[string][]gate.Look{}
	for _, cand := range r.row.Candidates {
		rows, err := r.looks.Looks(ctx, r.lookKey(pol, cand, versions[cand]))
		if err != nil {
			return nil, fmt.Errorf("eval: run suite %s: %w", r.row.SuiteRunID, err)
		}
		for _, l := range rows {
			out[cand] = append(out[cand], gate.Look{Index: int(l.Look), SuiteRunID: l.SuiteRunID, Cases: int(l.Cases), MaxCases: int(l.MaxCases),
				Fraction: l.Fraction, Boundary: l.Boundary, Confidence: l.Confidence})
		}
	}
	return out, nil
}

// storeLooks records each candidate's look of this run, unless it decided
// nothing (no more cases than the last look) or the verdict was withheld.
func (r *suiteRunner) storeLooks(ctx context.Context, rep *Report) error {
	if r.looks == nil || rep.Policy == nil {
		return nil
	}
	var rows []store.SuiteLook
	for _, cc := range rep.Comparisons {
		lp := cc.Verdict.Look
		if lp == nil || lp.Blocked {
			continue
		}
		k := r.lookKey(*rep.Policy, cc.Candidate, cc.Version)
		rows = append(rows, store.SuiteLook{SetName: k.SetName, Incumbent: k.Incumbent, Candidate: k.Candidate, CandidateVersion: k.CandidateVersion,
			PolicyVersion: k.PolicyVersion, Look: int32(lp.This.Index), SuiteRunID: r.row.SuiteRunID, Cases: int32(lp.This.Cases),
			MaxCases: int32(lp.MaxCases), Fraction: lp.This.Fraction, Boundary: lp.This.Boundary, Confidence: lp.This.Confidence,
			Spending: lp.Spending, Verdict: string(cc.Verdict.Verdict), CreatedAt: r.row.FinishedAt})
	}
	if err := r.looks.InsertLooks(ctx, rows); err != nil {
		return fmt.Errorf("eval: run suite %s: %w", r.row.SuiteRunID, err)
	}
	return nil
}

// ShadowRateWindow is the traffic window the sample-size advice's "days of
// shadow traffic" is measured on.
const ShadowRateWindow = 7 * 24 * time.Hour

// shadowCasesPerDay returns each candidate's shadowed production requests per
// day over the ShadowRateWindow before now (its runs outside suite runs, from
// the store's overview), nil when the overview fails; the advice then gives
// cases only.
func shadowCasesPerDay(ctx context.Context, an store.OverviewAnalytics, now time.Time) map[string]float64 {
	ov, err := an.Overview(ctx, store.OverviewQuery{From: now.Add(-ShadowRateWindow), To: now, BucketSeconds: 86400})
	if err != nil {
		return nil
	}
	out := map[string]float64{}
	days := ShadowRateWindow.Hours() / 24
	for _, p := range ov.Totals {
		if p.Mode == store.ModeCandidate {
			out[p.Pipeline] = float64(p.Runs) / days
		}
	}
	return out
}

// finishWithError stores the finished cases still buffered (even when ctx is
// cancelled), marks the suite run "error" and returns err — or, when ctx was
// cancelled (the caller stopped the run: a stop, not a failure), "cancelled"
// with Headline "cancelled after K of N cases: <cause>" (K cases finished and
// are stored; N−K were not run), and returns err, which then wraps ctx's
// error, for the caller to log. Failing to store the buffered cases is joined
// to err and makes the run "error" even when it was cancelled (cases were lost).
func (r *suiteRunner) finishWithError(ctx context.Context, err error) error {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	ferr := r.traces.flush(wctx)
	if ferr != nil {
		err = errors.Join(err, fmt.Errorf("eval: run suite %s: %w", r.row.SuiteRunID, ferr))
	}
	r.row.FinishedAt = time.Now().UTC()
	what := "mark failed"
	if ctx.Err() != nil && ferr == nil {
		what = "mark cancelled"
		r.row.Status = SuiteStatusCancelled
		r.row.Headline = fmt.Sprintf("cancelled after %d of %d cases: %v", r.casesDone, len(r.cases), context.Cause(ctx))
	} else {
		r.row.Status = SuiteStatusError
		r.row.Headline = "failed: " + err.Error()
	}
	if werr := r.suites.InsertSuiteRuns(wctx, []store.SuiteRun{r.row}); werr != nil {
		return errors.Join(err, fmt.Errorf("eval: run suite %s: %s: %w", r.row.SuiteRunID, what, werr))
	}
	return err
}

// caseRecord is one finished case: its outcomes, the records to store (the
// request, runs, steps, scores and pairwise judgments) and the runs, whose
// answers the canaries reuse.
type caseRecord struct {
	c         Case
	runs      []store.Run // pipeline order, incumbent first
	outcomes  []Outcome
	batch     store.Batch
	judgments []store.Judgment
}

// runCase runs every pipeline on c and grades the runs: one grade per run, or
// for a case whose grader judges pairs (PairJudge) one judgment of each other
// pipeline's answer against the incumbent's (judgeRunPair). A returned error
// stops the suite.
func (r *suiteRunner) runCase(ctx context.Context, c Case) (*caseRecord, error) {
	reqID := r.row.SuiteRunID + "/" + c.ID
	msgs := c.Messages()
	input, err := json.Marshal(msgs)
	if err != nil {
		return nil, fmt.Errorf("case %s: encode messages: %w", c.ID, err)
	}
	sum := sha256.Sum256(input)
	segs := r.segmenter.Of(c.Prompt())
	req := store.Request{
		RequestID:  reqID,
		ReceivedAt: time.Now().UTC(),
		Source:     store.SourceSuite,
		App:        "suite:" + r.set.Name,
		Input:      string(input),
		InputHash:  hex.EncodeToString(sum[:]),
		Category:   c.Category,
		Language:   segs.Language, HasTable: segs.HasTable, HasCode: segs.HasCode,
		LengthBucket: segs.LengthBucket, Novelty: segs.Novelty,
		Metadata: map[string]string{
			"suite_run_id": r.row.SuiteRunID, "set_name": r.set.Name,
			"set_version": r.set.Version, "case_id": c.ID, "grader": c.Grader,
		},
	}
	sreq := shadow.Request{RequestID: reqID, SuiteRunID: r.row.SuiteRunID, Messages: msgs}
	results := make([]shadow.Result, len(r.pipelines))
	var wg sync.WaitGroup
	for i, p := range r.pipelines {
		mode := store.ModeCandidate
		if isIncumbent(i, p) {
			mode = store.ModeIncumbent
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = shadow.MarkCancelled(ctx, p.Run(ctx, sreq, mode))
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	var runs []store.Run
	var steps []store.Step
	for i, p := range r.pipelines {
		res := &results[i]
		r.fillRun(&res.Run, p, reqID, isIncumbent(i, p))
		for j := range res.Steps {
			res.Steps[j].RunID = res.Run.RunID
		}
		runs = append(runs, res.Run)
		steps = append(steps, res.Steps...)
	}

	g := r.graders[c.Grader]
	pj, pairwise := g.(PairJudge)
	rule := gate.NewDefaultPolicy().TruncationRule()
	if r.opts.Policy != nil {
		rule = r.opts.Policy.TruncationRule()
	}
	var scores []store.Score
	var judgments []store.Judgment
	outcomes := make([]Outcome, len(runs))
	segNames := SegmentNames(segs)
	for i, run := range runs {
		o := Outcome{
			CaseID: c.ID, Category: c.Category, Pipeline: run.Pipeline, Mode: run.Mode,
			RunID: run.RunID, Status: run.Status, Error: run.Error, LatencyMs: run.LatencyMs, CostUSD: run.CostUSD,
			TokensIn: run.TokensIn, TokensOut: run.TokensOut, Calls: int(run.Calls),
			Simulated: run.Simulated, Truncated: run.Truncated, InputReduced: run.InputReduced,
			App: c.ExtraString("app"), Tags: c.Tags, Grader: g.Name(), Segments: segNames, Models: stepModels(results[i].Steps),
		}
		sc := store.Score{
			SuiteRunID: r.row.SuiteRunID, RunID: run.RunID, RequestID: reqID, CaseID: c.ID,
			Pipeline: run.Pipeline, Grader: g.Name(), CreatedAt: time.Now().UTC(),
		}
		if pairwise && i == 0 {
			// The answer the others are judged against: no score of its own.
			o.Pairwise, o.Explanation = PairReference, "pairwise: the answer the other pipelines are judged against"
			outcomes[i] = o
			continue
		}
		if pairwise {
			pr := judgeRunPair(ctx, pj, c, runs[0], run, rule)
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			o.Pairwise, o.Value, o.Passed, o.Explanation, o.GraderError = pr.outcome, pairValue(pr.outcome), pr.outcome == store.JudgmentWin, pr.explanation, pr.err
			if pr.judgment != nil {
				o.Judge = &pr.judgment.Usage
				judgments = append(judgments, pr.judgment.Record(JudgmentMeta{
					RequestID: reqID, SuiteRunID: r.row.SuiteRunID, CaseID: c.ID,
					Pipeline: run.Pipeline, PipelineVersion: run.PipelineVersion, CandidateRun: run.RunID,
					IncumbentPipeline: runs[0].Pipeline, IncumbentRun: runs[0].RunID,
				}))
			}
			sc.Value, sc.Passed, sc.Explanation, sc.Error = o.Value, o.Passed, o.Explanation, o.GraderError
			if o.GraderError != "" {
				sc.Value = 0
			}
			scores = append(scores, sc)
			outcomes[i] = o
			continue
		}
		gr := gradeRun(ctx, g, c, run, results[i].Steps)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		excluded := false
		if run.Truncated && gr.Err == nil {
			gr, excluded = applyTruncation(rule, gr)
		}
		sc.Value, sc.Passed, sc.Explanation = gr.Value, gr.Passed, gr.Explanation
		if gr.Judge != nil { // the judge's own calls (rubric): the record of data flows counts them
			gr.Judge.ScoreCalls(&sc)
		}
		if gr.Err != nil {
			sc.Error, sc.Value, sc.Passed = gr.Err.Error(), 0, false
		}
		scores = append(scores, sc)
		o.Passed, o.Value, o.GraderError, o.Explanation, o.Excluded, o.Judge = sc.Passed, sc.Value, sc.Error, sc.Explanation, excluded, gr.Judge
		outcomes[i] = o
	}
	return &caseRecord{c: c, runs: runs, outcomes: outcomes, judgments: judgments,
		batch: store.Batch{Requests: []store.Request{req}, Runs: runs, Steps: steps, Scores: scores}}, nil
}

// applyTruncation applies the gate policy's truncation rule to the grade of a
// run whose final answer was cut at the token cap: gate.TruncationFail makes it
// a fail (Value 0), gate.TruncationExclude keeps the grade but reports the run
// as excluded from accuracy, gate.TruncationIgnore keeps it. The explanation
// says which rule applied.
func applyTruncation(rule string, g Grade) (Grade, bool) {
	switch rule {
	case gate.TruncationExclude:
		g.Explanation = "truncated at the token cap, excluded from accuracy (truncation: exclude); grader: " + g.Explanation
		return g, true
	case gate.TruncationIgnore:
		g.Explanation = "truncated at the token cap, graded as is (truncation: ignore); grader: " + g.Explanation
		return g, false
	default:
		g.Passed, g.Value = false, 0
		g.Explanation = "truncated at the token cap, counts as failed (truncation: fail); grader: " + g.Explanation
		return g, false
	}
}

// gradeRun grades a run's output. A run that failed without an answer is a
// fail with the run's status as explanation, not a grader call.
func gradeRun(ctx context.Context, g Grader, c Case, run store.Run, steps []store.Step) Grade {
	if rg, ok := g.(RunGrader); ok {
		return rg.GradeRun(ctx, c, run, steps)
	}
	if run.FinalOutput == "" && run.Status != store.StatusOK {
		return fail("run %s: %s", run.Status, clip(run.Error, 300))
	}
	return g.Grade(ctx, c, run.FinalOutput)
}

// fillRun sets the fields the suite owns (request, suite run, pipeline name,
// mode) and fills what a pipeline left empty.
func (r *suiteRunner) fillRun(run *store.Run, p shadow.Pipeline, reqID string, incumbent bool) {
	run.RequestID = reqID
	run.SuiteRunID = r.row.SuiteRunID
	run.Pipeline = p.Name()
	if run.PipelineVersion == "" {
		run.PipelineVersion = p.Version()
	}
	if incumbent {
		run.Mode = store.ModeIncumbent
	} else {
		run.Mode = store.ModeCandidate
	}
	if run.RunID == "" {
		sum := sha256.Sum256([]byte(reqID + "\x00" + r.row.SuiteRunID + "\x00" + run.Pipeline))
		run.RunID = hex.EncodeToString(sum[:16])
	}
	if run.Status == "" {
		run.Status = store.StatusOK
	}
	if run.StartedAt.IsZero() {
		run.StartedAt = time.Now().UTC()
	}
}

// latencyScales asks SuiteOptions.LatencyScales, if set.
func (r *suiteRunner) latencyScales() []string {
	if r.opts.LatencyScales == nil {
		return nil
	}
	return r.opts.LatencyScales()
}
