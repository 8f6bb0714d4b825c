package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/conductor-shadow/conductor-shadow/eval"
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
// stores everything and writes the report as Markdown and JSON under the report dir.
func (s *suiteRunner) run(ctx context.Context, setPath string, limit int, progress io.Writer) (suiteResponse, error) {
	if setPath == "" {
		setPath = s.cfg.Suite.Set
	}
	set, err := eval.LoadSet(setPath)
	if err != nil {
		return suiteResponse{}, fmt.Errorf("%w: %w", errBadSet, err)
	}
	rep, err := eval.RunSuite(ctx, s.st, set, s.p.incumbent, s.p.candidates, eval.SuiteOptions{
		Concurrency: s.cfg.Suite.Concurrency,
		Limit:       limit,
		Progress:    progress,
	})
	if err != nil {
		return suiteResponse{}, fmt.Errorf("suite run %s: %w", filepath.Base(setPath), err)
	}
	md, js, err := eval.WriteReport(s.cfg.Suite.ReportDir, rep)
	if err != nil {
		return suiteResponse{}, err
	}
	return suiteResponse{SuiteRunID: rep.SuiteRunID, Headline: rep.Headline, Markdown: rep.Markdown(), MarkdownPath: md, JSONPath: js}, nil
}
