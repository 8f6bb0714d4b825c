package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/eval/gate"
	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/store/storetest"
)

var liveAt = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// evenPairs are n judged pairs of a candidate as good as the incumbent (a
// win and a loss in every 20, the rest ties), every one judged (π = 1),
// alternating English and Russian prompts; change edits the i-th.
func evenPairs(n int, change func(i int, p *storetest.LivePair)) []storetest.LivePair {
	out := make([]storetest.LivePair, n)
	for i := range out {
		p := storetest.LivePair{Language: []string{"en", "ru"}[i%2], Outcome: store.JudgmentTie, InclusionProb: 1}
		switch i % 20 {
		case 0:
			p.Outcome = store.JudgmentWin
		case 1:
			p.Outcome = store.JudgmentLoss
		}
		if change != nil {
			change(i, &p)
		}
		out[i] = p
	}
	return out
}

// canary stores one live canary of candidate's version.
func canary(t *testing.T, st store.JudgmentWriter, candidate, version string, passed bool) {
	t.Helper()
	if err := st.InsertJudgments(context.Background(), []store.Judgment{{RequestID: candidate + "-canary", Pipeline: candidate, PipelineVersion: version,
		CandidateRunID: candidate + "-canary", Judge: "judge-x", Canary: "padded", CanaryPassed: passed, Outcome: store.JudgmentTie, JudgedAt: liveAt.Add(time.Hour), InclusionProb: 1}}); err != nil {
		t.Fatal(err)
	}
}

type liveStore interface {
	store.TraceWriter
	store.JudgmentWriter
	store.LiveReader
}

func verdictOf(t *testing.T, sec *LiveSection, candidate string) LiveCandidate {
	t.Helper()
	for _, v := range sec.Verdicts {
		if v.Candidate == candidate {
			return v
		}
	}
	t.Fatalf("no live verdict of %s in %+v", candidate, sec.Verdicts)
	return LiveCandidate{}
}

