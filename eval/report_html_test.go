package eval

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// Two suite runs of the same set and candidate: the second, where the
// candidate got a case wrong it had right, reports that regression against the
// first in Markdown, JSON and the HTML page, which is self-contained.
func TestReportHTMLAndRegressions(t *testing.T) {
	ctx := context.Background()
	set, err := LoadSet("testdata/sets/report-mini.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	st := engine.Open(t)
	inc, cand := reportPipelines()
	first, err := RunSuite(ctx, SuiteStoresOf(store.NewRoles(st)), set, inc, []shadow.Pipeline{cand}, SuiteOptions{SuiteRunID: "suite-1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Previous) != 0 {
		t.Errorf("first run has a previous run: %+v", first.Previous)
	}
	time.Sleep(2 * time.Millisecond) // started_at is stored to the ms
	a := cand.answers["mmlu-abstract_algebra-37"]
	a.output = "C" // was right ("(B)")
	cand.answers["mmlu-abstract_algebra-37"] = a
	second, err := RunSuite(ctx, SuiteStoresOf(store.NewRoles(st)), set, inc, []shadow.Pipeline{cand}, SuiteOptions{SuiteRunID: "suite-2"})
	if err != nil {
		t.Fatal(err)
	}
	if len(second.Previous) != 1 || second.Previous[0].SuiteRunID != "suite-1" {
		t.Fatalf("previous %+v", second.Previous)
	}
	regs := second.Previous[0].Regressions
	if len(regs) != 2 || regs[0].Segment != "overall" || regs[0].Pipeline != "conductor" || regs[0].Before != 0.8 || regs[0].After != 0.6 ||
		regs[1].Segment != "category:mmlu" || regs[1].Cases != 2 || regs[1].McNemarP != 1 || regs[1].Significant {
		t.Errorf("regressions %+v", regs)
	}
	if !strings.Contains(second.Markdown(), "## Since the previous run `suite-1`") {
		t.Error("markdown lacks the previous-run section")
	}

	sr, err := st.GetSuiteRun(ctx, "suite-2")
	if err != nil {
		t.Fatal(err)
	}
	page, err := second.HTML()
	if err != nil {
		t.Fatal(err)
	}
	if sr.ReportHTML != page {
		t.Error("stored HTML differs from the report's")
	}
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	classes := map[string]int{}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			count[n.Data]++
			for _, a := range n.Attr {
				switch a.Key {
				case "src", "href":
					t.Errorf("external resource: <%s %s=%q>", n.Data, a.Key, a.Val)
				case "class":
					for _, c := range strings.Fields(a.Val) {
						classes[c]++
					}
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	if count["svg"] != 3 || count["script"] != 0 || count["style"] != 1 {
		t.Errorf("elements: svg %d script %d style %d", count["svg"], count["script"], count["style"])
	}
	if classes["regress"] < 2 || classes[second.Verdict] == 0 || classes["banner"] != 1 {
		t.Errorf("classes %v (verdict %s)", classes, second.Verdict)
	}

	dir := t.TempDir()
	md, _, err := WriteReport(dir, second)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(strings.TrimSuffix(md, ".md") + ".html")
	if err != nil || string(b) != page {
		t.Errorf("html file: %v", err)
	}
	if filepath.Dir(md) != dir {
		t.Errorf("md path %s", md)
	}
}
