package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestGenerate(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	spec := GenerateSpec{Requests: 200, From: from, To: from.Add(24 * time.Hour)}
	res, err := Generate(ctx, s, spec)
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 200 || res.Runs != 400 || res.Steps != 2000 {
		t.Errorf("result = %+v", res)
	}
	q, err := s.Query(ctx, "SELECT (SELECT count() FROM "+s.db+".requests FINAL), (SELECT count() FROM "+s.db+".runs FINAL), "+
		"(SELECT count() FROM "+s.db+".steps FINAL), (SELECT min(received_at) >= '2026-01-01' AND max(received_at) < '2026-01-02' FROM "+s.db+".requests)")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(q.Rows[0], " "); got != "200 400 2000 1" {
		t.Errorf("stored requests/runs/steps/in-window = %q, want 200 400 2000 1", got)
	}
	page, err := s.SearchTraces(ctx, TraceSearch{TraceFilter: TraceFilter{Limit: 1}})
	if err != nil || len(page) != 1 {
		t.Fatalf("list: %v %v", page, err)
	}
	tr, err := s.GetTrace(ctx, page[0].RequestID)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Runs) != 2 || len(tr.Steps) != 10 || tr.Runs[0].Mode != ModeIncumbent {
		t.Errorf("a generated trace has %d runs, %d steps", len(tr.Runs), len(tr.Steps))
	}
	// Generating the same spec again rewrites the same keys: nothing doubles.
	if _, err := Generate(ctx, s, spec); err != nil {
		t.Fatal(err)
	}
	if q, err = s.Query(ctx, "SELECT count() FROM "+s.db+".runs FINAL"); err != nil || q.Rows[0][0] != "400" {
		t.Errorf("runs after a second generation = %v, %v", q.Rows, err)
	}
	if _, err := Generate(ctx, s, GenerateSpec{Requests: 1, From: from, To: from}); err == nil {
		t.Error("an empty window must be an error")
	}
	if _, err := Generate(ctx, fakeStore{}, spec); !errors.Is(err, ErrGenerateUnsupported) {
		t.Errorf("non-SQL store: %v", err)
	}
}

// fakeStore is a Store that is not a SQL store.
type fakeStore struct{ Store }
