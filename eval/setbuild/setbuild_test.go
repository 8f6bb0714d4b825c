package setbuild

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/eval"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// sources: support/billing 60, support/howto 30, search/(no category) 10,
// every request twice (a duplicate input), newest first.
func sources() []store.SetSource {
	var out []store.SetSource
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	add := func(app, cat string, n int) {
		for i := range n {
			in := fmt.Sprintf(`[{"role":"system","content":"be brief"},{"role":"user","content":"%s %s question %d"}]`, app, cat, i)
			for dup := range 2 {
				out = append(out, store.SetSource{
					Request: store.Request{RequestID: fmt.Sprintf("%s-%s-%d-%d", app, cat, i, dup), ReceivedAt: at, Source: store.SourceTap,
						App: app, Category: cat, Input: in, InputHash: fmt.Sprintf("%x", sha256.Sum256([]byte(in)))},
					IncumbentPipeline: "incumbent:gpt-5", IncumbentOutput: fmt.Sprintf("answer %d", i),
				})
			}
		}
	}
	add("support", "billing", 60)
	add("support", "howto", 30)
	add("search", "", 10)
	return out
}

func TestBuildStratified(t *testing.T) {
	tests := []struct {
		n    int
		want map[string]int // app/category → picked
	}{
		{100, map[string]int{"search/uncategorized": 10, "support/billing": 60, "support/howto": 30}},
		// 50: one each, then 47 by share of 100: 28.2, 14.1, 4.7 → 28, 14, 4 + 1 by largest remainder (0.7).
		{50, map[string]int{"search/uncategorized": 6, "support/billing": 29, "support/howto": 15}},
		{2, map[string]int{"support/billing": 1, "support/howto": 1, "search/uncategorized": 0}},
		{500, map[string]int{"search/uncategorized": 10, "support/billing": 60, "support/howto": 30}},
	}
	for _, tc := range tests {
		lines, strata, err := Build(sources(), Options{N: tc.n, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		total := 0
		for _, s := range strata {
			got[s.App+"/"+s.Category] = s.Picked
			total += s.Picked
		}
		for k, w := range tc.want {
			if got[k] != w {
				t.Errorf("n=%d: %s picked %d, want %d (strata %+v)", tc.n, k, got[k], w, strata)
			}
		}
		if len(lines) != total {
			t.Errorf("n=%d: %d lines for %d picked", tc.n, len(lines), total)
		}
		ids := map[string]bool{}
		for _, l := range lines {
			if ids[l.ID] {
				t.Errorf("n=%d: duplicate case %s", tc.n, l.ID)
			}
			ids[l.ID] = true
		}
	}
}

func TestBuildDeterministicAndLoadable(t *testing.T) {
	a, _, _ := Build(sources(), Options{N: 40, Seed: 9})
	b, _, _ := Build(sources(), Options{N: 40, Seed: 9})
	c, _, _ := Build(sources(), Options{N: 40, Seed: 10})
	var ba, bb, bc bytes.Buffer
	if err := Write(&ba, a); err != nil {
		t.Fatal(err)
	}
	_ = Write(&bb, b)
	_ = Write(&bc, c)
	if ba.String() != bb.String() {
		t.Error("same seed, different sets")
	}
	if ba.String() == bc.String() {
		t.Error("different seeds, same set")
	}
	path := filepath.Join(t.TempDir(), "traffic-40.jsonl")
	if err := os.WriteFile(path, ba.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := eval.LoadSet(path)
	if err != nil {
		t.Fatalf("built set does not load: %v", err)
	}
	if len(set.Cases) != 40 {
		t.Fatalf("%d cases", len(set.Cases))
	}
	c0 := set.Cases[0]
	if c0.Grader != eval.GraderPairwise || c0.ExtraString("reference_status") != ReferenceUnreviewed ||
		c0.ExtraString("app") == "" || c0.ExtraString("source_request_id") == "" || len(c0.Tags) != 1 {
		t.Errorf("case %+v", c0)
	}
	if ctx, ok := c0.Extra["context"].([]any); !ok || len(ctx) != 1 {
		t.Errorf("system message not kept as context: %v", c0.Extra["context"])
	}
}

func TestBuildErrors(t *testing.T) {
	if _, _, err := Build(sources(), Options{N: 0}); err == nil {
		t.Error("n=0: want error")
	}
	if _, _, err := Build(nil, Options{N: 10}); err == nil {
		t.Error("no sources: want error")
	}
	bad := []store.SetSource{{Request: store.Request{RequestID: "x", Input: `[{"role":"assistant","content":"hi"}]`}, IncumbentOutput: "a"}}
	if _, _, err := Build(bad, Options{N: 10}); err == nil {
		t.Error("no user message: want error")
	}
}

// TestBuildStratifiedBySegments draws a set stratified by language and
// has_table from a live mix of 60% English, 30% Russian with tables and 10%
// Chinese: the set keeps those shares.
func TestBuildStratifiedBySegments(t *testing.T) {
	var src []store.SetSource
	add := func(lang string, table bool, n int) {
		for i := range n {
			in := fmt.Sprintf(`[{"role":"user","content":"%s %v prompt %d"}]`, lang, table, i)
			src = append(src, store.SetSource{
				Request:           store.Request{RequestID: fmt.Sprintf("%s-%v-%d", lang, table, i), App: "chat", Input: in, Language: lang, HasTable: table},
				IncumbentPipeline: "incumbent:gpt-5", IncumbentOutput: "ok",
			})
		}
	}
	add("en", false, 600)
	add("ru", true, 300)
	add("zh", false, 100)
	by, err := ParseStratifyBy("language,has_table")
	if err != nil {
		t.Fatal(err)
	}
	lines, strata, err := Build(src, Options{N: 50, Seed: 3, StratifyBy: by})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, s := range strata {
		got[s.Key] = s.Picked
	}
	// One each first, then 47 by share: 28.2, 14.1, 4.7 → 28, 14, 4, plus one
	// by largest remainder (0.7): 29, 15, 6 of 50, the live 60/30/10 within a case.
	want := map[string]int{"language=en has_table=false": 29, "language=ru has_table=true": 15, "language=zh has_table=false": 6}
	if fmt.Sprint(got) != fmt.Sprint(want) || len(lines) != 50 {
		t.Errorf("picked %v (%d lines), want %v", got, len(lines), want)
	}
	for _, bad := range []string{"language,nope", "language,language"} {
		if _, err := ParseStratifyBy(bad); err == nil {
			t.Errorf("ParseStratifyBy(%q) must fail", bad)
		}
	}
}
