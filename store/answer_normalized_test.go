package store

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAnswerNormalizedMigrationIsNormalizeSQL checks that migration 0290's
// column is normalizeSQL itself (one definition of the normalization).
func TestAnswerNormalizedMigrationIsNormalizeSQL(t *testing.T) {
	migs, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	want := "ADD COLUMN IF NOT EXISTS answer_normalized String MATERIALIZED " + fmt.Sprintf(normalizeSQL, "final_output") + " AFTER final_output"
	for _, m := range migs {
		if m.version == 290 {
			if len(m.statements) == 0 || !strings.Contains(m.statements[0], want) {
				t.Errorf("migration 0290's first statement is not normalizeSQL on final_output:\n%s", m.statements)
			}
			return
		}
	}
	t.Fatal("no migration 0290")
}

// shippedAnswers are the reference answers of the shipped regression sets
// (regression-sets/*.jsonl) and the cases NormalizeAnswer's own test knows.
func shippedAnswers(t *testing.T) []string {
	t.Helper()
	out := []string{
		"  It is   PARIS. ", "The answer is $1,000.", "x \\boxed{12} y \\boxed{18}.", "Answer: B",
		"answer = (C)", "\\boxed{\\frac{14}{3}}", "", "Ünïcode ÀNSWER is 7", "no marker here, 42 apples",
		"The final answer is \\boxed{-3.5}", "tabs\tand\nnewlines",
	}
	files, err := filepath.Glob("../regression-sets/*.jsonl")
	if err != nil || len(files) == 0 {
		t.Fatalf("regression sets: %v (%d files)", err, len(files))
	}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
		for sc.Scan() {
			var c struct {
				Reference string `json:"reference"`
			}
			if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			out = append(out, c.Reference, "The answer is "+c.Reference+".", "so \\boxed{"+c.Reference+"}")
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	return out
}

// TestAnswerNormalizedEqualsNormalizeAnswer writes runs with the shipped
// answers on the real engine and checks that the stored answer_normalized
// equals NormalizeAnswer of final_output, also after a run is re-written
// with another answer.
func TestAnswerNormalizedEqualsNormalizeAnswer(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	answers := shippedAnswers(t)
	at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	var runs []Run
	for i, a := range answers {
		runs = append(runs, Run{RunID: fmt.Sprintf("r%04d", i), RequestID: "q", Pipeline: "p", Mode: ModeCandidate,
			StartedAt: at, Status: StatusOK, FinalOutput: a})
	}
	if err := s.InsertRuns(ctx, runs); err != nil {
		t.Fatal(err)
	}
	rewritten := runs[0]
	rewritten.FinalOutput = "The answer is \\boxed{7}"
	if err := s.InsertRuns(ctx, []Run{rewritten}); err != nil {
		t.Fatal(err)
	}
	type row struct {
		RunID      string `json:"run_id"`
		Output     string `json:"final_output"`
		Normalized string `json:"answer_normalized"`
	}
	rows, err := queryRows[row](ctx, s.t, "SELECT run_id, final_output, answer_normalized FROM "+s.db+".runs FINAL ORDER BY run_id")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(answers) {
		t.Fatalf("%d runs stored, want %d", len(rows), len(answers))
	}
	for _, r := range rows {
		if want := NormalizeAnswer(r.Output); r.Normalized != want {
			t.Errorf("%s: %q stored as %q, NormalizeAnswer gives %q", r.RunID, r.Output, r.Normalized, want)
		}
	}
	if rows[0].Normalized != "7" {
		t.Errorf("the re-written run's answer is normalized as %q, want \"7\"", rows[0].Normalized)
	}
}

// TestAnswerNormalizedBackfill applies migration 0290 to runs written before
// it (the column dropped, the migration's record deleted, the store migrated
// again) and checks the old rows read NormalizeAnswer of their answers.
func TestAnswerNormalizedBackfill(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	for _, stmt := range []string{
		"ALTER TABLE " + s.db + ".runs DROP COLUMN answer_normalized",
		"ALTER TABLE " + s.db + ".schema_migrations DELETE WHERE version = 290 SETTINGS mutations_sync = 2",
	} {
		if err := s.t.exec(ctx, stmt, nil); err != nil {
			t.Fatal(err)
		}
	}
	answers := []string{"The answer is $1,000.", "so \\boxed{1000}", "  PARIS. "}
	var runs []Run
	for i, a := range answers {
		runs = append(runs, Run{RunID: fmt.Sprint("old", i), RequestID: "q", Pipeline: "p", Mode: ModeCandidate,
			StartedAt: time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC), Status: StatusOK, FinalOutput: a})
	}
	if err := s.InsertRuns(ctx, runs); err != nil {
		t.Fatal(err)
	}
	if err := s.migrate(ctx, nil); err != nil {
		t.Fatal(err)
	}
	type row struct {
		Output     string `json:"final_output"`
		Normalized string `json:"answer_normalized"`
	}
	rows, err := queryRows[row](ctx, s.t, "SELECT final_output, answer_normalized FROM "+s.db+".runs FINAL ORDER BY run_id")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(answers) {
		t.Fatalf("%d runs, want %d", len(rows), len(answers))
	}
	for _, r := range rows {
		if want := NormalizeAnswer(r.Output); r.Normalized != want {
			t.Errorf("%q backfilled as %q, want %q", r.Output, r.Normalized, want)
		}
	}
}
