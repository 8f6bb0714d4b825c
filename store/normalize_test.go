package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestNormalizeAnswer(t *testing.T) {
	tests := []struct{ in, want string }{
		{"  It is   PARIS. ", "it is paris"},
		{"The answer is $1,000.", "1000"},
		{"Step 1 gives \\boxed{12}; checking again, \\boxed{18}.", "18"},
		{"Let us compute.\nThe final answer is \\boxed{18}", "18"},
		{"Answer: B", "b"},
		{"answer = (C)", "c"},
		{"\\boxed{\\frac{14}{3}}", "\\boxed{\\frac{14}{3}}"}, // nested braces: compared whole
		{"", ""},
	}
	for _, tt := range tests {
		if got := NormalizeAnswer(tt.in); got != tt.want {
			t.Errorf("NormalizeAnswer(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestNormalizeSQLMatchesGo checks that the overview's SQL normalization gives
// exactly NormalizeAnswer's result on the real engine.
func TestNormalizeSQLMatchesGo(t *testing.T) {
	s := openTestStore(t)
	for _, in := range []string{
		"  It is   PARIS. ", "The answer is $1,000.", "x \\boxed{12} y \\boxed{18}.", "Answer: B",
		"answer = (C)", "\\boxed{\\frac{14}{3}}", "", "Ünïcode ÀNSWER is 7", "no marker here, 42 apples",
		"The final answer is \\boxed{-3.5}", "tabs\tand\nnewlines",
	} {
		res, err := s.Query(context.Background(), "SELECT "+fmt.Sprintf(normalizeSQL, quoteString(in)))
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if got, want := res.Rows[0][0], NormalizeAnswer(in); got != want {
			t.Errorf("%q: SQL gives %q, Go gives %q", in, got, want)
		}
	}
}

// TestQueryLimits checks that an ad-hoc query is bounded by time and rows on the
// real engine, and fails with the engine's reason instead of holding the store.
func TestQueryLimits(t *testing.T) {
	needEngine(t)
	cfg := testConfig(testEngine.dir, testDatabase(t))
	cfg.QueryTimeout, cfg.QueryMaxRows, cfg.QueryMaxRowsRead = time.Second, 10, 1<<62
	cfg.EmbeddedConsoleMaxRowsRead, cfg.EmbeddedConsoleMaxBytesRead = 1<<62, 1<<62
	s, err := open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	start := time.Now()
	_, err = s.Query(context.Background(), "SELECT sum(sipHash64(number)) FROM numbers(100000000000)")
	if !heldToLimit(err) {
		t.Fatalf("a runaway query must time out, got %v", err)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Fatalf("the timeout did not stop the query: it ran %v", took)
	}
	// The row cap on a store whose time limit a busy machine cannot reach
	// (the console worker's start counts towards it).
	cfg.QueryTimeout = time.Minute
	rs, err := open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	if _, err := rs.Query(context.Background(), "SELECT number FROM numbers(100)"); err == nil || !strings.Contains(err.Error(), "TOO_MANY_ROWS") {
		t.Fatalf("100 rows over a cap of 10 must fail, got %v", err)
	}
	res, err := rs.Query(context.Background(), "SELECT number FROM numbers(10)")
	if err != nil || len(res.Rows) != 10 {
		t.Fatalf("10 rows within the cap: %v, %v", res.Rows, err)
	}
}
