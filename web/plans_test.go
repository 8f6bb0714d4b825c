package web

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// Plan shapes of the plans fixture (store.PlanShape of its plans).
const (
	webShapeCheap = "qwen3-32b → qwen3-32b[0]"
	webShapeGPT5  = "qwen3-32b → gpt-5[all] → claude-sonnet-4[1]"
)

// plansFixture is 40 tapped requests over two days, each answered by the
// production incumbent and by conductor v2: on every fifth request v2 plans
// gpt-5 (expensive, slow, and judged a win), on the others two cheap
// qwen3-32b steps (judged a tie, the answers equal). Conductor v1 ran the
// first 20 requests a week earlier and always planned gpt-5.
func plansFixture() []store.Trace {
	base := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	cheap := `{"steps":[{"worker":"qwen3-32b","subtask":"draft","access":[]},{"worker":"qwen3-32b","subtask":"check","access":[0]}]}`
	gpt5 := `{"steps":[{"worker":"qwen3-32b","subtask":"outline","access":[]},{"worker":"gpt-5","subtask":"solve","access":"all"},` +
		`{"worker":"claude-sonnet-4","subtask":"verify","access":[1]}]}`
	var out []store.Trace
	for r := range 40 {
		id := fmt.Sprintf("plan-req-%02d", r)
		at := base.Add(time.Duration(r) * 72 * time.Minute)
		tr := store.Trace{Request: store.Request{RequestID: id, ReceivedAt: at, Source: store.SourceTap, App: "support-bot",
			Input: fmt.Sprintf(`[{"role":"user","content":"How long is a flight of %d minutes in hours?"}]`, 60+r)}}
		tr.Runs = append(tr.Runs, store.Run{RunID: id + "/inc", RequestID: id, Pipeline: "incumbent:gpt-4-1106-preview",
			Mode: store.ModeIncumbent, StartedAt: at, LatencyMs: 1200, Status: store.StatusOK, FinalOutput: "About an hour.", CostUSD: 0.002})
		expensive := r%5 == 2
		cand := store.Run{RunID: id + "/v2", RequestID: id, Pipeline: "conductor", PipelineVersion: "v2", Mode: store.ModeCandidate,
			StartedAt: at, Status: store.StatusOK, FinalOutput: "About an hour.", Plan: cheap}
		steps := []store.Step{{Index: 0, Role: "conductor", Worker: "conductor-7b", CostUSD: 0.0001, StartedAt: at, LatencyMs: 200}}
		if expensive {
			cand.Plan, cand.FinalOutput = gpt5, "1 hour and a few minutes."
			steps = append(steps,
				store.Step{Index: 1, Role: "worker", Worker: "qwen3-32b", Subtask: "outline", Access: "[]", CostUSD: 0.0002, StartedAt: at.Add(200 * time.Millisecond), LatencyMs: 300},
				store.Step{Index: 2, Role: "worker", Worker: "gpt-5", Subtask: "solve", Access: "all", CostUSD: 0.02, StartedAt: at.Add(500 * time.Millisecond), LatencyMs: 2500},
				store.Step{Index: 3, Role: "worker", Worker: "claude-sonnet-4", Subtask: "verify", Access: "[1]", CostUSD: 0.004, StartedAt: at.Add(3000 * time.Millisecond), LatencyMs: 700})
		} else {
			steps = append(steps,
				store.Step{Index: 1, Role: "worker", Worker: "qwen3-32b", Subtask: "draft", Access: "[]", CostUSD: 0.0002, StartedAt: at.Add(200 * time.Millisecond), LatencyMs: 300},
				store.Step{Index: 2, Role: "worker", Worker: "qwen3-32b", Subtask: "check", Access: "[0]", CostUSD: 0.0003, StartedAt: at.Add(520 * time.Millisecond), LatencyMs: 400})
		}
		var end time.Time
		for i := range steps {
			steps[i].RunID, steps[i].Parent, steps[i].Status = cand.RunID, -1, store.StatusOK
			cand.CostUSD += steps[i].CostUSD
			end = steps[i].StartedAt.Add(time.Duration(steps[i].LatencyMs) * time.Millisecond)
		}
		cand.LatencyMs = float64(end.Sub(at).Milliseconds())
		tr.Runs = append(tr.Runs, cand)
		tr.Steps = steps
		if r < 20 {
			tr.Runs = append(tr.Runs, store.Run{RunID: id + "/v1", RequestID: id, Pipeline: "conductor", PipelineVersion: "v1",
				Mode: store.ModeCandidate, StartedAt: at.Add(-7 * 24 * time.Hour), Status: store.StatusOK, Plan: gpt5,
				FinalOutput: "About an hour.", CostUSD: 0.03, LatencyMs: 4000})
		}
		out = append(out, tr)
	}
	return out
}

