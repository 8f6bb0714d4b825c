package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/conductor-shadow/conductor-shadow/cmd/internal/platform"
	"github.com/conductor-shadow/conductor-shadow/eval"
	"github.com/conductor-shadow/conductor-shadow/eval/gate"
	"github.com/conductor-shadow/conductor-shadow/eval/judge"
	"github.com/conductor-shadow/conductor-shadow/eval/schedule"
	"github.com/conductor-shadow/conductor-shadow/store/dataflow"
)

// errBadSet marks a regression set that cannot be loaded: the caller's mistake,
// answered with 400 by the API.
var errBadSet = errors.New("regression set not usable")

// suiteRunner runs a regression set through the incumbent and the candidates and
// writes the report; the server and the local CLI share it.
type suiteRunner struct {
	cfg    platform.Config
	stores eval.SuiteStores // the roles the suite run writes and reads
	p      *platform.Pipelines
	where  string // the store, as told to the user (openStore's description)
	// onReport, when set, is given every finished suite run's report (verdict
	// notifications); it must not wait.
	onReport func(*eval.Report)
	// flows, when set, adds the record of data flows of the report's live
	// window to every report.
	flows *flowRecorder
}

// run loads setPath (empty: the configured set), runs at most limit cases (0: all),
// stores everything and writes the report as Markdown, JSON and HTML under the
// report dir, with the configured gate policy and noise run. progress, when
// set, gets the run's state after every finished case.
func (s *suiteRunner) run(ctx context.Context, setPath string, limit int, progress func(eval.SuiteProgress)) (suiteResponse, error) {
	return s.runScheduled(ctx, schedule.Suite{Set: setPath, Limit: limit, Policy: s.cfg.Suite.Policy, NoiseRun: s.cfg.Suite.NoiseRun}, progress)
}

// runScheduled is run with the set, limit, gate policy file ("" = built-in
// default) and noise run of job.
func (s *suiteRunner) runScheduled(ctx context.Context, job schedule.Suite, progress func(eval.SuiteProgress)) (suiteResponse, error) {
	if err := checkLimit(job.Limit); err != nil {
		return suiteResponse{}, fmt.Errorf("%w: %w", errBadSet, err)
	}
	setPath := job.Set
	if setPath == "" {
		setPath = s.cfg.Suite.Set
	}
	set, err := eval.LoadSet(setPath)
	if err != nil {
		return suiteResponse{}, fmt.Errorf("%w: %w", errBadSet, err)
	}
	var policy *gate.Policy
	if job.Policy != "" {
		p, err := gate.Load(job.Policy)
		if err != nil {
			return suiteResponse{}, err
		}
		policy = &p
	}
	// The judge graders call the pool; every other grader (the code sandbox
	// included) is built with the configured limits.
	graders, err := judge.Graders(s.p.Pool, s.cfg.Suite.Judge, s.cfg.Suite.Code)
	if err != nil {
		return suiteResponse{}, err
	}
	rep, err := eval.RunSuite(ctx, s.stores, set, s.p.Incumbent, s.p.Candidates, eval.SuiteOptions{
		Graders:     graders,
		Canaries:    s.cfg.Suite.Judge.Canaries,
		Concurrency: s.cfg.Suite.Concurrency,
		Limit:       job.Limit,
		OnProgress:  progress,
		Policy:      policy,
		NoiseRun:    job.NoiseRun,
		ShiftWindow: s.cfg.Suite.ShiftWindow,
		// The simulated pool says by what factor it scaled latencies; the report repeats it.
		LatencyScales: s.p.Pool.SimulatedLatencyScales,
		DataFlows:     s.dataFlows(),
	})
	if err != nil {
		return suiteResponse{}, fmt.Errorf("suite run %s: %w", filepath.Base(setPath), err)
	}
	if s.onReport != nil {
		s.onReport(rep)
	}
	md, js, err := eval.WriteReport(s.cfg.Suite.ReportDir, rep)
	if err != nil {
		return suiteResponse{}, err
	}
	md, js = platform.AbsPath(md), platform.AbsPath(js)
	return suiteResponse{SuiteRunID: rep.SuiteRunID, Headline: rep.Headline, Markdown: rep.Markdown(), MarkdownPath: md, JSONPath: js,
		HTMLPath: strings.TrimSuffix(md, ".md") + ".html", Verdict: rep.Verdict, VerdictDetail: verdictDetail(rep), Store: s.where}, nil
}

