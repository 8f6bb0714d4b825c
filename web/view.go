package web

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/conductor-shadow/conductor-shadow/eval"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// Navigation sections of the header.
const (
	navOverview  = "overview"
	navWorkers   = "workers"
	navTraces    = "traces"
	navSuiteRuns = "suite-runs"
	navPlans     = "plans"
)

// pageMeta is what the layout needs from every page.
type pageMeta struct {
	Title   string // this page's title
	Product string // Config.Title
	Base    string // Config.BasePath
	Nav     string // navTraces, navSuiteRuns or "" (error pages)
}

// urls builds links under the base path. Ids are path-escaped.
type urls struct{ base string }

func (u urls) static(name string) string { return u.base + "/static/" + name }
func (u urls) traces() string            { return u.base + "/traces" }
func (u urls) trace(id string) string    { return u.base + "/traces/" + url.PathEscape(id) }
func (u urls) suiteRuns() string         { return u.base + "/suite-runs" }
func (u urls) suiteRun(id string) string { return u.base + "/suite-runs/" + url.PathEscape(id) }
func (u urls) reportJSON(id string) string {
	return u.base + "/suite-runs/" + url.PathEscape(id) + "/report.json"
}

// tracesWith links to the traces list with q's parameters.
func (u urls) tracesWith(q traceQuery) string {
	if enc := q.values().Encode(); enc != "" {
		return u.traces() + "?" + enc
	}
	return u.traces()
}

// tracesView is the traces list page.
type tracesView struct {
	Meta     pageMeta
	Query    traceQuery           // the filters and cursor of this page
	Rows     []store.TraceSummary // newest first
	OlderURL string               // the next (older) page, "" when this page is the last
	FirstURL string               // the newest page with the same filters, "" on it
	Sources  []string             // the choices of the source filter
	// Searchable: the search filters show (store.TraceReader searches).
	Searchable bool
	Statuses   []string // the choices of the status filter
}

// runView is one run of a trace with what belongs to it.
type runView struct {
	Run        store.Run
	Steps      []store.Step  // by Index
	Plan       []planStep    // the parsed workflow
	PlanParsed bool          // Plan decoded from Run.Plan
	Scores     []store.Score // grader scores of this run
	Drill      runDrill      // step details, workflow graph and timeline
	// CompareURL compares the trace's incumbent run with this candidate run; "" for the incumbent.
	CompareURL string
	// Choices are the run's stored choices (store.Run.Choices) with their tool
	// calls; empty when the answer had one choice and no tool call.
	Choices []answerChoice
	// ChoicesRaw is Run.Choices when it could not be decoded (shown as stored).
	ChoicesRaw string
	// Headers are the incumbent's rate-limit and retry headers, sorted by name.
	Headers [][2]string
}

// answerChoice is one stored choice of an answer (ingest.Choice as JSON).
type answerChoice struct {
	Index        int          `json:"index"`
	Content      string       `json:"content"`
	Reasoning    string       `json:"reasoning"`
	FinishReason string       `json:"finish_reason"`
	ToolCalls    []answerTool `json:"tool_calls"`
}

