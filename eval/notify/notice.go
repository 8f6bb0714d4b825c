package notify

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/conductor-shadow/conductor-shadow/eval"
	"github.com/conductor-shadow/conductor-shadow/eval/gate"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// Kinds of verdict (VerdictState.Kind).
const (
	// KindSuite is a suite verdict: one per candidate version and regression set.
	KindSuite = "suite"
	// KindLive is the live verdict on shadow traffic: one per candidate version.
	KindLive = "live"
)

// VerdictState is one verdict as the notifier compares it with the last one
// notified for its key (Kind, Candidate, Version, Set).
type VerdictState struct {
	Kind      string      `json:"kind"`          // KindSuite or KindLive
	Candidate string      `json:"candidate"`     // pipeline name, e.g. "conductor"
	Version   string      `json:"version"`       // the candidate's pipeline version (shadow.Pipeline.Version)
	Set       string      `json:"set,omitempty"` // the regression set's name (suite); "" for live
	Verdict   gate.Status `json:"verdict"`       // PASS, FAIL or INCONCLUSIVE
	// Headline says what the verdict rests on in one line: the suite run's
	// headline, or the live verdict's pairs and running state.
	Headline string `json:"headline"`
	// Gates are the gates that did not pass, FAIL first, then INCONCLUSIVE,
	// in the policy's order.
	Gates []Gate `json:"gates,omitempty"`
	// Page is the web UI path of the evidence: "/suite-runs/<id>" or
	// "/overview"; the notice links to Config.BaseURL + Page.
	Page string    `json:"page"`
	At   time.Time `json:"at"` // when the verdict was reached (UTC)
}

// Gate is one gate of a verdict, with the policy's reason in words.
type Gate struct {
	Name   string      `json:"name"` // e.g. "quality", "latency", "segment lang:ru"
	Status gate.Status `json:"status"`
	Reason string      `json:"reason"`
}

// Notice is what is sent for one change: the new state, the verdict it
// replaces ("" for the first of its key) and the link to the evidence.
type Notice struct {
	VerdictState
	Previous gate.Status `json:"previous,omitempty"`
	Link     string      `json:"link"`
}

// LiveFunc reads the live verdicts now, one per candidate version. The
// notifier calls it every Config.LiveInterval; LiveVerdictsFunc is the one
// over eval.LiveVerdicts.
type LiveFunc func(ctx context.Context) ([]VerdictState, error)

// SuiteStates are a finished suite run's verdicts, one per candidate of
// rep.Comparisons (rep is Analyzed), keyed by the set's name; version names
// each candidate's pipeline version. The headline is the suite run's
// (eval.Report.Headline) and the page its suite run page.
func SuiteStates(rep *eval.Report, version func(candidate string) string) []VerdictState {
	if rep == nil {
		return nil
	}
	out := make([]VerdictState, 0, len(rep.Comparisons))
	for _, c := range rep.Comparisons {
		gates := make([]Gate, 0, len(c.Verdict.Gates))
		for _, g := range c.Verdict.Gates {
			if g.Status != gate.Pass {
				gates = append(gates, Gate{Name: g.Gate, Status: g.Status, Reason: g.Reason})
			}
		}
		// FAIL before INCONCLUSIVE, the policy's order within each.
		slices.SortStableFunc(gates, func(a, b Gate) int { return statusRank(a.Status) - statusRank(b.Status) })
		out = append(out, VerdictState{Kind: KindSuite, Candidate: c.Candidate, Version: version(c.Candidate), Set: rep.SetName,
			Verdict: c.Verdict.Verdict, Headline: rep.Headline, Gates: gates,
			Page: "/suite-runs/" + url.PathEscape(rep.SuiteRunID), At: rep.FinishedAt.UTC()})
	}
	return out
}

func statusRank(s gate.Status) int {
	if s == gate.Fail {
		return 0
	}
	return 1
}

