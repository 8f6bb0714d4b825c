package web

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// TestTraceFactsLabelEachFactOnce: the tap copies metadata["category"] and
// metadata["source"] into the request's Category and Source, so the trace page
// must not list them a second time among the metadata; a metadata value that
// differs from its fact stays visible under a label of its own.
func TestTraceFactsLabelEachFactOnce(t *testing.T) {
	st := engine.Open(t)
	tests := []struct {
		name       string
		req        store.Request
		wantLabels []string
		wantMeta   []string // the metadata values listed, in label order
	}{
		{"tap metadata repeats category and source",
			store.Request{Source: store.SourceTap, App: "support-bot", Category: "math",
				Metadata: map[string]string{"category": "math", "source": "tap", "tenant": "acme"}},
			[]string{"Received", "App", "Source", "Category", "Input hash", "tenant"}, []string{"acme"}},
		{"replayed request",
			store.Request{Source: store.SourceReplay, App: "search", Category: "lookup",
				Metadata: map[string]string{"category": "lookup", "source": "replay"}},
			[]string{"Received", "App", "Source", "Category", "Input hash"}, nil},
		{"metadata differing from the facts is kept apart",
			store.Request{Source: store.SourceTap, App: "bot", Category: "",
				Metadata: map[string]string{"Category": "billing", "source": "mobile-app", "app": "bot"}},
			[]string{"Received", "App", "Source", "Category", "Input hash", "Category (metadata)", "source (metadata)"},
			[]string{"billing", "mobile-app"}},
		{"no metadata",
			store.Request{Source: store.SourceTap, App: "bot", Category: "code"},
			[]string{"Received", "App", "Source", "Category", "Input hash"}, nil},
	}
	reqs := make([]store.Request, len(tests))
	for i, tt := range tests {
		r := tt.req
		r.RequestID = "facts-" + string(rune('a'+i))
		r.ReceivedAt = t0
		r.Input = `[{"role":"user","content":"hello"}]`
		r.InputHash = strings.Repeat("ab", 32)
		reqs[i] = r
	}
	if err := st.InsertRequests(t.Context(), reqs); err != nil {
		t.Fatal(err)
	}
	h := newTestServer(t, st, NewDefaultConfig())
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := get(t, h, "/traces/"+reqs[i].RequestID)
			mustStatus(t, rec, http.StatusOK)
			doc := parseHTML(t, rec.Body.String())
			var labels []string
			seen := map[string]bool{}
			for _, dt := range byTestID(doc, "fact-label") {
				l := text(dt)
				if seen[strings.ToLower(l)] {
					t.Errorf("label %q appears twice", l)
				}
				seen[strings.ToLower(l)] = true
				labels = append(labels, l)
			}
			if !slices.Equal(labels, tt.wantLabels) {
				t.Errorf("labels %q, want %q", labels, tt.wantLabels)
			}
			var meta []string
			for _, dd := range byTestID(doc, "fact-metadata") {
				meta = append(meta, text(dd))
			}
			if !slices.Equal(meta, tt.wantMeta) {
				t.Errorf("metadata values %q, want %q", meta, tt.wantMeta)
			}
			for id, want := range map[string]string{"fact-source": tt.req.Source, "fact-category": tt.req.Category, "fact-app": tt.req.App} {
				if got := byTestID(doc, id); len(got) != 1 || text(got[0]) != want {
					t.Errorf("%s: %d elements, want one reading %q", id, len(got), want)
				}
			}
		})
	}
}
