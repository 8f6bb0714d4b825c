package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/conductor-shadow/conductor-shadow/cmd/internal/platform"
	"github.com/conductor-shadow/conductor-shadow/eval/schedule"
)

// TestSuiteSetGuard: a suite-run request names one of the server's regression
// sets (beside suite.set and the scheduled suites' sets) by name or path;
// everything else is refused without being opened.
func TestSuiteSetGuard(t *testing.T) {
	dir := t.TempDir()
	sets := filepath.Join(dir, "sets")
	nightly := filepath.Join(dir, "nightly")
	for _, d := range []string{sets, nightly} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(sets, "gsm8k.jsonl"), "{}\n")
	writeFile(t, filepath.Join(sets, "notes.txt"), "x\n")
	writeFile(t, filepath.Join(nightly, "mmlu.jsonl"), "{}\n")
	writeFile(t, filepath.Join(dir, "secret.jsonl"), "{}\n")
	if err := os.Symlink(filepath.Join(dir, "secret.jsonl"), filepath.Join(sets, "out.jsonl")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(nightly, "mmlu.jsonl"), filepath.Join(sets, "mmlu-link.jsonl")); err != nil {
		t.Fatal(err)
	}
	cfg := platform.NewDefaultConfig()
	cfg.Suite.Set = filepath.Join(sets, "gsm8k.jsonl")
	cfg.Schedules.Suites = append(cfg.Schedules.Suites, schedule.Suite{Name: "nightly", Set: filepath.Join(nightly, "mmlu.jsonl")})
	real := func(p string) string {
		r, err := filepath.EvalSymlinks(p)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	tests := []struct {
		name, set, want string // want "": refused
	}{
		{"empty: suite.set", "", ""},
		{"name", "gsm8k", real(filepath.Join(sets, "gsm8k.jsonl"))},
		{"name with extension", "gsm8k.jsonl", real(filepath.Join(sets, "gsm8k.jsonl"))},
		{"name in a schedule's folder", "mmlu", real(filepath.Join(nightly, "mmlu.jsonl"))},
		{"path inside", filepath.Join(sets, "gsm8k.jsonl"), real(filepath.Join(sets, "gsm8k.jsonl"))},
		{"uncleaned path inside", sets + "/./x/../gsm8k.jsonl", real(filepath.Join(sets, "gsm8k.jsonl"))},
		{"link between allowed folders", "mmlu-link", real(filepath.Join(nightly, "mmlu.jsonl"))},
		{"file outside", filepath.Join(dir, "secret.jsonl"), ""},
		{"dot-dot", sets + "/../secret.jsonl", ""},
		{"link out", "out", ""},
		{"link out by path", filepath.Join(sets, "out.jsonl"), ""},
		{"not JSONL", filepath.Join(sets, "notes.txt"), ""},
		{"name of a non-JSONL file", "notes.txt", ""},
		{"folder itself", sets, ""},
		{"dot-dot name", "..", ""},
		{"missing name", "nosuch", ""},
		{"system file", "/etc/passwd", ""},
		{"proc", "/proc/self/environ", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := resolveRequestedSet(cfg, tt.set)
			switch {
			case tt.set == "":
				if got != "" || err != nil {
					t.Fatalf("= %q, %v; want \"\" (suite.set)", got, err)
				}
			case tt.want == "":
				if !errors.Is(err, errSetNotAllowed) || got != "" {
					t.Fatalf("= %q, %v; want refused", got, err)
				}
				if !strings.Contains(err.Error(), "gsm8k, mmlu, mmlu-link (") {
					t.Errorf("error %q does not list exactly the allowed sets", err)
				}
			default:
				if err != nil || got != tt.want {
					t.Fatalf("= %q, %v; want %q", got, err, tt.want)
				}
			}
		})
	}
}
