package simpool

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestIndexFind(t *testing.T) {
	cases := []Case{
		{ID: "long", Input: "Janet has  three ducks and\nfive geese. How many birds does she have?"},
		{ID: "longer", Input: "Janet has three ducks and five geese. How many birds does she have? Count the eggs too."},
		{ID: "short", Input: "What is 2+2?"},
		{ID: "other", Input: "A completely different question about trains leaving stations."},
		{ID: "choice", Input: "Which of the following is true?", Choices: []string{"Cats bark.", "Dogs  meow."}},
	}
	ix := newIndex(cases)
	for _, tc := range []struct{ name, text, want string }{
		{"exact", cases[0].Input, "long"},
		{"embedded with other white space", "Subtask: verify.\n\nJanet has three ducks\tand five   geese. How many birds does she have?\n\nThanks", "long"},
		{"longest match wins", "Q: Janet has three ducks and five geese. How many birds does she have? Count the eggs too.", "longer"},
		{"short question", "please answer: What is 2+2? quickly", "short"},
		{"absent", "Janet has three ducks. How many?", ""},
		{"empty", "", ""},
		{"choice stem without its options", "Which of the following is true? A. Paris is in France.", ""},
		{"choice stem with its options", "Which of the following is true?\nA. Cats bark.\nB. Dogs meow.", "choice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if i := ix.find(tc.text); i >= 0 {
				got = cases[i].ID
			}
			if got != tc.want {
				t.Fatalf("find = %q, want %q", got, tc.want)
			}
		})
	}
	// The latest message wins over earlier turns.
	c, pos, ok := ix.match([]message{{Role: "user", Content: cases[3].Input}, {Role: "assistant", Content: "x"}, {Role: "user", Content: cases[0].Input}})
	if !ok || c.ID != "long" || pos != 0 {
		t.Fatalf("match = %q %v, want long", c.ID, ok)
	}
}

func TestIndexFindsEveryShippedCase(t *testing.T) {
	all := shipped(t, "")
	ix := newIndex(all)
	for i, c := range all {
		text := "Step 2 of 3. Use the earlier work.\n\n" + strings.ReplaceAll(askCase(c), " ", "  ") + "\n\nGive the final answer."
		if got := ix.find(text); got != i {
			t.Fatalf("%s: found %d", c.ID, got)
		}
	}
}

func TestLoadSetsErrors(t *testing.T) {
	write := func(t *testing.T, files map[string]string) string {
		dir := t.TempDir()
		for name, body := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"no files", map[string]string{"README.md": "x"}, "no *.jsonl"},
		{"bad json", map[string]string{"a.jsonl": `{"id":"a","input":"q"}` + "\n{oops\n"}, "a.jsonl:2"},
		{"missing input", map[string]string{"a.jsonl": `{"id":"a"}`}, "missing id or input"},
		{"duplicate id", map[string]string{"a.jsonl": `{"id":"a","input":"q"}`, "b.jsonl": `{"id":"a","input":"r"}`}, "in both"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadSets(write(t, tc.files))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	cs, err := LoadSets(write(t, map[string]string{"a.jsonl": "\n" + `{"id":"a","input":"q","reference":null}` + "\n\n"}))
	if err != nil || len(cs) != 1 || cs[0].Reference != "" {
		t.Fatalf("blank lines and null reference: %+v %v", cs, err)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"default", func(*Config) {}, ""},
		{"negative scale", func(c *Config) { c.LatencyScale = -0.5 }, "latency_scale"},
		{"malformed > 1", func(c *Config) { c.MalformedPlanProb = 1.5 }, "malformed_plan_prob"},
		{"negative help", func(c *Config) { c.PriorHelp = -0.1 }, "prior_help"},
		{"errors sum > 1", func(c *Config) { c.RateLimitProb, c.ServerErrorProb = 0.7, 0.7 }, "must be <= 1"},
		{"negative retry", func(c *Config) { c.RetryAfter = -1 }, "retry_after"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := NewDefaultConfig()
			tc.edit(&cfg)
			err := cfg.Validate()
			if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}
