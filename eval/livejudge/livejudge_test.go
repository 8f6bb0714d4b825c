package livejudge_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/conductor-shadow/conductor-shadow/eval/judge/judgetest"
	"github.com/conductor-shadow/conductor-shadow/eval/livejudge"
	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// neverBinds is a daily budget (USD) that budget pacing never reaches in a
// test: pacing extrapolates the offered rate to midnight, so a burst of a
// few dozen pairs in a second projects millions of pairs, and a smaller
// budget would leave some of them out ("paced") depending on the clock.
const neverBinds = 1e12

func liveConfig(share, budget float64) livejudge.Config {
	c := livejudge.NewDefaultConfig()
	c.Share, c.DailyBudgetUSD, c.Concurrency, c.QueueSize = share, budget, 8, 100_000
	return c
}

// 4,000 live pairs (2,000 exchanges × 2 candidates) through the shadow
// workers at share 0.5 with a budget that never binds: the stored sample is
// within ±5% of the share (3.2 binomial standard deviations), every row
// carries p = 0.5, every failed candidate run that was sampled is a loss
// without a judge call, and every other sampled pair took exactly two calls.
func TestLiveShareWithinFivePercent(t *testing.T) {
	const exchanges, share = 2000, 0.5
	j := judgetest.Honest()
	a := &livePipeline{name: "cand-a", answer: qualityAnswers}
	b := &livePipeline{name: "cand-b", answer: qualityAnswers}
	r := newRig(t, rigOptions{cfg: liveConfig(share, 1000), caller: j}, a, b)
	for i := range exchanges {
		r.send(fmt.Sprintf("r-%d", i), judgetest.Answer(fmt.Sprintf("r-%d", i), 5))
	}
	st := r.wait()
	pairs := float64(exchanges * 2)
	f := r.figures(`SELECT count(), countIf(inclusion_prob = 0.5), countIf(outcome = 'loss' AND tokens_in = 0 AND note LIKE 'loss: the candidate has no answer%'),
		countIf(tokens_in > 0), countIf(outcome IN ('win', 'tie', 'loss') AND tokens_in > 0), countIf(outcome = 'unjudged'), countDistinct(request_id, pipeline)
		FROM judgments FINAL WHERE suite_run_id = ''`)
	rows, withP, lossesNoCall, asked, consistent, unjudged, distinct := num(t, f[0]), num(t, f[1]), num(t, f[2]), num(t, f[3]), num(t, f[4]), num(t, f[5]), num(t, f[6])
	judged := rows / pairs
	t.Logf("judged share %.4f of %d live pairs (configured %.2f, ±5%% = %.4f..%.4f); %d rows, %d losses without a call, %d asked; judge calls %d = %.2f per judged pair, %.2f per asked pair",
		judged, int(pairs), share, share*0.95, share*1.05, int(rows), int(lossesNoCall), int(asked), j.Calls(), float64(j.Calls())/rows, float64(j.Calls())/asked)
	if math.Abs(judged-share) > 0.05*share {
		t.Errorf("judged share %.4f, want within ±5%% of %.2f", judged, share)
	}
	if withP != rows || distinct != rows || unjudged != 0 {
		t.Errorf("rows %v: %v with p=0.5, %v distinct pairs, %v unjudged", rows, withP, distinct, unjudged)
	}
	// Every tenth candidate run failed: about a tenth of the sample is a loss without a call.
	if lossesNoCall < 0.07*rows || lossesNoCall > 0.13*rows {
		t.Errorf("%v losses without a call of %v rows, want about a tenth", lossesNoCall, rows)
	}
	if asked+lossesNoCall != rows || consistent != asked {
		t.Errorf("asked %v + decided %v != rows %v, or an honest judge was inconsistent (%v consistent)", asked, lossesNoCall, rows, consistent)
	}
	if j.Calls() != int(2*asked) || st.Calls != int64(j.Calls()) {
		t.Errorf("judge calls %d (stage counted %d), want 2 per asked pair = %v", j.Calls(), st.Calls, 2*asked)
	}
	if got := st.Sampled(); got != int64(rows) {
		t.Errorf("stage sampled %d, store holds %v rows", got, rows)
	}
}

