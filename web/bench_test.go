package web

import (
	"context"
	"io"
	"testing"
)

// BenchmarkTracePageRender measures the server time of a trace page minus the
// store: building the view (diffs, graph, timeline, Markdown) and rendering it.
func BenchmarkTracePageRender(b *testing.B) {
	md := newMarkdown()
	tr := browserTraces()[0]
	nested := fixtureNestedTrace()
	tr.Runs = append(tr.Runs, nested.Runs[1])
	tr.Steps = append(tr.Steps, nested.Steps...)
	for b.Loop() {
		v := newTraceView(pageMeta{Title: "t", Product: "p"}, md, tr)
		if err := tracePage(v).Render(context.Background(), io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}
