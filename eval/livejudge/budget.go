package livejudge

import (
	"sync"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// Pacing needs this much of today's traffic before it estimates the rate of
// pairs: until then (after midnight UTC or a start) the probability is the
// configured share, and the hard cap alone holds the budget.
const (
	paceMinPairs  = 20
	paceMinWindow = time.Minute
	// paceMinAsked judgments that called the judge make the mean cost per
	// judgment; with fewer, a pair's upper-bound cost stands for it.
	paceMinAsked = 5
)

// Budget is live judging's daily judge budget (USD per UTC day) and its
// pacing. It is counted like the daily shadow cap (shadow.SpendTracker):
// reset at UTC midnight, shared by every judging slot of the process. Spend
// is the judgments' recorded cost (store.Judgment.CostUSD); a judgment is
// started only when its upper-bound cost fits next to what is spent and
// reserved by the judgments under way, so the day's spend never passes the
// budget. Safe for concurrent use.
type Budget struct {
	mu       sync.Mutex
	daily    float64          // USD per UTC day
	now      func() time.Time // the clock
	day      string           // YYYY-MM-DD (UTC) the figures below belong to
	since    time.Time        // start of the rate window: midnight, or the start of the process
	spent    float64          // USD recorded today
	reserved float64          // upper bounds of the judgments under way, USD
	asked    int64            // today's judgments that called the judge
	cost     float64          // their recorded cost, USD
	offered  int64            // pairs offered since `since`
	refused  int64            // judgments the cap refused since the process started
	broken   int64            // judgments whose recorded cost passed their upper bound
}

// NewBudget returns a budget of dailyUSD per UTC day; now is the clock (nil:
// time.Now).
func NewBudget(dailyUSD float64, now func() time.Time) *Budget {
	if now == nil {
		now = time.Now
	}
	b := &Budget{daily: dailyUSD, now: now}
	b.since = now().UTC()
	b.day = b.since.Format(time.DateOnly)
	return b
}

func (b *Budget) rollLocked(t time.Time) {
	if d := t.Format(time.DateOnly); d != b.day {
		b.day, b.spent, b.asked, b.cost, b.offered = d, 0, 0, 0, 0
		b.since = t.Truncate(24 * time.Hour)
	}
}

// Restore adds what the store says was spent today (LiveJudgeDay) before
// this process started; a day other than today is ignored.
func (b *Budget) Restore(d store.LiveJudgeDay) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.rollLocked(b.now().UTC())
	if d.Day != b.day {
		return
	}
	b.spent += d.CostUSD
	b.asked += d.Asked
	b.cost += d.CostUSD
}

// Probability is the inclusion probability of the next pair, and counts it
// as offered: share, lowered by pacing when the budget left today cannot pay
// share of the pairs expected before midnight. Expected pairs = today's rate
// of offered pairs (pairs since midnight or the start, over the time since)
// × the seconds left until midnight UTC; expected cost per pair = the mean
// recorded cost of today's judgments that called the judge (upperUSD, the
// next judgment's upper bound, until there are paceMinAsked of them). So
//
//	p = min(share, (budget − spent − reserved − upperUSD) / (pairs expected × cost per judgment))
//
// (the next judgment's upper bound is kept back: the cap reserves it before
// the judge is asked), and 0 when what is left cannot pay upperUSD: no
// judgment could start, so none is sampled. Until paceMinPairs pairs over
// paceMinWindow give a rate, p is share (the cap alone holds the budget).
func (b *Budget) Probability(share, upperUSD float64) float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now().UTC()
	b.rollLocked(now)
	b.offered++
	left := b.daily - b.spent - b.reserved - upperUSD
	if left < 0 {
		return 0
	}
	elapsed := now.Sub(b.since)
	if b.offered < paceMinPairs || elapsed < paceMinWindow {
		return share
	}
	cost := upperUSD
	if b.asked >= paceMinAsked {
		cost = b.cost / float64(b.asked)
	}
	untilMidnight := now.Truncate(24 * time.Hour).Add(24 * time.Hour).Sub(now)
	expected := float64(b.offered) / elapsed.Seconds() * untilMidnight.Seconds()
	if cost <= 0 || expected*share*cost <= left {
		return share
	}
	return min(share, left/(expected*cost))
}

// Reserve takes upperUSD of today's budget for a judgment about to start;
// false (counted) when it would pass the budget: the judgment is not
// started.
func (b *Budget) Reserve(upperUSD float64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.rollLocked(b.now().UTC())
	if b.spent+b.reserved+upperUSD > b.daily {
		b.refused++
		return false
	}
	b.reserved += upperUSD
	return true
}

// Settle ends a reservation: upperUSD is released and actualUSD, the
// judgment's recorded cost, spent (asked says whether it called the judge).
// A recorded cost above the upper bound is counted (UpperBoundBroken).
func (b *Budget) Settle(upperUSD, actualUSD float64, asked bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.rollLocked(b.now().UTC())
	b.reserved = max(0, b.reserved-upperUSD)
	b.spent += actualUSD
	if asked {
		b.asked++
		b.cost += actualUSD
	}
	if actualUSD > upperUSD {
		b.broken++
	}
}

// BudgetSnapshot is the budget's state now.
type BudgetSnapshot struct {
	Day         string  `json:"day"`          // UTC
	DailyUSD    float64 `json:"daily_usd"`    // the budget
	SpentUSD    float64 `json:"spent_usd"`    // recorded today (before a restart too)
	ReservedUSD float64 `json:"reserved_usd"` // upper bounds of the judgments under way
	// Refused counts judgments not started because their upper bound did
	// not fit; UpperBoundBroken recorded costs above their upper bound (a
	// judge worker that ignored max_tokens).
	Refused          int64 `json:"refused"`
	UpperBoundBroken int64 `json:"upper_bound_broken"`
}

// Snapshot returns the budget's state.
func (b *Budget) Snapshot() BudgetSnapshot {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.rollLocked(b.now().UTC())
	return BudgetSnapshot{Day: b.day, DailyUSD: b.daily, SpentUSD: b.spent, ReservedUSD: b.reserved, Refused: b.refused, UpperBoundBroken: b.broken}
}