// LiveStates are the live verdicts of sec (eval.LiveVerdicts), one per
// candidate version, at sec's look. The headline says the verdict, its
// sequence and the recommendation; the gates are the rows that did not pass
// (an untrusted judge or selective coverage first, as the verdict lists
// them; FAIL before INCONCLUSIVE), each with its reason.
func LiveStates(sec *eval.LiveSection) []VerdictState {
	if sec == nil {
		return nil
	}
	out := make([]VerdictState, 0, len(sec.Verdicts))
	for _, v := range sec.Verdicts {
		headline := fmt.Sprintf("%s on live traffic since %s: %s; quality %+.1f pts, confidence sequence %s on %d judged pairs and %d failed runs. %s",
			v.Candidate, v.StartedAt.UTC().Format(time.RFC3339), v.Verdict, 100*v.Quality.Estimate, gate.CSText(v.Quality.CS),
			v.Counts.Judged, v.Counts.Failed, v.Recommendation)
		var gates []Gate
		for _, g := range v.Gates {
			if g.Status != gate.Pass {
				gates = append(gates, Gate{Name: g.Gate, Status: g.Status, Reason: g.Reason})
			}
		}
		slices.SortStableFunc(gates, func(a, b Gate) int { return statusRank(a.Status) - statusRank(b.Status) })
		out = append(out, VerdictState{Kind: KindLive, Candidate: v.Candidate, Version: v.Version,
			Verdict: v.Verdict, Headline: headline, Gates: gates, Page: "/overview", At: sec.AsOf.UTC()})
	}
	return out
}

// LiveVerdictsFunc is the LiveFunc of the live verdict the overview and the
// reports show: eval.LiveVerdicts over lr under policy p, as of now, for
// each candidate of versions at its version (candidate → version, the
// configured pipelines).
func LiveVerdictsFunc(lr store.LiveReader, p gate.Policy, versions map[string]string) LiveFunc {
	cands := slices.Sorted(maps.Keys(versions))
	return func(ctx context.Context) ([]VerdictState, error) {
		sec, err := eval.LiveVerdicts(ctx, lr, eval.LiveQuery{Candidates: cands, Versions: versions}, p)
		if err != nil {
			return nil, fmt.Errorf("notify: live verdicts: %w", err)
		}
		return LiveStates(sec), nil
	}
}

// check reports a state the notifier cannot key or word.
func (s VerdictState) check() error {
	switch {
	case s.Kind != KindSuite && s.Kind != KindLive:
		return fmt.Errorf("notify: verdict kind %q: want %q or %q", s.Kind, KindSuite, KindLive)
	case s.Candidate == "":
		return fmt.Errorf("notify: %s verdict without a candidate", s.Kind)
	case s.Verdict != gate.Pass && s.Verdict != gate.Fail && s.Verdict != gate.Inconclusive:
		return fmt.Errorf("notify: %s verdict of %s: %q is not PASS, FAIL or INCONCLUSIVE", s.Kind, s.Candidate, s.Verdict)
	case !strings.HasPrefix(s.Page, "/"):
		return fmt.Errorf("notify: %s verdict of %s: page %q is not a path", s.Kind, s.Candidate, s.Page)
	}
	return nil
}

// Subject is the notice in one line, e.g. "FAIL: conductor (version
// 3f9a0b1c2d3e) on gsm8k-150, was PASS" or "PASS: conductor (version …) on
// live traffic, first verdict".
func (n Notice) Subject() string {
	where := "on " + n.Set
	if n.Kind == KindLive {
		where = "on live traffic"
	}
	was := "first " + n.Kind + " verdict"
	if n.Previous != "" {
		was = "was " + string(n.Previous)
	}
	who := n.Candidate
	if n.Version != "" {
		who += " (version " + n.Version + ")"
	}
	return fmt.Sprintf("%s: %s %s, %s", n.Verdict, who, where, was)
}

// change says what changed in words: "The suite verdict of conductor
// (version …) on gsm8k-150 changed from PASS to FAIL." or "… is FAIL (its
// first).".
func (n Notice) change() string {
	what, where := "suite verdict", "on "+n.Set
	if n.Kind == KindLive {
		what, where = "live verdict", "on live traffic"
	}
	who := n.Candidate
	if n.Version != "" {
		who += " (version " + n.Version + ")"
	}
	if n.Previous == "" {
		return fmt.Sprintf("The %s of %s %s is %s (its first).", what, who, where, n.Verdict)
	}
	return fmt.Sprintf("The %s of %s %s changed from %s to %s.", what, who, where, n.Previous, n.Verdict)
}

// gateHeading names the list of gates that did not pass: "Failing gates",
// "Undecided gates" (all INCONCLUSIVE) or "Failing and undecided gates".
func (n Notice) gateHeading() string {
	var fail, undecided bool
	for _, g := range n.Gates {
		fail = fail || g.Status == gate.Fail
		undecided = undecided || g.Status != gate.Fail
	}
	switch {
	case fail && undecided:
		return "Failing and undecided gates"
	case fail:
		return "Failing gates"
	}
	return "Undecided gates"
}

// maxGates caps the gates a notice lists; the rest are counted.
const maxGates = 10

// cut shortens s to at most n runes, ending in "…" when cut.
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// oneLine replaces control characters (line breaks included) with spaces.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}
