package eval

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store/storetest"
	"gopkg.in/yaml.v3"
)

// engine is the real embedded engine the package's tests store into, a
// database per test (engine.Open).
var engine *storetest.Engine

func TestMain(m *testing.M) {
	engine = storetest.StartEngine()
	engine.VerifyTestMain(m)
}

func TestLoadSetShipped(t *testing.T) {
	tests := []struct {
		file     string
		name     string
		cases    int
		grader   string
		firstID  string
		firstRef string
	}{
		{"gsm8k-small.jsonl", "gsm8k-small", 4, GraderNumeric, "gsm8k-test-0", "18"},
		{"math500-small.jsonl", "math500-small", 11, GraderMath, "math500-precalculus/807", `\left( 3, \frac{\pi}{2} \right)`},
		{"mmlu-small.jsonl", "mmlu-small", 3, GraderChoice, "mmlu-abstract_algebra-20", "A"},
		{"humaneval-small.jsonl", "humaneval-small", 2, GraderCode, "HumanEval/0", "    for idx, elem in enumerate(numbers):"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join("testdata", "sets", tt.file)
			set, err := LoadSet(path)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(raw)
			if set.Version != hex.EncodeToString(sum[:]) {
				t.Errorf("version %s, want sha256 of the file", set.Version)
			}
			if set.Name != tt.name || len(set.Cases) != tt.cases {
				t.Fatalf("got name %q with %d cases, want %q with %d", set.Name, len(set.Cases), tt.name, tt.cases)
			}
			c := set.Cases[0]
			if c.ID != tt.firstID || !strings.HasPrefix(c.Reference, tt.firstRef) || c.Grader != tt.grader {
				t.Errorf("first case %q ref %q grader %q", c.ID, c.Reference, c.Grader)
			}
			if _, ok := c.Extra["source"].(string); !ok {
				t.Errorf("extra keys not kept: %v", c.Extra)
			}
			if _, known := c.Extra["input"]; known {
				t.Errorf("known key landed in Extra")
			}
		})
	}
}

func TestLoadSetCodeExtra(t *testing.T) {
	set, err := LoadSet("testdata/sets/humaneval-small.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	c := set.Cases[1]
	if c.ExtraString("entry_point") != "mean_absolute_deviation" || !strings.Contains(c.ExtraString("test"), "def check(candidate)") {
		t.Errorf("entry_point %q, test %q", c.ExtraString("entry_point"), clip(c.ExtraString("test"), 40))
	}
}

func TestLoadSetErrors(t *testing.T) {
	tests := []struct {
		file string
		want []string // substrings of the error
	}{
		{"malformed.jsonl", []string{"malformed.jsonl:2:", "malformed JSON"}},
		{"duplicate.jsonl", []string{"duplicate.jsonl:3:", `duplicate id "a-1" (first on line 1)`}},
		{"no-input.jsonl", []string{"no-input.jsonl:2:", `case "a-2": missing input`}},
		{"no-id.jsonl", []string{"no-id.jsonl:1:", "missing id"}},
		{"unknown-grader.jsonl", []string{"unknown-grader.jsonl:2:", `unknown grader "sentiment"`}},
		{"no-grader.jsonl", []string{"no-grader.jsonl:1:", "missing grader"}},
		{"choice-bad-reference.jsonl", []string{"choice-bad-reference.jsonl:1:", `choice reference "E" is not a letter A–D`}},
		{"code-no-test.jsonl", []string{"code-no-test.jsonl:1:", "entry_point and test"}},
		{"no-reference.jsonl", []string{"no-reference.jsonl:1:", "grader numeric needs a reference"}},
		{"judge-no-scale.jsonl", []string{"judge-no-scale.jsonl:2:", `case "r-2": judge grader needs rubric_scale [min, max]`}},
		{"judge-bad-scale.jsonl", []string{"judge-bad-scale.jsonl:1:", "rubric_scale [10, 1]: want 0 ≤ min < max ≤ 100"}},
		{"choices-not-list.jsonl", []string{"choices-not-list.jsonl:1:", `field "choices": want a list of strings`}},
		{"empty.jsonl", []string{"empty.jsonl: no cases"}},
		{"does-not-exist.jsonl", []string{"does-not-exist.jsonl", "no such file"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			_, err := LoadSet(filepath.Join("testdata", "bad", tt.file))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestPrompt(t *testing.T) {
	set, err := LoadSet("testdata/sets/mmlu-small.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	want := "Determine whether the polynomial in Z[x] satisfies an Eisenstein criterion for irreducibility over Q. x^2 - 12\n\n" +
		"A. Yes, with p=2.\nB. Yes, with p=3.\nC. Yes, with p=5.\nD. No.\n\nAnswer with the letter."
	c := set.Cases[1]
	if got := c.Prompt(); got != want {
		t.Errorf("prompt:\n%s\nwant:\n%s", got, want)
	}
	msgs := c.Messages()
	if len(msgs) != 1 || msgs[0].Role != "user" || msgs[0].Content != want {
		t.Errorf("messages %+v", msgs)
	}

	gsm, err := LoadSet("testdata/sets/gsm8k-small.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if got := gsm.Cases[0].Prompt(); got != gsm.Cases[0].Input {
		t.Errorf("non-choice prompt changed: %q", got)
	}
}

func TestConfig(t *testing.T) {
	if err := NewDefaultConfig().Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	var cfg Config
	if err := yaml.Unmarshal([]byte("concurrency: 4\ncode:\n  python: python3\n  timeout: 3s\n  memory_mb: 512\n  bwrap: bwrap\n"), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Concurrency != 4 || cfg.Code.Timeout != 3*time.Second || cfg.Code.MemoryMB != 512 || cfg.Validate() != nil {
		t.Errorf("decoded %+v (%v)", cfg, cfg.Validate())
	}
	bad := []Config{
		{Concurrency: 0, Code: NewDefaultCodeConfig()},
		{Concurrency: 1, Code: CodeConfig{Python: "", Timeout: time.Second, MemoryMB: 1}},
		{Concurrency: 1, Code: CodeConfig{Python: "python3", Timeout: 0, MemoryMB: 1}},
		{Concurrency: 1, Code: CodeConfig{Python: "python3", Timeout: time.Second, MemoryMB: 0}},
		{Concurrency: 1, Code: CodeConfig{Python: "python3", Timeout: time.Second, MemoryMB: 1, Bwrap: ""}},
	}
	for i, c := range bad {
		if c.Validate() == nil {
			t.Errorf("bad config %d accepted: %+v", i, c)
		}
	}
}
