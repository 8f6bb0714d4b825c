package setbuild

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
		// 50 of a 60/30/10 mix: exact quotas 30, 15, 5.
		{50, map[string]int{"search/uncategorized": 5, "support/billing": 30, "support/howto": 15}},
		// 7: quotas 4.2, 2.1, 0.7 → 4, 2, 0 and the seat left to the largest remainder (0.7).
		{7, map[string]int{"search/uncategorized": 1, "support/billing": 4, "support/howto": 2}},
		// 2: quotas 1.2, 0.6, 0.2 → 1, 0, 0 and the seat left to howto (0.6).
		{2, map[string]int{"support/billing": 1, "support/howto": 1, "search/uncategorized": 0}},
		// 1: quotas 0.6, 0.3, 0.1: the largest stratum, not the first by name ("search").
		{1, map[string]int{"support/billing": 1, "support/howto": 0, "search/uncategorized": 0}},
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
	// Quotas of 50 by share: exactly 30, 15, 5, the live 60/30/10.
	want := map[string]int{"language=en has_table=false": 30, "language=ru has_table=true": 15, "language=zh has_table=false": 5}
	if fmt.Sprint(got) != fmt.Sprint(want) || len(lines) != 50 {
		t.Errorf("picked %v (%d lines), want %v", got, len(lines), want)
	}
	for _, bad := range []string{"language,nope", "language,language"} {
		if _, err := ParseStratifyBy(bad); err == nil {
			t.Errorf("ParseStratifyBy(%q) must fail", bad)
		}
	}
}

// TestAllocate: largest-remainder quotas of the live mix, table-driven with the
// exact quotas worked out by hand.
func TestAllocate(t *testing.T) {
	tests := []struct {
		name  string
		sizes []int
		n     int
		want  []int
	}{
		{"exact shares", []int{600, 300, 100}, 10, []int{6, 3, 1}},
		{"remainders decide", []int{60, 30, 10}, 7, []int{4, 2, 1}},                        // 4.2, 2.1, 0.7
		{"n below strata: largest first", []int{1, 2, 50, 3, 44}, 2, []int{0, 0, 1, 0, 1}}, // 1.0 (50), 0.88 (44)
		{"a rare stratum gets none", []int{970, 20, 10}, 10, []int{10, 0, 0}},              // 9.7, 0.2, 0.1
		{"n above the total: everything", []int{3, 1}, 10, []int{3, 1}},
		{"one stratum", []int{42}, 5, []int{5}},
		{"empty strata", []int{0, 10, 0}, 3, []int{0, 3, 0}},
		{"n zero", []int{5, 5}, 0, []int{0, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for seed := range uint64(5) {
				if got := Allocate(tc.sizes, tc.n, seed); !slices.Equal(got, tc.want) {
					t.Errorf("seed %d: Allocate(%v, %d) = %v, want %v", seed, tc.sizes, tc.n, got, tc.want)
				}
			}
		})
	}
}

// TestAllocateTiesBySeed: with more strata than cases and equal remainders, the
// strata that get a case are drawn by the seed, not by name: over 400 seeds each
// of 10 equal strata gets its expected share of 3 seats (120) within ±40 (about
// 4.3 binomial standard deviations), every draw sums to n, and a seed repeats.
func TestAllocateTiesBySeed(t *testing.T) {
	sizes := []int{5, 5, 5, 5, 5, 5, 5, 5, 5, 5}
	const n, seeds = 3, 400
	hits := make([]int, len(sizes))
	for seed := range uint64(seeds) {
		q := Allocate(sizes, n, seed)
		sum := 0
		for i, v := range q {
			if v > 1 {
				t.Fatalf("seed %d: stratum %d got %d of a 0.3 quota", seed, i, v)
			}
			hits[i] += v
			sum += v
		}
		if sum != n {
			t.Fatalf("seed %d: %v sums to %d, want %d", seed, q, sum, n)
		}
		if again := Allocate(sizes, n, seed); !slices.Equal(again, q) {
			t.Fatalf("seed %d: %v then %v", seed, q, again)
		}
	}
	want := n * seeds / len(sizes)
	for i, h := range hits {
		if h < want-40 || h > want+40 {
			t.Errorf("stratum %d got a case in %d of %d draws, want about %d: %v", i, h, seeds, want, hits)
		}
	}
	// Ties among the smaller remainders only: quotas 1.714 and 0.429 ×3 of 3
	// seats; the big stratum always gets 2, the last seat is drawn among the three
	// equal ones.
	drawn := map[int]bool{}
	for seed := range uint64(50) {
		q := Allocate([]int{40, 10, 10, 10}, 3, seed)
		if q[0] != 2 {
			t.Fatalf("seed %d: %v, the 40-request stratum must get two", seed, q)
		}
		for i := 1; i < 4; i++ {
			if q[i] == 1 {
				drawn[i] = true
			}
		}
	}
	if len(drawn) != 3 {
		t.Errorf("the tied seat went only to strata %v over 50 seeds", drawn)
	}
}

// TestBuildSmallSetKeepsTheMix: a set smaller than the number of strata draws
// them by their live share, not alphabetically: 12 categories, "a-…" to "l-…",
// where the last by name, "l-chat", carries 70% of the traffic.
func TestBuildSmallSetKeepsTheMix(t *testing.T) {
	var src []store.SetSource
	add := func(cat string, n int) {
		for i := range n {
			in := fmt.Sprintf(`[{"role":"user","content":"%s prompt %d"}]`, cat, i)
			src = append(src, store.SetSource{
				Request:           store.Request{RequestID: fmt.Sprintf("%s-%d", cat, i), App: "chat", Category: cat, Input: in},
				IncumbentPipeline: "incumbent:gpt-5", IncumbentOutput: "ok",
			})
		}
	}
	for c := range 11 {
		add(fmt.Sprintf("%c-rare", 'a'+c), 3)
	}
	add("l-chat", 77) // 77 of 110
	firstByName := 0
	for seed := range uint64(20) {
		lines, strata, err := Build(src, Options{N: 5, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		picked := map[string]int{}
		for _, s := range strata {
			picked[s.Category] = s.Picked
		}
		// l-chat: 5 × 0.7 = 3.5 → 3, plus the largest remainder (0.5 beats 0.136).
		if picked["l-chat"] != 4 || len(lines) != 5 {
			t.Errorf("seed %d: l-chat picked %d of %d lines, want 4 of 5: %v", seed, picked["l-chat"], len(lines), picked)
		}
		if picked["a-rare"] == 1 {
			firstByName++
		}
	}
	if firstByName > 10 {
		t.Errorf("the alphabetically first stratum got the rare seat %d times in 20 seeds (expected about 2)", firstByName)
	}
}