// answerTool is one stored tool call of a choice.
type answerTool struct {
	Index     int    `json:"index"`
	ID        string `json:"id"`
	Type      string `json:"type"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// decodeChoices reads store.Run.Choices; ok is false when it is not such JSON.
func decodeChoices(s string) (out []answerChoice, ok bool) {
	if strings.TrimSpace(s) == "" {
		return nil, true
	}
	if json.Unmarshal([]byte(s), &out) != nil {
		return nil, false
	}
	return out, true
}

// traceView is the trace page.
type traceView struct {
	Meta        pageMeta
	Request     store.Request
	Messages    []chatMessage // the input's chat messages
	InputParsed bool          // false: the input is shown as stored
	Runs        []runView     // incumbent first, then candidates, as the store orders them
	Simulated   bool          // some run's answers came from the simulated worker pool
	// Metadata is Request.Metadata sorted by key, less the keys the page already
	// shows as facts (factMetadataKeys) when their value is the fact's; a differing
	// value is kept under "<key> (metadata)" so no label appears twice.
	Metadata [][2]string
	Diffs    []answerDiff // each candidate's answer diffed against the incumbent's
	// Judging is the trace's pairwise judgments (judgments.go).
	Judging judgmentsView
	// Pair is what the page opens with (tracepair.go); HasPair: the trace has
	// an incumbent and a candidate run.
	Pair    tracePair
	HasPair bool
}

// incumbents and candidates split Runs by mode; a run of another mode counts as a candidate.
func (t traceView) incumbents() []runView { return t.byMode(true) }
func (t traceView) candidates() []runView { return t.byMode(false) }

func (t traceView) byMode(incumbent bool) []runView {
	var out []runView
	for _, r := range t.Runs {
		if (r.Run.Mode == store.ModeIncumbent) == incumbent {
			out = append(out, r)
		}
	}
	return out
}

// extraMetadata is r.Metadata less what the trace page's facts already show: the
// tap derives Request.Category from metadata["category"] and Request.Source
// from metadata["source"], so those keys (any case) repeat the facts. A key
// whose value differs from its fact is kept, labelled "<key> (metadata)".
func extraMetadata(r store.Request) [][2]string {
	facts := map[string]string{"source": r.Source, "category": r.Category, "app": r.App}
	out := make([][2]string, 0, len(r.Metadata))
	for k, val := range r.Metadata {
		fact, shown := facts[strings.ToLower(strings.TrimSpace(k))]
		switch {
		case shown && val == fact:
			continue
		case shown:
			k += " (metadata)"
		}
		out = append(out, [2]string{k, val})
	}
	return out
}

// newTraceView groups a trace's steps and scores under their runs and builds each
// run's drill-down (md renders the steps' Markdown outputs) and the answer diffs.
func newTraceView(meta pageMeta, md *markdown, tr store.Trace) traceView {
	v := traceView{Meta: meta, Request: tr.Request}
	v.Messages, v.InputParsed = parseMessages(tr.Request.Input)
	v.Metadata = extraMetadata(tr.Request)
	slices.SortFunc(v.Metadata, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	for _, r := range tr.Runs {
		rv := runView{Run: r}
		rv.Plan, rv.PlanParsed = parsePlan(r.Plan)
		if ch, ok := decodeChoices(r.Choices); ok {
			rv.Choices = ch
		} else {
			rv.ChoicesRaw = r.Choices
		}
		for k, val := range r.ResponseHeaders {
			rv.Headers = append(rv.Headers, [2]string{k, val})
		}
		slices.SortFunc(rv.Headers, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
		for _, s := range tr.Steps {
			if s.RunID == r.RunID {
				rv.Steps = append(rv.Steps, s)
			}
		}
		for _, s := range tr.Scores {
			if s.RunID == r.RunID {
				rv.Scores = append(rv.Scores, s)
			}
		}
		rv.Drill = newRunDrill(md, rv.Steps)
		v.Simulated = v.Simulated || r.Simulated
		v.Runs = append(v.Runs, rv)
	}
	if inc := v.incumbents(); len(inc) > 0 {
		for i := range v.Runs {
			if v.Runs[i].Run.Mode != store.ModeIncumbent {
				v.Runs[i].CompareURL = urls{meta.Base}.compareRuns(inc[0].Run.RunID, v.Runs[i].Run.RunID)
			}
		}
	}
	v.Diffs = newAnswerDiffs(v)
	return v
}

// suiteRunsView is the suite runs list page.
type suiteRunsView struct {
	Meta pageMeta
	Rows []suiteRunRow // newest first
}

// StatusCounts counts the listed suite runs per status, in the order done,
// error, cancelled (stopped by their caller: not failures), running, then any
// other, e.g. "3 suite runs: 1 done, 1 error, 1 cancelled".
func (v suiteRunsView) StatusCounts() string {
	n := map[string]int{}
	var other []string
	order := []string{eval.SuiteStatusDone, eval.SuiteStatusError, eval.SuiteStatusCancelled, eval.SuiteStatusRunning}
	for _, r := range v.Rows {
		if n[r.Run.Status] == 0 && !slices.Contains(order, r.Run.Status) {
			other = append(other, r.Run.Status)
		}
		n[r.Run.Status]++
	}
	var parts []string
	for _, st := range append(order, other...) {
		if n[st] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[st], st))
		}
	}
	runs := "suite runs"
	if len(v.Rows) == 1 {
		runs = "suite run"
	}
	return fmt.Sprintf("%d %s: %s", len(v.Rows), runs, strings.Join(parts, ", "))
}

// suiteRunRow is one suite run in the list.
type suiteRunRow struct {
	Run       store.SuiteRun
	Simulated bool // the report JSON says the figures are simulated
}

// suiteRunView is one suite run's page.
type suiteRunView struct {
	Meta       pageMeta
	Run        store.SuiteRun
	Simulated  bool   // the report JSON says the figures are simulated
	ReportHTML string // the report Markdown rendered and sanitized
	PrevURL    string // compares the previous suite run of the same set with this one; "" when none
	// CasePipelines and Cases: every case's outcome per pipeline with links to the
	// traces (empty when the store cannot list scores or none are stored).
	CasePipelines []string
	Cases         []suiteCaseRow
	// Truncated: per pipeline of the report, the runs whose final answer hit
	// the token cap (empty when the report JSON carries no such counts).
	Truncated []pipelineCount
	// Judges: per candidate the LLM judge its verdict rests on (the report
	// JSON's "judging"), empty without one.
	Judges []reportJudge
}

// pipelineCount is one pipeline's count of something in a suite run.
type pipelineCount struct {
	Pipeline string
	N        int
}

// reportTruncated reads, from a suite run's JSON report, each pipeline's
// overall "truncated" count (runs whose final answer hit the token cap), in
// report order; nil when the report is not JSON or has no pipelines.
func reportTruncated(reportJSON string) []pipelineCount {
	var r struct {
		Pipelines []struct {
			Pipeline string `json:"pipeline"`
			Overall  struct {
				Truncated int `json:"truncated"`
			} `json:"overall"`
		} `json:"pipelines"`
	}
	if json.Unmarshal([]byte(reportJSON), &r) != nil {
		return nil
	}
	var out []pipelineCount
	for _, p := range r.Pipelines {
		out = append(out, pipelineCount{Pipeline: p.Pipeline, N: p.Overall.Truncated})
	}
	return out
}

// reportSimulated reads the top-level "simulated" boolean of a suite run's JSON
// report (store.SuiteRun.ReportJSON); false when absent or not JSON.
func reportSimulated(reportJSON string) bool {
	var r struct {
		Simulated bool `json:"simulated"`
	}
	if json.Unmarshal([]byte(reportJSON), &r) != nil {
		return false
	}
	return r.Simulated
}

// errorView is an error page.
type errorView struct {
	Meta    pageMeta
	Status  int
	Message string // short, for people; never the internal error text
}
