package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
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
// report dir, with the configured gate policy and noise run.
func (s *suiteRunner) run(ctx context.Context, setPath string, limit int, progress io.Writer) (suiteResponse, error) {
	return s.runScheduled(ctx, schedule.Suite{Set: setPath, Limit: limit, Policy: s.cfg.Suite.Policy, NoiseRun: s.cfg.Suite.NoiseRun}, progress)
}

// runScheduled is run with the set, limit, gate policy file ("" = built-in
// default) and noise run of job.
func (s *suiteRunner) runScheduled(ctx context.Context, job schedule.Suite, progress io.Writer) (suiteResponse, error) {
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
		Progress:    progress,
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
	md, js = absPath(md), absPath(js)
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
// kind (storeKind) and the server's address.
func (s *suiteRunner) public(res suiteResponse) suiteResponse {
	dir := absPath(s.cfg.Suite.ReportDir)
	for _, p := range []*string{&res.MarkdownPath, &res.JSONPath, &res.HTMLPath} {
		if rel, err := filepath.Rel(dir, *p); err == nil && !strings.HasPrefix(rel, "..") {
			*p = filepath.ToSlash(rel)
		} else {
			*p = filepath.Base(*p)
		}
	}
	res.Store = storeKind(s.cfg) + " (through the server at " + s.cfg.Server.Addr + ")"
	return res
}

// fromServer is a server's answer (public) as the CLI prints it: the report
// files in this configuration's suite.report_dir and the store it names,
// which suiteTarget checked the server holds.
func fromServer(cfg platform.Config, res suiteResponse) suiteResponse {
	dir := absPath(cfg.Suite.ReportDir)
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

// absPath makes a report path absolute, so a CLI in another folder finds it.
func absPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// serverHealth is the body of GET /healthz: the server's store, so a CLI can tell
// whether a running server holds the store it was pointed at. /healthz answers
// any caller under any Host without a token, so it names no folder: the
// embedded store is told by StoreID, a digest of its absolute path.
type serverHealth struct {
	Status  string `json:"status"`
	Role    string `json:"role,omitempty"`     // server.role: all, tap or shadow
	Store   string `json:"store"`              // the store's kind: "embedded chDB", "ClickHouse server" or "none (tap role)"
	StoreID string `json:"store_id,omitempty"` // storeID of the embedded store's folder; "" for a ClickHouse server
}

// storeKind is serverHealth.Store for cfg (its role aside): the kind of
// store without the folder or DSN.
func storeKind(cfg platform.Config) string {
	if cfg.Store.DSN != "" {
		return "ClickHouse server"
	}
	return "embedded chDB"
}

// storeID identifies an embedded store's folder without naming it: the first
// 16 hex digits of SHA-256 of its absolute, cleaned path (symbolic links
// resolved when the folder exists), so the server and a CLI given the same
// folder under another spelling agree.
func storeID(path string) string {
	p := absPath(path)
	if real, err := filepath.EvalSymlinks(p); err == nil {
		p = real
	}
	sum := sha256.Sum256([]byte(filepath.Clean(p)))
	return hex.EncodeToString(sum[:8])
}

// suiteTarget decides where `suite run` sends the suite: to the server at
// cfg.Server.Addr (true) or to the store opened here (false). An explicit --data
// or --addr wins over whatever answers on the default address:
//
//   - --local, or a ClickHouse DSN: the store here.
//   - --data DIR: the server only when it holds DIR itself (its /healthz names
//     the folder); otherwise DIR is opened here. With --addr too, a server
//     holding another store is an error.
//   - --addr only: that server; none answering is an error.
//   - neither: the server when one answers, else the store here.
//
// note says why, for the log.
func suiteTarget(ctx context.Context, cfg platform.Config, local, explicitData, explicitAddr bool) (useServer bool, note string, err error) {
	if local || cfg.Store.DSN != "" {
		return false, "", nil
	}
	h, err := fetchHealth(ctx, cfg.Server.Addr)
	switch {
	case errors.Is(err, errNoServer):
		if explicitAddr {
			return false, "", fmt.Errorf("suite run: no server answers at --addr %s", cfg.Server.Addr)
		}
		return false, "no server answering at " + cfg.Server.Addr, nil
	case err != nil:
		if explicitAddr {
			return false, "", fmt.Errorf("suite run: the server at --addr %s: %w", cfg.Server.Addr, err)
		}
		return false, fmt.Sprintf("the server at %s did not answer as expected (%v)", cfg.Server.Addr, err), nil
	}
	if !explicitData {
		return true, "", nil
	}
	want := absPath(cfg.Store.Path)
	if h.StoreID != "" && h.StoreID == storeID(cfg.Store.Path) {
		return true, "", nil
	}
	held := "another " + h.Store + " store"
	if h.Store == "" {
		held = "another store"
	}
	if explicitAddr {
		return false, "", fmt.Errorf("suite run: the server at --addr %s holds %s, not the --data folder %s", cfg.Server.Addr, held, want)
	}
	return false, fmt.Sprintf("the server at %s holds %s, not the --data folder %s", cfg.Server.Addr, held, want), nil
}

// fetchHealth reads GET /healthz of the server at addr (errNoServer when nothing listens).
func fetchHealth(ctx context.Context, addr string) (serverHealth, error) {
	var h serverHealth
	c := newAPIClient(addr, "", 5*time.Second)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/healthz", nil)
	if err != nil {
		return h, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		var opErr *net.OpError
		if errors.As(err, &opErr) && opErr.Op == "dial" {
			return h, errNoServer
		}
		return h, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return h, fmt.Errorf("GET /healthz: HTTP %d", resp.StatusCode)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&h); err != nil || h.Status == "" {
		return h, fmt.Errorf("GET /healthz: not a conductor-shadow server")
	}
	return h, nil
}
