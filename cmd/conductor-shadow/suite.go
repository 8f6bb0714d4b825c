package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/conductor-shadow/conductor-shadow/eval"
	"github.com/conductor-shadow/conductor-shadow/eval/gate"
	"github.com/conductor-shadow/conductor-shadow/eval/judge"
	"github.com/conductor-shadow/conductor-shadow/eval/schedule"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// errBadSet marks a regression set that cannot be loaded: the caller's mistake,
// answered with 400 by the API.
var errBadSet = errors.New("regression set not usable")

// suiteRunner runs a regression set through the incumbent and the candidates and
// writes the report; the server and the local CLI share it.
type suiteRunner struct {
	cfg Config
	st  store.Store
	p   *pipelines
}

// run loads setPath (empty: the configured set), runs at most limit cases (0: all),
// stores everything and writes the report as Markdown, JSON and HTML under the
// report dir, with the configured gate policy and noise run.
func (s *suiteRunner) run(ctx context.Context, setPath string, limit int, progress io.Writer) (suiteResponse, error) {
	return s.runScheduled(ctx, schedule.Suite{Set: setPath, Limit: limit, Policy: s.cfg.Suite.Policy, NoiseRun: s.cfg.Suite.NoiseRun}, progress)
}

// runScheduled is run with the set, limit, gate policy file ("" = built-in
// default) and noise run of job.
func (s *suiteRunner) runScheduled(ctx context.Context, job schedule.Suite, progress io.Writer) (suiteResponse, error) {
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
	graders, err := judge.Graders(s.p.pool, s.cfg.Suite.Judge)
	if err != nil {
		return suiteResponse{}, err
	}
	rep, err := eval.RunSuite(ctx, s.st, set, s.p.incumbent, s.p.candidates, eval.SuiteOptions{
		Graders:     graders,
		Concurrency: s.cfg.Suite.Concurrency,
		Limit:       job.Limit,
		Progress:    progress,
		Policy:      policy,
		NoiseRun:    job.NoiseRun,
		ShiftWindow: s.cfg.Suite.ShiftWindow,
	})
	if err != nil {
		return suiteResponse{}, fmt.Errorf("suite run %s: %w", filepath.Base(setPath), err)
	}
	md, js, err := eval.WriteReport(s.cfg.Suite.ReportDir, rep)
	if err != nil {
		return suiteResponse{}, err
	}
	md, js = absPath(md), absPath(js)
	return suiteResponse{SuiteRunID: rep.SuiteRunID, Headline: rep.Headline, Markdown: rep.Markdown(), MarkdownPath: md, JSONPath: js,
		HTMLPath: strings.TrimSuffix(md, ".md") + ".html", Verdict: rep.Verdict}, nil
}

// absPath makes a report path absolute, so a CLI in another folder finds it.
func absPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}
