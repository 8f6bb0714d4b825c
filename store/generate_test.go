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

// TestGeneratedRunsMarked: Generate marks its runs generated, and migration
// 0291 marks the runs of generated requests written before the column
// existed (here: written with Generated false, then the migration's
// statements run again), leaving every other run production's.
func TestGeneratedRunsMarked(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := Generate(ctx, s, GenerateSpec{Requests: 20, From: from, To: from.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	marked := func() string {
		t.Helper()
		q, err := s.Query(ctx, "SELECT countIf(generated), countIf(NOT generated) FROM "+s.db+".runs FINAL")
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(q.Rows[0], " ")
	}
	if got := marked(); got != "40 0" {
		t.Fatalf("generated and production runs after Generate: %s, want 40 0", got)
	}
	// Written as before migration 0291: the generated runs unmarked.
	old := []Request{{RequestID: "old-gen", ReceivedAt: from, Source: SourceGenerated}, {RequestID: "live", ReceivedAt: from, Source: SourceTap}}
	if err := s.InsertRequests(ctx, old); err != nil {
		t.Fatal(err)
	}
	var runs []Run
	for _, r := range old {
		for _, mode := range []string{ModeIncumbent, ModeCandidate} {
			runs = append(runs, Run{RunID: r.RequestID + "-" + mode, RequestID: r.RequestID, Pipeline: mode, Mode: mode, StartedAt: from, Status: StatusOK})
		}
	}
	if err := s.InsertRuns(ctx, runs); err != nil {
		t.Fatal(err)
	}
	if got := marked(); got != "40 4" {
		t.Fatalf("before the migration's update: %s, want 40 4", got)
	}
	migs, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	var ran bool
	for _, m := range migs {
		if m.version != 291 {
			continue
		}
		for _, st := range substituteDB(m.statements, s.db) {
			if err := s.t.exec(ctx, st, nil); err != nil {
				t.Fatalf("migration 0291: %v", err)
			}
		}
		ran = true
	}
	if !ran {
		t.Fatal("no migration 0291")
	}
	if got := marked(); got != "42 2" {
		t.Errorf("after the migration: %s, want 42 2 (the old generated request's two runs marked, the live ones not)", got)
	}
}