// The live verdicts read from the store: each candidate version's one
// sequence from its first live run, cumulative; an equal candidate PASSes,
// one failing a tenth of its runs FAILs (failures are losses), selective
// shedding and a judge that failed its canary withhold the verdict, naming
// why. The overview's window changes no verdict; a look at an earlier time
// reads the sequence as it was then, without restarting it.
func TestLiveVerdictsFromStore(t *testing.T) {
	ctx := context.Background()
	// One store per candidate: in production every request is shadowed by
	// every candidate, so one candidate's traffic would be another's loss.
	open := func() liveStore { return engine.Open(t).(liveStore) }
	st := open()
	// An older version first: the newest sequence is read unless pinned.
	storetest.InsertLivePairs(t, st, "conductor", "v0", liveAt.Add(-48*time.Hour), time.Minute, evenPairs(50, nil))
	storetest.InsertLivePairs(t, st, "conductor", "v1", liveAt, time.Minute, evenPairs(3000, nil))
	failing := open()
	storetest.InsertLivePairs(t, failing, "failing", "f1", liveAt, time.Minute, evenPairs(3000, func(i int, p *storetest.LivePair) {
		if i%10 == 3 {
			p.CandidateStatus, p.Outcome = store.StatusError, ""
		}
		if i%25 == 7 {
			p.CandidateStatus, p.Outcome = store.StatusCancelled, "" // a stop: owed, not a loss
		}
	}))
	shed := open()
	rng := rand.New(rand.NewPCG(1, 2))
	storetest.InsertLivePairs(t, shed, "shed", "s1", liveAt, time.Minute, evenPairs(3000, func(i int, p *storetest.LivePair) {
		if p.Language == "ru" && rng.Float64() < 0.5 {
			p.NotShadowed = "queue_full"
		}
	}))
	untrusted := open()
	storetest.InsertLivePairs(t, untrusted, "untrusted", "u1", liveAt, time.Minute, evenPairs(3000, nil))
	canary(t, st, "conductor", "v1", true)
	canary(t, failing, "failing", "f1", true)
	canary(t, shed, "shed", "s1", true)
	canary(t, untrusted, "untrusted", "u1", false)

	pol := gate.NewDefaultPolicy()
	asOf := liveAt.Add(60 * time.Hour) // every pair settled
	look := func(lr store.LiveReader, candidate string) LiveCandidate {
		t.Helper()
		sec, err := LiveVerdicts(ctx, lr, LiveQuery{AsOf: asOf}, pol)
		if err != nil {
			t.Fatal(err)
		}
		if sec.Rule != gate.LiveRule || !sec.AsOf.Equal(asOf) {
			t.Errorf("section %+v", sec)
		}
		return verdictOf(t, sec, candidate)
	}
	c := look(st, "conductor")
	if c.Version != "v1" || !c.StartedAt.Equal(liveAt) || !c.Through.Equal(asOf.Add(-time.Hour)) || c.Counts.Observed != 3000 || c.Counts.Judged != 3000 {
		t.Errorf("conductor: version %s since %v through %v, counts %+v", c.Version, c.StartedAt, c.Through, c.Counts)
	}
	if c.Verdict != gate.Pass || c.Action != gate.ActionCutOver {
		t.Errorf("conductor: %s (%s): %+v", c.Verdict, c.Action, c.Gates)
	}
	if f := look(failing, "failing"); f.Verdict != gate.Fail || f.Counts.Failed != 300 || f.Counts.Observed != 3000-120 {
		t.Errorf("failing: %s, counts %+v (want 300 failed runs as losses, 120 cancelled left out)", f.Verdict, f.Counts)
	}
	if s := look(shed, "shed"); s.Verdict != gate.Inconclusive || len(s.Withheld) != 1 || !strings.Contains(s.Withheld[0], "shadowed differs by lang") ||
		len(s.ShedReasons) != 1 || s.ShedReasons[0].Reason != "queue_full" {
		t.Errorf("shed: %s, withheld %v, reasons %v", s.Verdict, s.Withheld, s.ShedReasons)
	}
	if u := look(untrusted, "untrusted"); u.Verdict != gate.Inconclusive || len(u.Withheld) == 0 || !strings.Contains(strings.Join(u.Withheld, " "), "canar") {
		t.Errorf("untrusted: %s, withheld %v", u.Verdict, u.Withheld)
	}

	// The overview's window picks only the coverage shown next to the verdict.
	for _, w := range [][2]time.Time{{liveAt, liveAt.Add(24 * time.Hour)}, {liveAt.Add(36 * time.Hour), liveAt.Add(48 * time.Hour)}} {
		ws, err := LiveVerdicts(ctx, st, LiveQuery{Candidates: []string{"conductor"}, AsOf: asOf, WindowFrom: w[0], WindowTo: w[1]}, pol)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(ws.Verdicts[0].LiveVerdict)
		b, _ := json.Marshal(c.LiveVerdict)
		if string(a) != string(b) {
			t.Errorf("window %v changed the verdict:\n%s\nvs\n%s", w, a, b)
		}
		if len(ws.Verdicts[0].WindowCoverage) == 0 || ws.Verdicts[0].WindowCoverage[0].Recorded != int64(w[1].Sub(w[0])/time.Minute) {
			t.Errorf("window %v: coverage %+v, want the window's only", w, ws.Verdicts[0].WindowCoverage)
		}
	}

	// Read in pages of 700 observations: the same verdict.
	paged, err := LiveVerdicts(ctx, st, LiveQuery{Candidates: []string{"conductor"}, AsOf: asOf, PageSize: 700}, pol)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(paged.Verdicts[0].LiveVerdict)
	b, _ := json.Marshal(c.LiveVerdict)
	if string(a) != string(b) || paged.Verdicts[0].Counts.Observed != 3000 {
		t.Errorf("paged read differs:\n%s\nvs\n%s", a, b)
	}
	// An earlier look reads the same sequence as it stood then.
	early, err := LiveVerdicts(ctx, st, LiveQuery{Candidates: []string{"conductor"}, AsOf: liveAt.Add(11 * time.Hour)}, pol)
	if err != nil {
		t.Fatal(err)
	}
	if e := early.Verdicts[0]; !e.StartedAt.Equal(liveAt) || e.Counts.Observed != 600 {
		t.Errorf("look at +11h: since %v, %d observations, want the first 600 (10 hours settled)", e.StartedAt, e.Counts.Observed)
	}
	// A pinned version is read instead of the newest.
	old, err := LiveVerdicts(ctx, st, LiveQuery{Candidates: []string{"conductor"}, Versions: map[string]string{"conductor": "v0"}, AsOf: asOf}, pol)
	if err != nil || len(old.Verdicts) != 1 || old.Verdicts[0].Version != "v0" || old.Verdicts[0].Counts.Observed != 50 {
		t.Errorf("pinned v0: %+v, %v", old.Verdicts, err)
	}
}

