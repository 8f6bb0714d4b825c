package store

import (
	"context"
	"testing"
	"time"
)

// A later write of a verdict key replaces its state, other keys stay apart
// (the sink and the set are part of the key), and the text round-trips.
func TestVerdictNoticesLastWriteWins(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	at := time.Date(2026, 3, 2, 9, 0, 0, 123_000_000, time.UTC)
	pending := VerdictNotice{Sink: "webhook", Kind: "suite", Candidate: "conductor", CandidateVersion: "v1", SetName: "gsm8k-150",
		Verdict: "FAIL", Previous: "PASS", Status: NoticePending, Notice: `{"headline":"gsm8k-150 (150 cases): « worse »"}`, ChangedAt: at}
	otherSink := pending
	otherSink.Sink = "email"
	otherSet := pending
	otherSet.SetName = "mmlu-100"
	if err := s.InsertVerdictNotices(ctx, []VerdictNotice{pending, otherSink, otherSet}); err != nil {
		t.Fatal(err)
	}
	sent := pending
	sent.Status, sent.Attempts = NoticeSent, 2
	if err := s.InsertVerdictNotices(ctx, []VerdictNotice{sent}); err != nil {
		t.Fatal(err)
	}
	got, err := s.VerdictNotices(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("%d keys, want 3: %+v", len(got), got)
	}
	want := map[string]string{"email/gsm8k-150": NoticePending, "webhook/gsm8k-150": NoticeSent, "webhook/mmlu-100": NoticePending}
	for _, n := range got {
		if w := want[n.Sink+"/"+n.SetName]; n.Status != w {
			t.Errorf("%s/%s: status %q, want %q", n.Sink, n.SetName, n.Status, w)
		}
		if n.Notice != pending.Notice || !n.ChangedAt.Equal(at) || n.Verdict != "FAIL" || n.Previous != "PASS" {
			t.Errorf("round trip: %+v", n)
		}
		if n.Status == NoticeSent && n.Attempts != 2 {
			t.Errorf("attempts %d, want 2", n.Attempts)
		}
	}
}