// With a budget far below what share 0.5 of a day's pairs would cost,
// offered evenly over one simulated UTC day, the day's recorded spend never
// passes the budget, pacing lowers the stored inclusion probabilities below
// the share, the pairs it leaves out are counted, and a restart reads the
// day's spend back from the judgments table.
func TestLiveBudgetNeverPassed(t *testing.T) {
	const pairs, share, budget = 2000, 0.5, 0.3 // at share: ~1000 judgments × 0.001 USD = 1 USD
	day := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	clk := &clock{t: day}
	j := judgetest.Honest()
	r := newRig(t, rigOptions{cfg: liveConfig(share, budget), caller: j, now: clk.now},
		&livePipeline{name: "cand", answer: func(id string) (string, bool) { return judgetest.Answer(id, 6), true }})
	step := 24 * time.Hour / pairs
	for i := range pairs {
		clk.set(day.Add(time.Duration(i) * step))
		r.send(fmt.Sprintf("b-%d", i), judgetest.Answer(fmt.Sprintf("b-%d", i), 5))
		r.settle() // one at a time: the pacing sees each judgment's cost before the next draw
	}
	st := r.wait()
	f := r.figures(`SELECT sum(cost_usd), count(), countIf(outcome = 'unjudged'), min(inclusion_prob), max(inclusion_prob),
		countIf(inclusion_prob < 0.5), avgIf(inclusion_prob, judged_at >= '2026-11-30 12:00:00')
		FROM judgments FINAL WHERE suite_run_id = ''`)
	spent, rows, unjudged, pmin, pmax, paced, pLate := num(t, f[0]), num(t, f[1]), num(t, f[2]), num(t, f[3]), num(t, f[4]), num(t, f[5]), num(t, f[6])
	t.Logf("spend %.4f USD of a %.2f USD budget (stage: %.4f, reserved %.4f, %d refused); %d rows (%d unjudged), judged share %.4f vs configured %.2f; p from %.4f to %.4f, %d rows below the share, mean p after noon %.4f; %d pairs paced out",
		spent, budget, st.Budget.SpentUSD, st.Budget.ReservedUSD, st.Budget.Refused, int(rows), int(unjudged), rows/pairs, share, pmin, pmax, int(paced), pLate, st.Decisions[livejudge.DecisionPaced])
	if spent > budget || st.Budget.SpentUSD > budget {
		t.Errorf("spent %.6f USD (stage %.6f), budget %.2f", spent, st.Budget.SpentUSD, budget)
	}
	if pmax != share || pmin >= share || paced == 0 || pLate >= share {
		t.Errorf("pacing not visible: p in [%v, %v], %v rows below the share, mean after noon %v", pmin, pmax, paced, pLate)
	}
	if st.Decisions[livejudge.DecisionPaced] == 0 {
		t.Error("no pair counted as paced out by the budget")
	}
	// The budget bound: the spend reached most of it (pacing spends, not hoards).
	if spent < 0.5*budget {
		t.Errorf("spent only %.4f of %.2f USD", spent, budget)
	}

	// A restart the same day starts from the day's spend in the store.
	r.stop(5 * time.Second)
	r2 := newRig(t, rigOptions{cfg: liveConfig(share, budget), caller: j, now: clk.now, st: r.st},
		&livePipeline{name: "cand", answer: func(id string) (string, bool) { return judgetest.Answer(id, 6), true }})
	if got := r2.stage.Stats().Budget.SpentUSD; math.Abs(got-spent) > 1e-9 {
		t.Errorf("after a restart the budget starts at %.6f USD, the store says %.6f", got, spent)
	}
}

