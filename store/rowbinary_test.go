package store

import (
	"context"
	"fmt"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestRowBinaryInsertRoundTrip writes rows through the embedded engine's
// RowBinary INSERT and reads them back: every awkward text byte for byte (NUL
// and invalid UTF-8 included), maps, numbers, the zero time; and nothing is
// left in the scratch folder.
func TestRowBinaryInsertRoundTrip(t *testing.T) {
	st := OpenTestStore(t)
	s := st.(*sqlStore)
	ctx := context.Background()
	at := time.Date(2026, 1, 2, 3, 4, 5, 678_000_000, time.UTC)
	var reqs []Request
	for i, a := range awkward {
		reqs = append(reqs, Request{RequestID: fmt.Sprintf("rb-%d", i), ReceivedAt: at, Source: a, App: a, Input: a, InputHash: a,
			SubjectHash: a, Category: a, Metadata: map[string]string{a + "k": a, "x": a}, Novelty: -1})
	}
	reqs = append(reqs, Request{RequestID: "rb-zero", Metadata: map[string]string{}}) // zero time, empty map, novelty 0 (not the column default -1)
	if err := st.InsertRequests(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	got, err := queryRows[Request](ctx, s.t, fmt.Sprintf("SELECT %s FROM %s.requests FINAL ORDER BY request_id", selectList[Request](), s.db))
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]Request{}
	for _, r := range got {
		byID[r.RequestID] = r
	}
	for _, want := range reqs {
		g, ok := byID[want.RequestID]
		if len(want.Metadata) == 0 {
			want.Metadata = nil
		}
		if len(g.Metadata) == 0 {
			g.Metadata = nil
		}
		if !ok || !reflect.DeepEqual(g, want) {
			t.Errorf("%s: read back\n got  %+v\n want %+v", want.RequestID, g, want)
		}
	}

	runs := []Run{{RunID: "r1", RequestID: "rb-0", StartedAt: at, LatencyMs: 812.5, TokensIn: math.MaxInt64, TokensOut: -3, CostUSD: 0.0021,
		Calls: math.MaxInt32, HTTPStatus: 200, Simulated: true, ResponseHeaders: map[string]string{"x-b": "2", "x-a": "1"}, Status: StatusOK}}
	if err := st.InsertRuns(ctx, runs); err != nil {
		t.Fatal(err)
	}
	gotRuns, err := queryRows[Run](ctx, s.t, fmt.Sprintf("SELECT %s FROM %s.runs FINAL WHERE run_id = 'r1'", selectList[Run](), s.db))
	if err != nil || len(gotRuns) != 1 || !reflect.DeepEqual(gotRuns[0], runs[0]) {
		t.Errorf("run read back: %+v, %v\n want %+v", gotRuns, err, runs[0])
	}

	scratch, err := os.ReadDir(s.t.(*embedded).scratch.dir)
	if err != nil || len(scratch) != 0 {
		t.Errorf("scratch folder after the inserts: %v, %v; want empty", scratch, err)
	}
}

// TestRowBinaryRefusesWhatItCannotStore: a NaN or infinite float, an
// integer too wide for its column and a struct field the table lacks are
// errors naming the column.
func TestRowBinaryRefusesWhatItCannotStore(t *testing.T) {
	st := OpenTestStore(t)
	ctx := context.Background()
	cases := []struct {
		name string
		run  Run
		want string
	}{
		{"NaN cost", Run{RunID: "n", CostUSD: math.NaN()}, "cost_usd"},
		{"infinite latency", Run{RunID: "i", LatencyMs: math.Inf(1)}, "latency_ms"},
	}
	for _, tc := range cases {
		err := st.InsertRuns(ctx, []Run{tc.run})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v; want one naming %s", tc.name, err, tc.want)
		}
	}
	w, err := rowBinaryWriter(field{name: "calls", kind: reflect.Int64, typ: reflect.TypeFor[int64]()}, "Int32")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w(nil, reflect.ValueOf(int64(math.MaxInt32)+1)); err == nil || !strings.Contains(err.Error(), "Int32") {
		t.Errorf("an int64 beyond Int32: err = %v; want an error", err)
	}
	type extra struct {
		RunID string `json:"run_id"`
		Nope  string `json:"no_such_column"`
	}
	types := map[string]string{"run_id": "String"}
	if _, err := encodeRowBinary(nil, []extra{{RunID: "x"}}, types); err == nil || !strings.Contains(err.Error(), "no_such_column") {
		t.Errorf("a field the table lacks: err = %v; want one naming it", err)
	}
}

// TestStoredRequestsManyLongIDs: a group commit's dedup lookup of more ids
// than one statement may bind (20,000 ids of 60 bytes, about 1.2 MB) finds
// every stored one.
func TestStoredRequestsManyLongIDs(t *testing.T) {
	st := OpenTestStore(t)
	ctx := context.Background()
	ids := make([]string, 20000)
	var reqs []Request
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%06d", strings.Repeat("x", 53), i)
		if i%7 == 0 {
			reqs = append(reqs, Request{RequestID: ids[i], ReceivedAt: time.Now().UTC()})
		}
	}
	if err := st.InsertRequests(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	got, err := st.StoredRequests(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(reqs) {
		t.Errorf("found %d stored of %d ids; want %d", len(got), len(ids), len(reqs))
	}
}

// TestInsertKeepsABlockAsItCame: with the store's insert setting
// (optimize_on_insert = 0) two writes of one run in one INSERT are both
// written, and FINAL reads the later one, as it does for writes in two
// INSERTs (equal versions: the last row written wins). With the engine's
// default the block would be collapsed on insert and the raw count be 1.
func TestInsertKeepsABlockAsItCame(t *testing.T) {
	st := OpenTestStore(t)
	s := st.(*sqlStore)
	ctx := context.Background()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	first := Run{RunID: "twice", RequestID: "q", StartedAt: at, Status: StatusError}
	last := first
	last.Status = StatusOK
	if err := st.InsertRuns(ctx, []Run{first, last}); err != nil {
		t.Fatal(err)
	}
	type row struct {
		Raw    int64  `json:"raw"`
		Status string `json:"status"`
	}
	got, err := queryRows[row](ctx, s.t, fmt.Sprintf(
		"SELECT (SELECT count() FROM %[1]s.runs WHERE run_id = 'twice') AS raw, (SELECT status FROM %[1]s.runs FINAL WHERE run_id = 'twice') AS status", s.db))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Raw != 2 || got[0].Status != StatusOK {
		t.Fatalf("got %+v; want 2 rows written and FINAL reading status %q", got, StatusOK)
	}
}