// plansJudgments judge every v2 pair of the fixture: the gpt-5 plans win,
// the cheap ones tie.
func plansJudgments(trs []store.Trace) []store.Judgment {
	var out []store.Judgment
	for _, tr := range trs {
		cand := tr.Runs[1]
		o, v1, v2 := store.JudgmentTie, "tie", "tie"
		if strings.Contains(cand.Plan, "gpt-5") {
			o, v1, v2 = store.JudgmentWin, "candidate", "candidate"
		}
		out = append(out, store.Judgment{RequestID: tr.Request.RequestID, Pipeline: "conductor", PipelineVersion: "v2",
			CandidateRunID: cand.RunID, IncumbentPipeline: tr.Runs[0].Pipeline, IncumbentRunID: tr.Runs[0].RunID,
			Judge: "judge-model", JudgedAt: cand.StartedAt.Add(time.Minute), Outcome: o, Verdict1: v1, Verdict2: v2,
			Raw1: "verdict: " + v1, Raw2: "verdict: " + v2, InclusionProb: 1})
	}
	return out
}

// plansStore is a store on the embedded engine holding plansFixture.
func plansStore(t *testing.T) store.Store {
	t.Helper()
	st := engine.Open(t)
	trs := plansFixture()
	for _, tr := range trs {
		seed(t, st, tr)
	}
	if err := st.(store.JudgmentWriter).InsertJudgments(context.Background(), plansJudgments(trs)); err != nil {
		t.Fatal(err)
	}
	return st
}

func TestPlansPage(t *testing.T) {
	st := plansStore(t)
	h := newTestServer(t, st, NewDefaultConfig())

	rec := get(t, h, "/plans")
	mustStatus(t, rec, http.StatusOK)
	doc := parseHTML(t, rec.Body.String())

	// The newest version is chosen; its two shapes, the cheap one first.
	shapes := byTestID(doc, "shape-row")
	if len(shapes) != 2 {
		t.Fatalf("%d shape rows, want 2", len(shapes))
	}
	body := func(id string) string {
		var b []string
		for _, n := range byTestID(doc, id) {
			b = append(b, strings.Join(strings.Fields(text(n)), " "))
		}
		return strings.Join(b, " | ")
	}
	if s := body("plans-scope"); !strings.Contains(s, "version v2") || !strings.Contains(s, "40 runs") ||
		!strings.Contains(s, "incumbent:gpt-4-1106-preview") {
		t.Errorf("scope line %q: want version v2, 40 runs, the production incumbent", s)
	}
	first, second := text(shapes[0]), text(shapes[1])
	if !strings.Contains(first, "80.0%") || !strings.Contains(second, "20.0%") {
		t.Errorf("shape shares: first row %q, second %q; want 80.0%% then 20.0%%", first, second)
	}
	if q := body("shape-quality"); !strings.Contains(q, "win rate 0.0%") || !strings.Contains(q, "win rate 100.0%") {
		t.Errorf("shape quality %q: the cheap shape ties (win rate 0%%: a tie is no win), the gpt-5 shape wins (100%%)", q)
	}
	if n := len(byTestID(doc, "shape-graph")); n != 2 {
		t.Errorf("%d shape graphs, want 2", n)
	}

	// Attribution: the extra cost comes from gpt-5 on 20% of requests.
	if hl := body("attribution-headline"); !strings.Contains(hl, "gpt-5") || !strings.Contains(hl, "20.0% of requests") ||
		!strings.Contains(hl, "extra cost") {
		t.Errorf("attribution headline %q: want the extra cost from gpt-5 on 20.0%% of requests", hl)
	}
	if hl := body("attribution-latency-headline"); !strings.Contains(hl, "gpt-5") {
		t.Errorf("latency headline %q: want gpt-5 (2.5 s on the critical path of the expensive plans)", hl)
	}

	// Drift: per day of v2, and per version (v1 always planned gpt-5).
	if n := len(byTestID(doc, "drift-row")); n < 3 {
		t.Errorf("%d drift rows, want the days of v2 and both versions", n)
	}
	if psi := body("drift-psi"); psi == "" {
		t.Error("no PSI between versions")
	}

	// Diff v1 → v2 on the 20 requests both ran: 16 changed from the gpt-5 plan to the cheap one.
	if s := body("diff-requests"); !strings.Contains(s, "20") {
		t.Errorf("diff requests %q, want 20", s)
	}
	if s := body("diff-changed"); !strings.Contains(s, "16") {
		t.Errorf("diff changed %q, want 16 of 20", s)
	}
	tr := byTestID(doc, "diff-transition")
	if len(tr) == 0 || !strings.Contains(text(tr[0]), "qwen3-32b[0]") {
		t.Errorf("diff transitions: want gpt-5 plan → cheap plan first, got %d rows", len(tr))
	}

	// Bad queries are refused; an unknown version is a 404.
	for _, q := range []string{"scope=both", "bucket=hour", "version_key=conductor", "compare=v1", "from=yesterday",
		"from=2026-11-22T00:00:00&to=2026-11-21T00:00:00"} {
		mustStatus(t, get(t, h, "/plans?"+q), http.StatusBadRequest)
	}
	mustStatus(t, get(t, h, "/plans?pipeline=conductor&version=v9"), http.StatusNotFound)

	// The other version, compared with v2 explicitly.
	rec = get(t, h, "/plans?version_key=conductor@v1&compare=conductor@v2")
	mustStatus(t, rec, http.StatusOK)
	doc = parseHTML(t, rec.Body.String())
	if n := len(byTestID(doc, "shape-row")); n != 1 {
		t.Errorf("v1: %d shapes, want 1 (always gpt-5)", n)
	}
	if s := body("diff-changed"); !strings.Contains(s, "16") {
		t.Errorf("v1 against v2: changed %q, want 16", s)
	}

	// The suite scope of this store holds no plans.
	rec = get(t, h, "/plans?scope=suite")
	mustStatus(t, rec, http.StatusOK)
	if len(byTestID(parseHTML(t, rec.Body.String()), "no-plans")) != 1 {
		t.Error("suite scope without plans: want the empty note")
	}
}

