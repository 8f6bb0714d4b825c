package store

import (
	"context"
	"testing"
	"time"
)

// TestNewestTraffic reads the newest traffic request's receive time on the
// real engine: suite requests and other apps do not count, an empty store
// has none.
func TestNewestTraffic(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	if got, err := s.NewestTraffic(ctx, ""); err != nil || !got.IsZero() {
		t.Fatalf("empty store: NewestTraffic = %v, %v; want the zero time", got, err)
	}
	base := time.Date(2026, 11, 23, 0, 10, 49, 613e6, time.UTC)
	reqs := []Request{
		{RequestID: "r1", ReceivedAt: base, Source: SourceReplay, App: "math"},
		{RequestID: "r2", ReceivedAt: base.Add(2 * time.Hour), Source: SourceTap, App: "chat"},
		{RequestID: "s1", ReceivedAt: base.Add(9 * 24 * time.Hour), Source: SourceSuite, App: "math"},
	}
	if err := s.InsertRequests(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		app  string
		want time.Time
	}{{"", base.Add(2 * time.Hour)}, {"math", base}, {"chat", base.Add(2 * time.Hour)}, {"none", time.Time{}}} {
		got, err := s.NewestTraffic(ctx, c.app)
		if err != nil {
			t.Fatalf("app %q: %v", c.app, err)
		}
		if !got.Equal(c.want) {
			t.Errorf("app %q: NewestTraffic = %v, want %v", c.app, got, c.want)
		}
	}
}
