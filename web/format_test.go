package web

import (
	"context"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store"
)

func TestAccessLabel(t *testing.T) {
	tests := []struct{ in, want string }{
		{`"all"`, "all"},
		{"all", "all"},
		{"[]", "none"},
		{" [ ] ", "none"},
		{"[2]", "step 2"},
		{"[0,2]", "steps 0, 2"},
		{"[0, 1, 3]", "steps 0, 1, 3"},
		{"", "—"},
		{`{"odd":1}`, `{"odd":1}`},
	}
	for _, tt := range tests {
		if got := accessLabel(tt.in); got != tt.want {
			t.Errorf("accessLabel(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestNumberFormats(t *testing.T) {
	usd := []struct {
		in   float64
		want string
	}{
		{0, "$0.00"}, {1.5, "$1.50"}, {0.02384, "$0.02384"}, {0.000081, "$0.000081"},
		{0.0000004, "$0.00"}, {12.3456789, "$12.345679"}, {-0.5, "-$0.50"},
	}
	for _, tt := range usd {
		if got := fmtUSD(tt.in); got != tt.want {
			t.Errorf("fmtUSD(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
	ms := []struct {
		in   float64
		want string
	}{{0, "0.0"}, {2.345, "2.3"}, {10, "10"}, {5120.4, "5120"}, {30000, "30000"}}
	for _, tt := range ms {
		if got := fmtMs(tt.in); got != tt.want {
			t.Errorf("fmtMs(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := fmtMsOrDash(0); got != "—" {
		t.Errorf("fmtMsOrDash(0) = %q", got)
	}
	ist := time.Date(2025, 6, 2, 12, 0, 0, 5_000_000, time.FixedZone("CEST", 2*3600))
	if got := fmtTime(ist); got != "2025-06-02 10:00:00.005 UTC" {
		t.Errorf("fmtTime = %q", got)
	}
	if fmtTime(time.Time{}) != "—" || fmtISO(time.Time{}) != "" {
		t.Error("zero time not rendered as absent")
	}
}

func TestParseMessages(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		want   []chatMessage
		wantOK bool
	}{
		{"strings", `[{"role":"system","content":"be brief"},{"role":"user","content":" a\n  b "}]`,
			[]chatMessage{{"system", "be brief"}, {"user", " a\n  b "}}, true},
		{"parts", `[{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"x"}}]}]`,
			[]chatMessage{{"user", "look\n[image x]"}}, true},
		{"media parts", `[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}},` +
			`{"type":"input_audio","input_audio":{"data":"UklGRg==","format":"wav"}},{"type":"file","file":{"filename":"a.pdf","file_data":"data:application/pdf;base64,JVBERi0="}},{"type":"text","text":"and?"}]}]`,
			[]chatMessage{{"user", "[image image/png, 8 bytes, sha256 e1e10747c237]\n[audio audio/wav, 4 bytes, sha256 487a9bdf8ad0]\n[file application/pdf, 5 bytes, sha256 57dd7ee7cd89, a.pdf]\nand?"}}, true},
		{"tool call without content", `[{"role":"assistant","content":null,"tool_calls":[{"id":"c1"}]}]`,
			[]chatMessage{{"assistant", "{\n  \"content\": null,\n  \"role\": \"assistant\",\n  \"tool_calls\": [\n    {\n      \"id\": \"c1\"\n    }\n  ]\n}"}}, true},
		{"not json", `plain prompt`, nil, false},
		{"object", `{"prompt":"x"}`, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseMessages(tt.in)
			if ok != tt.wantOK || !slices.Equal(got, tt.want) {
				t.Errorf("parseMessages = %q, %v; want %q, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestParsePlan(t *testing.T) {
	steps, ok := parsePlan(`{"steps":[{"worker":"w0","subtask":"s0","access":[]},{"worker":"w1","subtask":"s1","access":"all"},{"worker":"w2","subtask":"s2","access":[0,1]}]}`)
	want := []planStep{{0, "w0", "s0", "none"}, {1, "w1", "s1", "all"}, {2, "w2", "s2", "steps 0, 1"}}
	if !ok || !slices.Equal(steps, want) {
		t.Errorf("parsePlan = %v, %v; want %v", steps, ok, want)
	}
	for _, bad := range []string{"", "  ", "not json", `{"plan":[]}`, `[1,2]`} {
		if _, ok := parsePlan(bad); ok {
			t.Errorf("parsePlan(%q) ok", bad)
		}
	}
	// Three empty lists ("keep the previous answer") parse as an empty plan.
	if steps, ok := parsePlan(`{"steps":[]}`); !ok || len(steps) != 0 {
		t.Errorf("empty plan = %v, %v", steps, ok)
	}
}

func TestTraceQueryRoundTrip(t *testing.T) {
	q := traceQuery{App: "a b", Source: "tap", Q: "x&y=z", Limit: 7,
		Before: time.Date(2025, 6, 2, 10, 0, 0, 123_456_789, time.UTC), BeforeID: "req/1?"}
	got, err := parseTraceQuery(q.values())
	if err != nil || got != q {
		t.Fatalf("round trip = %+v, %v; want %+v", got, err, q)
	}
	link := urls{"/ui"}.tracesWith(q)
	u, err := url.Parse(link)
	if err != nil || u.Path != "/ui/traces" {
		t.Fatalf("link %q: %v", link, err)
	}
	if back, err := parseTraceQuery(u.Query()); err != nil || back != q {
		t.Errorf("link round trip = %+v, %v", back, err)
	}
	if empty := (urls{}).tracesWith(traceQuery{}); empty != "/traces" {
		t.Errorf("empty query link = %q", empty)
	}
	for _, bad := range []string{"limit=-1", "limit=501", "limit=ten", "before=2025-06-02", "before_id=x"} {
		v, _ := url.ParseQuery(bad)
		if _, err := parseTraceQuery(v); err == nil || !strings.Contains(err.Error(), strings.SplitN(bad, "=", 2)[0]) {
			t.Errorf("parseTraceQuery(%q) error = %v", bad, err)
		}
	}
}

func TestReportSimulated(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{`{"simulated":true}`, true},
		{`{"simulated":false}`, false},
		{`{"other":1}`, false},
		{``, false},
		{`not json`, false},
		{`{"simulated":"yes"}`, false},
	}
	for _, tt := range tests {
		if got := reportSimulated(tt.in); got != tt.want {
			t.Errorf("reportSimulated(%q) = %v", tt.in, got)
		}
	}
}

func TestPreKeepsLeadingNewlines(t *testing.T) {
	for _, out := range []string{"\n\nindented:\n  x", "\nx", "x\n", "  x"} {
		var b strings.Builder
		if err := stepRow(store.Step{Output: out, Status: store.StatusOK}, -1).Render(context.Background(), &b); err != nil {
			t.Fatal(err)
		}
		// Parse as a browser would: a table row in a table body.
		doc := parseHTML(t, "<table><tbody>"+b.String()+"</tbody></table>")
		outs := byTestID(doc, "step-output")
		if len(outs) != 1 {
			t.Fatalf("%q: %d outputs", out, len(outs))
		}
		var pre string
		for c := outs[0].FirstChild; c != nil; c = c.NextSibling {
			if c.Data == "pre" {
				pre = rawText(c)
			}
		}
		if pre != out {
			t.Errorf("output %q reads back as %q", out, pre)
		}
	}
}