func TestTracesListDeltasSorted(t *testing.T) {
	st := plansStore(t)
	h := newTestServer(t, st, NewDefaultConfig())

	rec := get(t, h, "/traces?candidate=conductor&limit=10")
	mustStatus(t, rec, http.StatusOK)
	doc := parseHTML(t, rec.Body.String())
	rows := byTestID(doc, "trace-row")
	if len(rows) != 10 {
		t.Fatalf("%d rows, want 10", len(rows))
	}
	heads := byTestID(doc, "sort-head")
	if len(heads) != 4 {
		t.Fatalf("%d sortable heads, want 4", len(heads))
	}

	// Sorted by cost delta: the gpt-5 plans first (+$0.0223), each row its delta.
	rec = get(t, h, "/traces?candidate=conductor&sort=cost_delta&limit=10")
	mustStatus(t, rec, http.StatusOK)
	doc = parseHTML(t, rec.Body.String())
	costs := byTestID(doc, "pair-cost")
	if len(costs) != 10 {
		t.Fatalf("%d cost cells, want 10", len(costs))
	}
	for i, c := range costs[:8] {
		if got := text(c); got != "+$0.0223" {
			t.Errorf("row %d: cost delta %q, want +$0.0223 (the 8 gpt-5 plans first)", i, got)
		}
	}
	if got := text(costs[8]); got != "−$0.00140" || !strings.Contains(attr(costs[8], "class"), "better") {
		t.Errorf("row 8: cost delta %q, want the cheap plan's −$0.00140 marked better", got)
	}
	if !strings.Contains(attr(costs[0], "title"), "incumbent $") || !strings.Contains(attr(costs[0], "class"), "worse") {
		t.Errorf("cost cell title %q class %q: want both figures and the rise marked worse", attr(costs[0], "title"), attr(costs[0], "class"))
	}
	for _, j := range byTestID(doc, "pair-judgment")[:8] {
		if got := strings.TrimSpace(text(j)); got != "win" {
			t.Errorf("judgment %q on a gpt-5 plan, want win", got)
		}
	}
	for _, a := range byTestID(doc, "pair-agreement")[:8] {
		if got := strings.TrimSpace(text(a)); got != "differ" {
			t.Errorf("agreement %q on a gpt-5 plan, want differ", got)
		}
	}
	// The active head sorts the other way next; the next page continues the order.
	for _, hd := range byTestID(doc, "sort-head") {
		if attr(hd, "data-sort") != "cost_delta" {
			continue
		}
		a := byTestID(hd, "sort-cost_delta")
		if len(a) != 1 || !strings.Contains(attr(a[0], "href"), "dir=asc") {
			t.Errorf("the sorted head links to %q, want the ascending order", attr(a[0], "href"))
		}
	}
	older := byTestID(doc, "older-link")
	if len(older) != 1 {
		t.Fatal("no next page")
	}
	next := strings.TrimPrefix(attr(older[0], "href"), "/ui")
	rec = get(t, h, next)
	mustStatus(t, rec, http.StatusOK)
	seen := map[string]bool{}
	for _, r := range rows {
		seen[attr(r, "data-request-id")] = true
	}
	for _, c := range byTestID(parseHTML(t, rec.Body.String()), "pair-cost") {
		if got := text(c); got == "+$0.0223" {
			t.Errorf("page 2 holds a gpt-5 plan (%s): the cursor lost the order", got)
		}
	}

	// Judgment ascending by default puts losses first; here ties before wins.
	rec = get(t, h, "/traces?candidate=conductor&sort=judgment&limit=5")
	mustStatus(t, rec, http.StatusOK)
	for _, j := range byTestID(parseHTML(t, rec.Body.String()), "pair-judgment") {
		if got := strings.TrimSpace(text(j)); got != "tie" {
			t.Errorf("judgment sort: %q before the ties ran out", got)
		}
	}
	for _, q := range []string{"sort=price", "sort=cost_delta&dir=up", "sort=cost_delta&after=x&after_id=a", "sort=cost_delta&after=1"} {
		mustStatus(t, get(t, h, "/traces?"+q), http.StatusBadRequest)
	}
}