// dataFlows is the report's data-flows section, nil without a recorder.
func (s *suiteRunner) dataFlows() func(context.Context, time.Time, time.Time) (*dataflow.Record, error) {
	if s.flows == nil {
		return nil
	}
	return s.flows.between
}

// public is res as POST /api/suite-runs answers it, naming no folder of the
// server: the report files relative to suite.report_dir and the store by its
// kind (platform.StoreKind) and the server's address.
func (s *suiteRunner) public(res suiteResponse) suiteResponse {
	dir := platform.AbsPath(s.cfg.Suite.ReportDir)
	for _, p := range []*string{&res.MarkdownPath, &res.JSONPath, &res.HTMLPath} {
		if rel, err := filepath.Rel(dir, *p); err == nil && !strings.HasPrefix(rel, "..") {
			*p = filepath.ToSlash(rel)
		} else {
			*p = filepath.Base(*p)
		}
	}
	res.Store = platform.StoreKind(s.cfg) + " (through the server at " + s.cfg.Server.Addr + ")"
	return res
}

// fromServer is a server's answer (public) as the CLI prints it: the report
// files in this configuration's suite.report_dir and the store it names,
// which platform.ResolveStore checked the server holds.
func fromServer(cfg platform.Config, res suiteResponse) suiteResponse {
	dir := platform.AbsPath(cfg.Suite.ReportDir)
	for _, p := range []*string{&res.MarkdownPath, &res.JSONPath, &res.HTMLPath} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, filepath.FromSlash(*p))
		}
	}
	res.Store = platform.StoreWhere(cfg) + " (through the server at " + cfg.Server.Addr + ")"
	return res
}

// checkLimit refuses a negative case limit of a suite run (0 means all cases).
func checkLimit(limit int) error {
	if limit < 0 {
		return fmt.Errorf("limit %d: want 0 (all cases) or a positive number of cases", limit)
	}
	return nil
}

// verdictDetail says in one line what the verdict rests on: the gate policy, each
// candidate's gates with the quality test named, and the truncated runs per
// pipeline (final answers cut at the token cap), e.g.
// "policy default-3; conductor FAIL: quality PASS (Tango score interval, paired
// pass/fail), cost FAIL, latency FAIL; truncated runs: single:gpt-5 0, conductor 2".
func verdictDetail(rep *eval.Report) string {
	var parts []string
	if rep.Policy != nil {
		parts = append(parts, "policy "+rep.Policy.Version)
	}
	for _, c := range rep.Comparisons {
		var gates []string
		for _, g := range c.Verdict.Gates {
			item := fmt.Sprintf("%s %s", g.Gate, g.Status)
			if g.Gate == "quality" && c.Verdict.Plan != nil {
				item += " (" + gate.MethodName(c.Verdict.Plan.Test) + ")"
			}
			gates = append(gates, item)
		}
		parts = append(parts, fmt.Sprintf("%s %s: %s", c.Candidate, c.Verdict.Verdict, strings.Join(gates, ", ")))
	}
	var trunc []string
	for _, p := range rep.Pipelines {
		trunc = append(trunc, fmt.Sprintf("%s %d", p.Pipeline, p.Overall.Truncated))
	}
	if len(trunc) > 0 {
		parts = append(parts, "truncated runs: "+strings.Join(trunc, ", "))
	}
	return strings.Join(parts, "; ")
}