// Judges that lie, in both orders as the product asks (PairOutcome): always
// "A", always "B" and a coin make the pairs inconsistent and the position
// consistency rule withholds the verdict; a judge that always prefers the
// longer (the candidate's) answer is consistent, and only its failed padding
// canary keeps it from PASSing a candidate 10 points worse. With no live
// canary at all the judge is unchecked: no verdict either.
func TestLiveLyingJudges(t *testing.T) {
	pol := gate.NewDefaultPolicy()
	rng := rand.New(rand.NewPCG(3, 4))
	judges := map[string]func(truth string) (string, string){
		"always A": func(string) (string, string) { return store.VerdictIncumbent, store.VerdictCandidate },
		"always B": func(string) (string, string) { return store.VerdictCandidate, store.VerdictIncumbent },
		"random": func(string) (string, string) {
			pick := func() string {
				return []string{store.VerdictIncumbent, store.VerdictCandidate, store.VerdictTie}[rng.IntN(3)]
			}
			return pick(), pick()
		},
		"longer wins": func(string) (string, string) { return store.VerdictCandidate, store.VerdictCandidate },
	}
	for name, judge := range judges {
		for _, canaries := range []struct {
			n, failed int64
		}{{5, 0}, {5, 5}, {0, 0}} {
			seq, err := gate.NewLiveSequence(pol)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 6000 {
				truth := store.VerdictTie // the candidate is 10 points worse: loses 1 pair in 10
				if i%10 == 0 {
					truth = store.VerdictIncumbent
				}
				v1, v2 := judge(truth)
				o := store.LiveObservation{StartedAt: liveAt.Add(time.Duration(i) * time.Minute), Status: store.StatusOK, CostUSD: 0.002, LatencyMs: 1000,
					IncumbentFound: true, IncumbentStatus: store.StatusOK, IncumbentCostUSD: 0.002, IncumbentLatencyMs: 1000,
					Outcome: PairOutcome(v1, v2), InclusionProb: 1, JudgedAt: liveAt.Add(time.Duration(i) * time.Minute)}
				seq.Observe(LiveObs(o))
			}
			stat := store.JudgeStat{Pipeline: "conductor", Judge: "judge-x", Canaries: canaries.n, CanariesFailed: canaries.failed}
			v, _ := LiveLook(pol, seq, []store.JudgeStat{stat}, gate.ReviewEvidence{}, nil, 0)
			trusted := name == "longer wins" && canaries.n > 0 && canaries.failed == 0
			switch {
			case trusted && v.Verdict != gate.Pass:
				// Consistent and passing its canaries: this judge's lie is
				// exactly what the padded canary exists to catch.
				t.Errorf("%s, canaries %+v: %s; a consistent judge that passed its canaries is believed", name, canaries, v.Verdict)
			case !trusted && (v.Verdict != gate.Inconclusive || len(v.Withheld) == 0):
				t.Errorf("%s, canaries %+v: %s, withheld %v; want INCONCLUSIVE naming the judge", name, canaries, v.Verdict, v.Withheld)
			}
		}
	}
}

