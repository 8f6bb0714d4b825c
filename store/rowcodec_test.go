package store

import (
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
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

// The embedded transport writes rows as RowBinary (rowbinary.go) and reads
// them as JSONEachRow; these render rows as the engine's JSONEachRow output
// does, for the decoder's tests.

// appendJSONString appends s as a JSON string literal, keeping non-ASCII bytes
// (including invalid UTF-8) as they are.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\t':
			b = append(b, '\\', 't')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c < 0x20 || c == 0x7f:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// encodeRow appends v (a model struct) as one JSON object and a newline.
func encodeRow(b []byte, v any) ([]byte, error) {
	rv := reflect.ValueOf(v)
	b = append(b, '{')
	for i, f := range fieldsOf(rv.Type()) {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, f.name)
		b = append(b, ':')
		fv := rv.Field(f.index)
		switch {
		case f.typ == timeType:
			b = appendJSONString(b, encodeTime(fv.Interface().(time.Time)))
		case f.kind == reflect.String:
			b = appendJSONString(b, fv.String())
		case f.kind == reflect.Bool:
			b = strconv.AppendBool(b, fv.Bool())
		case f.kind >= reflect.Int && f.kind <= reflect.Int64:
			b = strconv.AppendInt(b, fv.Int(), 10)
		case f.kind == reflect.Float64 || f.kind == reflect.Float32:
			x := fv.Float()
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, fmt.Errorf("column %s: %v is not a storable number", f.name, x)
			}
			b = strconv.AppendFloat(b, x, 'g', -1, 64)
		case f.kind == reflect.Slice && f.typ.Elem().Kind() == reflect.String:
			b = append(b, '[')
			for j := range fv.Len() {
				if j > 0 {
					b = append(b, ',')
				}
				b = appendJSONString(b, fv.Index(j).String())
			}
			b = append(b, ']')
		case f.kind == reflect.Map && f.typ.Key().Kind() == reflect.String && f.typ.Elem().Kind() == reflect.String:
			b = append(b, '{')
			for j, k := range sortedKeys(fv) {
				if j > 0 {
					b = append(b, ',')
				}
				b = appendJSONString(b, k)
				b = append(b, ':')
				b = appendJSONString(b, fv.MapIndex(reflect.ValueOf(k)).String())
			}
			b = append(b, '}')
		default:
			return nil, fmt.Errorf("column %s: unsupported Go type %s", f.name, f.typ)
		}
	}
	return append(b, '}', '\n'), nil
}
