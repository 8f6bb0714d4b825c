package store

import (
	"reflect"
	"testing"
	"time"
)

// The server transport cannot be exercised here (no server on the test machine);
// these check its value rendering, which must match the embedded engine's.
func TestServerRendering(t *testing.T) {
	at := time.Date(2026, 2, 3, 4, 5, 6, 7_000_000, time.UTC)
	s := "x\xff'"
	tests := []struct {
		v      any
		dbType string
		want   string
	}{
		{"a\tb", "String", "a\tb"},
		{at, "DateTime64(3, 'UTC')", "2026-02-03 04:05:06.007"},
		{at, "DateTime", "2026-02-03 04:05:06"},
		{at, "Date", "2026-02-03"},
		{[]string{"a", "b'"}, "Array(String)", `['a','b\'']`},
		{map[string]string{"k": "v"}, "Map(String, String)", "{'k':'v'}"},
		{(*string)(nil), "Nullable(String)", `\N`},
		{&s, "Nullable(String)", s},
		{0.25, "Float64", "0.25"},
		{uint64(7), "UInt64", "7"},
		{true, "Bool", "true"},
	}
	for _, tc := range tests {
		if got := renderText(reflect.ValueOf(tc.v), tc.dbType, false); got != tc.want {
			t.Errorf("renderText(%v, %s) = %q; want %q", tc.v, tc.dbType, got, tc.want)
		}
	}
}

func TestServerJSONValuesDecode(t *testing.T) {
	at := time.Date(2026, 2, 3, 4, 5, 6, 7_000_000, time.UTC)
	b := []byte{'{'}
	for i, kv := range []struct {
		k string
		v any
	}{
		{"suite_run_id", "sr\xff"}, {"candidates", []string{"a", "b"}}, {"started_at", at},
		{"cases", int32(3)}, {"finished_at", time.Unix(0, 0).UTC()},
	} {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, kv.k)
		b = append(b, ':')
		b = appendJSONValue(b, reflect.ValueOf(kv.v))
	}
	b = append(b, '}')
	got, err := decodeRow[SuiteRun](b)
	if err != nil {
		t.Fatal(err)
	}
	want := SuiteRun{SuiteRunID: "sr\xff", Candidates: []string{"a", "b"}, StartedAt: at, Cases: 3}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v; want %+v", got, want)
	}
}