// A suite run's report has the live section of its candidate version as of
// the run's end, whatever its shift window: the sequence since the version's
// first live run.
func TestSuiteReportLiveSection(t *testing.T) {
	ctx := context.Background()
	set, err := LoadSet("testdata/sets/report-mini.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	st := engine.Open(t)
	start := time.Now().UTC().Add(-30 * 24 * time.Hour).Truncate(time.Millisecond)
	storetest.InsertLivePairs(t, st.(liveStore), "conductor", "v1", start, 10*time.Minute, evenPairs(400, nil))
	inc, cand := reportPipelines()
	var first []byte
	for _, window := range []time.Duration{24 * time.Hour, 7 * 24 * time.Hour} {
		rep, err := RunSuite(ctx, SuiteStoresOf(store.NewRoles(st)), set, inc, []shadow.Pipeline{cand},
			SuiteOptions{SuiteRunID: "suite-live-" + window.String(), ShiftWindow: window, Policy: &gate.Policy{Version: "p", Confidence: 0.95, MinN: 1,
				Quality: &gate.QualityGate{MarginPoints: 3, EffectPoints: 5}, MaxRunErrorShare: &quarter}})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Live == nil {
			t.Fatalf("no live section: %s", rep.LiveError)
		}
		v := rep.Live.Verdicts
		if len(v) != 1 || v[0].Candidate != "conductor" || v[0].Version != "v1" || !v[0].StartedAt.Equal(start) || v[0].Counts.Observed != 400 {
			t.Fatalf("window %v: live section %+v", window, v)
		}
		b, _ := json.Marshal(v[0].LiveVerdict)
		if first == nil {
			first = b
		} else if string(b) != string(first) {
			t.Errorf("the shift window changed the live verdict:\n%s\nvs\n%s", b, first)
		}
		md := rep.Markdown()
		for _, want := range []string{"## Live verdict", "### conductor (version", "Rollback rule:", "| quality |", "| coverage |"} {
			if !strings.Contains(md, want) {
				t.Errorf("markdown lacks %q:\n%s", want, md)
			}
		}
		page, err := rep.HTML()
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{`data-testid="live-section"`, `data-testid="live-gates"`, `data-testid="live-recommendation"`, `data-testid="live-advice"`} {
			if !strings.Contains(page, want) {
				t.Errorf("HTML lacks %q", want)
			}
		}
		js, err := rep.JSON()
		if err != nil {
			t.Fatal(err)
		}
		var back struct {
			Live *LiveSection `json:"live"`
		}
		if err := json.Unmarshal(js, &back); err != nil || back.Live == nil || back.Live.Verdicts[0].Verdict != v[0].Verdict {
			t.Errorf("JSON live section %+v, %v", back.Live, err)
		}
	}
}

// TestLiveHumanReviewHoldsBackALyingJudge: "the longer answer wins" is
// consistent in both orders and passes canaries that count only, so the
// judge rules alone believe it (TestLiveLyingJudges); humans who reviewed
// its pairs disagree with it, and its κ below min_judge_kappa makes the
// live verdict INCONCLUSIVE naming human review. An honest judge reviewed
// the same way keeps its verdict; of two judges the weakest counts.
func TestLiveHumanReviewHoldsBackALyingJudge(t *testing.T) {
	pol := gate.NewDefaultPolicy()
	truth := func(i int) string { // the candidate is 10 points worse
		if i%10 == 0 {
			return store.VerdictIncumbent
		}
		return store.VerdictTie
	}
	reviews := func(judge string, outcome func(i int) string) []store.ReviewedPair {
		var rows []store.ReviewedPair
		for i := range 120 {
			rows = append(rows, store.ReviewedPair{RequestID: fmt.Sprintf("r%d", i), Pipeline: "conductor", CandidateRunID: fmt.Sprintf("c%d", i),
				Reviewer: "rev-1", Label: truth(i), InclusionProb: 0.2, Judge: judge, Outcome: outcome(i)})
		}
		return rows
	}
	lying := func(int) string { return store.JudgmentWin }
	honest := func(i int) string {
		if truth(i) == store.VerdictIncumbent {
			return store.JudgmentLoss
		}
		return store.JudgmentTie
	}
	h := AgreementOf(append(reviews("judge-long", lying), reviews("judge-honest", honest)...), pol.Confidence)
	evOf := func(judge string) gate.ReviewEvidence {
		a, ok := h.Judge(judge)
		if !ok {
			t.Fatalf("no agreement for %s", judge)
		}
		return a.Evidence()
	}
	for _, tc := range []struct {
		name     string
		outcome  func(i int) string
		review   gate.ReviewEvidence
		withheld bool
	}{
		{"longer wins, reviewed", lying, evOf("judge-long"), true},
		{"honest, reviewed", honest, evOf("judge-honest"), false},
	} {
		seq, err := gate.NewLiveSequence(pol)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 6000 {
			out := tc.outcome(i)
			o := store.LiveObservation{StartedAt: liveAt.Add(time.Duration(i) * time.Minute), Status: store.StatusOK, CostUSD: 0.002, LatencyMs: 1000,
				IncumbentFound: true, IncumbentStatus: store.StatusOK, IncumbentCostUSD: 0.002, IncumbentLatencyMs: 1000,
				Outcome: out, InclusionProb: 1, JudgedAt: liveAt.Add(time.Duration(i) * time.Minute)}
			seq.Observe(LiveObs(o))
		}
		stat := store.JudgeStat{Pipeline: "conductor", Judge: "judge-x", Canaries: 5}
		v, _ := LiveLook(pol, seq, []store.JudgeStat{stat}, tc.review, nil, 0)
		named := slices.ContainsFunc(v.Withheld, func(s string) bool { return strings.Contains(s, gate.GateHumanReview) || strings.Contains(s, "human") })
		switch {
		case tc.withheld && (v.Verdict != gate.Inconclusive || !named):
			t.Errorf("%s: %s, withheld %v; want INCONCLUSIVE naming human review (κ %+v)", tc.name, v.Verdict, v.Withheld, tc.review.Kappa)
		case !tc.withheld && named:
			t.Errorf("%s: %s, withheld %v; an honest judge's review holds nothing back", tc.name, v.Verdict, v.Withheld)
		}
	}
	if long, hon := kappaLower(evOf("judge-long")), kappaLower(evOf("judge-honest")); long >= hon {
		t.Fatalf("κ lower bounds: lying %.2f, honest %.2f; want the lying judge's lower", long, hon)
	}
}