// A re-delivered exchange whose candidate runs again (the in-memory queue
// knows no stored runs) is offered twice and judged once.
func TestLiveRedeliveryJudgedOnce(t *testing.T) {
	j := judgetest.Honest()
	cand := &livePipeline{name: "cand", answer: func(id string) (string, bool) { return judgetest.Answer(id, 6), true }}
	r := newRig(t, rigOptions{cfg: liveConfig(1, neverBinds), caller: j}, cand)
	r.send("again-1", judgetest.Answer("again-1", 5))
	r.wait()
	r.send("again-1", judgetest.Answer("again-1", 5))
	st := r.wait()
	n, _ := cand.runs.Load("again-1")
	if *(n.(*int)) != 2 {
		t.Fatalf("the candidate ran %d times, want 2 (a re-delivery)", *(n.(*int)))
	}
	rows, err := r.st.(store.JudgmentReader).ListJudgments(context.Background(), store.JudgmentQuery{RequestID: "again-1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Outcome != store.JudgmentWin || j.Calls() != 2 || st.Decisions[livejudge.DecisionAlreadyJudged] != 1 {
		t.Errorf("rows %+v, judge calls %d, decisions %v: want one win, 2 calls, one already_judged", rows, j.Calls(), st.Decisions)
	}
}

// A stop while the judge is asked leaves no half judgment: every sampled
// pair is stored "unjudged" (stopped), with no verdict and no error outcome;
// a candidate run cut by the stop is not offered at all (still owed).
func TestLiveStopLeavesNoHalfJudgment(t *testing.T) {
	stall := &stallJudge{started: make(chan struct{}, 64)}
	cand := &livePipeline{name: "cand", answer: func(id string) (string, bool) { return judgetest.Answer(id, 6), true }}
	blocked := &livePipeline{name: "slow", block: true}
	cfg := liveConfig(1, neverBinds)
	cfg.Concurrency = 2
	r := newRig(t, rigOptions{cfg: cfg, caller: stall}, cand, blocked)
	for i := range 6 {
		r.send(fmt.Sprintf("s-%d", i), judgetest.Answer(fmt.Sprintf("s-%d", i), 5))
	}
	<-stall.started // a judgment is under way
	r.stop(2 * time.Second)
	st := r.stage.Stats()
	f := r.figures(`SELECT count(), countIf(outcome = 'unjudged' AND note LIKE 'stopped:%' AND verdict_1 = '' AND verdict_2 = ''),
		countIf(outcome != 'unjudged'), countIf(pipeline = 'slow') FROM judgments FINAL WHERE suite_run_id = ''`)
	rows, stopped, other, slow := num(t, f[0]), num(t, f[1]), num(t, f[2]), num(t, f[3])
	t.Logf("after the stop: %v rows, %v unjudged (stopped), decisions %v", rows, stopped, st.Decisions)
	if rows == 0 || stopped != rows || other != 0 {
		t.Errorf("rows %v, stopped %v, other outcomes %v: want every row unjudged (stopped)", rows, stopped, other)
	}
	if slow != 0 {
		t.Errorf("%v judgments of runs cut by the stop, want none (the run is still owed)", slow)
	}
	if int64(rows) != st.Decisions[livejudge.DecisionUnjudgedStopped] || st.Offered != int64(rows) {
		t.Errorf("offered %d, stopped %d, rows %v", st.Offered, st.Decisions[livejudge.DecisionUnjudgedStopped], rows)
	}
}

// Judges that lie by position (always "A", always "B") make every judged
// live pair inconsistent — never a win — and their live position
// consistency 0; an honest judge's is 1.
func TestLiveLyingJudges(t *testing.T) {
	for _, tc := range []struct {
		name  string
		judge *judgetest.Judge
		pc    float64
	}{{"always-A", judgetest.AlwaysA(), 0}, {"always-B", judgetest.AlwaysB(), 0}, {"honest", judgetest.Honest(), 1}} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, rigOptions{cfg: liveConfig(1, neverBinds), caller: tc.judge}, &livePipeline{name: "cand", answer: qualityAnswers})
			for i := range 60 {
				r.send(fmt.Sprintf("r-%d", i), judgetest.Answer(fmt.Sprintf("r-%d", i), 5))
			}
			st := r.wait()
			stats, err := r.st.(store.LiveJudgmentReader).LiveJudgeStats(context.Background(),
				store.LiveJudgmentQuery{From: time.Now().Add(-time.Hour), To: time.Now().Add(time.Hour)})
			if err != nil || len(stats) != 1 {
				t.Fatalf("%+v %v", stats, err)
			}
			s := stats[0]
			t.Logf("%s: %d wins, %d ties, %d losses (6 without a call), %d inconsistent; position consistency %.2f", tc.name, s.Wins, s.Ties, s.Losses, s.Inconsistent, s.PositionConsistency)
			if s.PositionConsistency != tc.pc {
				t.Errorf("position consistency %v, want %v", s.PositionConsistency, tc.pc)
			}
			// Every pair the judge was asked about is inconsistent. A pair a
			// loaded store could not look up (or whose incumbent it could not
			// read) is counted under its own decision or drop, not judged.
			judged := st.Decisions[livejudge.DecisionJudged]
			if judged < 51 || st.Decisions[livejudge.DecisionDecided] != 6 {
				t.Errorf("decisions %v, dropped %v: want 54 judged (a few lost to a loaded store at most) and 6 decided", st.Decisions, st.Dropped)
			}
			if tc.pc == 0 && (s.Wins != 0 || s.Ties != 0 || s.Losses != 6 || s.Inconsistent != judged) {
				t.Errorf("a lying judge gave %+v: want every one of the %d judged pairs inconsistent and only the 6 failed runs as losses", s, judged)
			}
		})
	}
}

