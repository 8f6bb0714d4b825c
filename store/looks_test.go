package store

import (
	"context"
	"testing"
	"time"
)

// TestLooksRoundTrip: a plan's looks come back by look number, only for
// their own plan, and a rewritten look replaces the first write.
func TestLooksRoundTrip(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	key := LookKey{SetName: "gsm8k-150", Incumbent: "incumbent:gpt-4o", Candidate: "conductor", CandidateVersion: "v1", PolicyVersion: "default-3"}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	look := func(k int32, run string, cases int32, verdict string) SuiteLook {
		return SuiteLook{SetName: key.SetName, Incumbent: key.Incumbent, Candidate: key.Candidate, CandidateVersion: key.CandidateVersion,
			PolicyVersion: key.PolicyVersion, Look: k, SuiteRunID: run, Cases: cases, MaxCases: 2000, Fraction: float64(cases) / 2000,
			Boundary: 2.96, Confidence: 0.997, Spending: "obrien-fleming", Verdict: verdict, CreatedAt: at}
	}
	other := look(1, "other", 300, "PASS")
	other.CandidateVersion = "v2"
	if err := s.InsertLooks(ctx, []SuiteLook{look(2, "b", 1200, "INCONCLUSIVE"), look(1, "a", 300, "INCONCLUSIVE"), other}); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertLooks(ctx, []SuiteLook{look(2, "b", 1200, "PASS")}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Looks(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].SuiteRunID != "a" || got[1].SuiteRunID != "b" || got[1].Verdict != "PASS" || got[0].Fraction != 0.15 || !got[0].CreatedAt.Equal(at) {
		t.Errorf("looks = %+v", got)
	}
	if none, err := s.Looks(ctx, LookKey{SetName: "nope"}); err != nil || len(none) != 0 {
		t.Errorf("unknown plan: %v, %v", none, err)
	}
	if NewRoles(s).LookStore == nil {
		t.Error("roles: no LookStore")
	}
}