func TestTracePageOpensWithThePair(t *testing.T) {
	st := plansStore(t)
	h := newTestServer(t, st, NewDefaultConfig())

	rec := get(t, h, "/traces/plan-req-02")
	mustStatus(t, rec, http.StatusOK)
	body := rec.Body.String()
	doc := parseHTML(t, body)
	pair := byTestID(doc, "trace-pair")
	if len(pair) != 1 {
		t.Fatal("no pair section")
	}
	// The pair comes before the request's facts and input, the plan right after it.
	iPair, iPlan, iFacts := strings.Index(body, `data-testid="trace-pair"`), strings.Index(body, `data-testid="pair-plan"`),
		strings.Index(body, `data-testid="trace-facts"`)
	if iPair < 0 || iPlan < iPair || iFacts < iPlan {
		t.Errorf("order: pair at %d, plan at %d, facts at %d; want pair, plan, facts", iPair, iPlan, iFacts)
	}
	cols := byTestID(pair[0], "run-column")
	if len(cols) != 2 || attr(cols[0], "data-mode") != store.ModeIncumbent || attr(cols[1], "data-run-id") != "plan-req-02/v2" {
		t.Fatalf("pair columns: want the incumbent then conductor v2")
	}
	for id, want := range map[string]string{"pair-cost": "+$0.0223", "pair-latency": "+2500 ms", "pair-agreement": "differ", "pair-judgment": "win"} {
		if n := byTestID(pair[0], id); len(n) != 1 || strings.TrimSpace(text(n[0])) != want {
			t.Errorf("%s: want %q", id, want)
		}
	}
	if n := byTestID(pair[0], "pair-judgment-row"); len(n) != 1 || !strings.Contains(text(n[0]), "the candidate's answer is better") {
		t.Error("the pair's judgment row does not say the candidate's answer is better")
	}
	plan := byTestID(doc, "pair-plan")
	if len(plan) != 1 || len(byTestID(plan[0], "plan-step")) != 3 || len(byTestID(plan[0], "workflow-graph")) != 1 {
		t.Error("the candidate's plan (3 steps and its graph) does not follow the pair")
	}
	// Its run detail is shown once.
	if n := strings.Count(body, `id="run-plan-req-02/v2"`); n != 1 {
		t.Errorf("the candidate's run detail appears %d times", n)
	}

	// Another candidate run beside the incumbent: v1, unjudged.
	rec = get(t, h, "/traces/plan-req-02?candidate=plan-req-02/v1")
	mustStatus(t, rec, http.StatusOK)
	pair = byTestID(parseHTML(t, rec.Body.String()), "trace-pair")
	if len(pair) != 1 || attr(pair[0], "data-candidate-run") != "plan-req-02/v1" {
		t.Fatal("candidate=… does not pick the v1 run")
	}
	if n := byTestID(pair[0], "pair-judgment"); len(n) != 1 || strings.TrimSpace(text(n[0])) != "not judged" {
		t.Error("v1 was not judged")
	}
	mustStatus(t, get(t, h, "/traces/plan-req-02?candidate=plan-req-02/inc"), http.StatusBadRequest)
	mustStatus(t, get(t, h, "/traces/plan-req-02?candidate=nope"), http.StatusBadRequest)
}