// stallJudge answers no judge call until its context ends.
type stallJudge struct{ started chan struct{} }

func (s *stallJudge) Call(ctx context.Context, worker string, _ []openai.ChatCompletionMessage) (shadow.Call, error) {
	select {
	case s.started <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return shadow.Call{Worker: worker}, ctx.Err()
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*livejudge.Config)
		want string
	}{
		{"default", func(*livejudge.Config) {}, ""},
		{"off without budget", func(c *livejudge.Config) { c.Share, c.DailyBudgetUSD = 0, 0 }, ""},
		{"share above 1", func(c *livejudge.Config) { c.Share = 1.5 }, "share must be in 0..1"},
		{"share NaN", func(c *livejudge.Config) { c.Share = math.NaN() }, "share must be in 0..1"},
		{"no budget", func(c *livejudge.Config) { c.DailyBudgetUSD = 0 }, "never runs without a budget"},
		{"negative budget", func(c *livejudge.Config) { c.DailyBudgetUSD = -1 }, "daily_budget_usd must be >= 0"},
		{"no concurrency", func(c *livejudge.Config) { c.Concurrency = 0 }, "concurrency must be in 1..256"},
		{"no queue", func(c *livejudge.Config) { c.QueueSize = 0 }, "queue_size"},
		{"no output cap", func(c *livejudge.Config) { c.MaxOutputTokens = 0 }, "bounds a judgment's cost"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := livejudge.NewDefaultConfig()
			tc.edit(&c)
			err := c.Validate()
			if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
}

// The draw is the same for the same pair and key, different under another
// key, and uniform: 100,000 draws put 0.2500 ± 0.0055 (4 s.d.) below 0.25.
func TestDraw(t *testing.T) {
	if livejudge.Draw(testKey, "r", "c", "v1") != livejudge.Draw(testKey, "r", "c", "v1") {
		t.Fatal("the draw of one pair changed")
	}
	if livejudge.Draw(testKey, "r", "c", "v1") == livejudge.Draw([]byte("other"), "r", "c", "v1") ||
		livejudge.Draw(testKey, "r", "c", "v1") == livejudge.Draw(testKey, "r", "c", "v2") {
		t.Fatal("the draw ignores the key or the candidate version")
	}
	below := 0
	for i := range 100_000 {
		if livejudge.Draw(testKey, fmt.Sprintf("req-%d", i), "c", "v1") < 0.25 {
			below++
		}
	}
	if share := float64(below) / 100_000; math.Abs(share-0.25) > 0.0055 {
		t.Errorf("%.4f of draws below 0.25", share)
	}
}
