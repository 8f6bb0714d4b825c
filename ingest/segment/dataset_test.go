package segment

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// prompt is one row of the shared datasets' user_prompts_200.jsonl.
type prompt struct {
	ID    string   `json:"id"`
	Input string   `json:"input"`
	Tags  []string `json:"tags"`
	Guess string   `json:"lang_guess"`
}

// userPrompts reads the real user prompts of the shared datasets, or skips
// the test when the folder is absent.
func userPrompts(t *testing.T) []prompt {
	t.Helper()
	dir := os.Getenv("CONDUCTOR_SHADOW_DATASETS")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "shared", "datasets")
	}
	f, err := os.Open(filepath.Join(dir, "user_prompts_200.jsonl"))
	if err != nil {
		t.Skipf("shared datasets not found in %s (set CONDUCTOR_SHADOW_DATASETS to the folder): %v", dir, err)
	}
	defer f.Close()
	var out []prompt
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var p prompt
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

func languageLabels(t *testing.T) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "user_prompts_languages.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, ln := range strings.Split(string(raw), "\n") {
		if ln == "" || strings.HasPrefix(ln, "#") {
			continue
		}
		id, lang, ok := strings.Cut(ln, "\t")
		if !ok {
			t.Fatalf("bad label line %q", ln)
		}
		out[id] = lang
	}
	return out
}

// TestLanguageOnRealNonEnglishPrompts checks the stored language on the real
// non-English user prompts (Chatbot Arena, Open-Assistant) against the
// hand-checked labels: at least 90% must be right.
func TestLanguageOnRealNonEnglishPrompts(t *testing.T) {
	prompts := userPrompts(t)
	labels := languageLabels(t)
	s := New(nil)
	right, n := 0, 0
	langs := map[string]bool{}
	for _, p := range prompts {
		want, ok := labels[p.ID]
		if !ok {
			continue
		}
		n++
		langs[want] = true
		if got := s.Language(p.Input); got == want {
			right++
		} else {
			t.Logf("%s: want %s, got %q", p.ID, want, got)
		}
	}
	if n != len(labels) {
		t.Fatalf("%d of %d labelled prompts found in the dataset", n, len(labels))
	}
	acc := float64(right) / float64(n)
	t.Logf("language right on %d of %d non-English prompts (%.1f%%) in %d languages", right, n, 100*acc, len(langs))
	if acc < 0.9 {
		t.Errorf("language right on %.1f%% of non-English prompts, want at least 90%%", 100*acc)
	}
}

// TestTablesAndCodeOnRealPrompts checks HasCode on every real user prompt the
// dataset tags "code" (recall at least 90%) and both flags on the hand-checked
// prompts of testdata/user_prompts_flags.tsv (all must be right): the dataset's
// own "table" tag fires on code indented with tabs, and prose full of
// brackets (lyrics, formulas) must not read as code.
func TestTablesAndCodeOnRealPrompts(t *testing.T) {
	prompts := userPrompts(t)
	byID := map[string]prompt{}
	hit, n := 0, 0
	for _, p := range prompts {
		byID[p.ID] = p
		if slices.Contains(p.Tags, "code") {
			n++
			if HasCode(p.Input) {
				hit++
			} else {
				t.Logf("code not flagged: %s", p.ID)
			}
		}
	}
	t.Logf("code flagged on %d of %d prompts tagged code", hit, n)
	if n == 0 || float64(hit) < 0.9*float64(n) {
		t.Errorf("code flagged on %d of %d tagged prompts, want at least 90%%", hit, n)
	}
	raw, err := os.ReadFile(filepath.Join("testdata", "user_prompts_flags.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	for _, ln := range strings.Split(string(raw), "\n") {
		if ln == "" || strings.HasPrefix(ln, "#") {
			continue
		}
		f := strings.Split(ln, "\t")
		if len(f) != 4 {
			t.Fatalf("bad flag line %q", ln)
		}
		p, ok := byID[f[1]]
		if !ok {
			t.Fatalf("%s not in the dataset", f[1])
		}
		got := HasTable(p.Input)
		if f[0] == "code" {
			got = HasCode(p.Input)
		}
		if want := f[2] == "true"; got != want {
			t.Errorf("%s %s: got %v, want %v (%s)", f[0], f[1], got, want, f[3])
		}
	}
}

// BenchmarkSegment segments the 200 real user prompts of the shared datasets
// (ns/op is one prompt, language detection included, models loaded once).
//
//	CONDUCTOR_SHADOW_DATASETS=../shared/datasets go test -run xxx -bench Segment ./ingest/segment/
func BenchmarkSegment(b *testing.B) {
	t := &testing.T{}
	prompts := func() (out []prompt) {
		defer func() { _ = recover() }()
		return userPrompts(t)
	}()
	if len(prompts) == 0 {
		b.Skip("shared datasets not found (set CONDUCTOR_SHADOW_DATASETS)")
	}
	s := New(nil)
	s.Of(prompts[0].Input)
	b.ResetTimer()
	for i := range b.N {
		s.Of(prompts[i%len(prompts)].Input)
	}
}
