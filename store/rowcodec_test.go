package store

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// awkward holds texts that must survive the row codec byte for byte, invalid
// UTF-8 included (encoding/json would turn those into U+FFFD).
var awkward = []string{
	"",
	"plain",
	"quote \" backslash \\ slash / tab \t newline \n cr \r",
	"NUL \x00 and controls \x01\x08\x0c\x1b\x1f\x7f",
	"invalid UTF-8: \xff\xfe \xc3\x28 \xe2\x82 \xf0\x28\x8c\x28 end",
	"lone surrogate text \\ud800 stays text",
	"日本語 · العربية · עברית · русский · 🧪",
}

func TestRowCodecRoundTrip(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 678_000_000, time.UTC)
	for i, s := range awkward {
		in := Request{RequestID: s, ReceivedAt: at, Source: s, App: s, Input: s, InputHash: s, SubjectHash: s,
			Category: s, Metadata: map[string]string{s + "k": s, "x": s}}
		b, err := encodeRow(nil, in)
		if err != nil {
			t.Fatalf("%d: encode: %v", i, err)
		}
		out, err := decodeRow[Request](b)
		if err != nil {
			t.Fatalf("%d: decode %q: %v", i, b, err)
		}
		if !reflect.DeepEqual(in, out) {
			t.Errorf("%d: round trip\n in  %+v\n out %+v", i, in, out)
		}
	}
	sr := SuiteRun{SuiteRunID: "x", Candidates: []string{awkward[4], awkward[3]}, StartedAt: at}
	b, err := encodeRow(nil, sr)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeRow[SuiteRun](b)
	if err != nil || !reflect.DeepEqual(got, sr) {
		t.Errorf("suite run round trip: %+v, %v", got, err)
	}
}

func TestRowCodecZeroTimeAndEmpties(t *testing.T) {
	b, err := encodeRow(nil, Case{SuiteRunID: "s", Choices: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := decodeRow[Case](b)
	if err != nil || c.Choices != nil || c.SuiteRunID != "s" {
		t.Errorf("empty slice should read back nil: %+v, %v", c, err)
	}
	b, _ = encodeRow(nil, Run{RunID: "r"})
	r, err := decodeRow[Run](b)
	if err != nil || !r.StartedAt.IsZero() {
		t.Errorf("zero time should round-trip as zero: %v, %v", r.StartedAt, err)
	}
}

func TestRowCodecRejectsNaN(t *testing.T) {
	var nan float64
	nan = nan / nan
	if _, err := encodeRow(nil, Run{RunID: "r", CostUSD: nan}); err == nil {
		t.Fatal("NaN cost encoded; want an error")
	}
}

// TestRowCodecGolden pins the JSONEachRow text of one record of each table.
func TestRowCodecGolden(t *testing.T) {
	at := time.Date(2026, 3, 14, 9, 26, 53, 589_000_000, time.UTC)
	rows := []any{
		Request{RequestID: "req-1", ReceivedAt: at, Source: SourceTap, App: "bot", Input: `[{"role":"user","content":"hi\n"}]`,
			InputHash: "ab", Category: "chat", Metadata: map[string]string{"b": "2", "a": "1"}},
		Run{RunID: "run-1", RequestID: "req-1", Pipeline: "conductor", Mode: ModeCandidate, StartedAt: at, LatencyMs: 812.5,
			Status: StatusOK, TokensIn: 1200, TokensOut: 77, CostUSD: 0.02384, Calls: 3, Simulated: true},
		Step{RunID: "run-1", Index: 2, Parent: -1, Role: "worker", Access: `"all"`, StartedAt: at, TTFTMs: 41.5, Attempt: 1},
		Score{RunID: "run-1", Grader: "numeric", Value: 1, Passed: true, CreatedAt: at},
		SuiteRun{SuiteRunID: "sr-1", Candidates: []string{"conductor", "moa"}, StartedAt: at},
		Case{SuiteRunID: "sr-1", CaseID: "c1", Choices: []string{"A", "B"}},
	}
	var got []byte
	for _, r := range rows {
		var err error
		if got, err = encodeRow(got, r); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join("testdata", "rows.jsonl")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	if string(got) != string(want) {
		t.Errorf("encoded rows differ from %s:\n got\n%s\n want\n%s", path, got, want)
	}
}
