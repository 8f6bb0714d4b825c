package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `grade --cases` grades code cases in the configured sandbox (suite.code), not
// the defaults: the same correct answer passes with the default interpreter
// and is a grader error naming the configured one when that one is missing.
func TestGradeUsesConfiguredCodeSandbox(t *testing.T) {
	dir := t.TempDir()
	cases := filepath.Join(dir, "cases.jsonl")
	c := map[string]any{
		"id": "add", "input": "def add(a, b):\n", "reference": "    return a + b\n", "grader": "code",
		"entry_point": "add", "test": "def check(candidate):\n    assert candidate(2, 3) == 5\n",
		"output": "    return a + b\n",
	}
	b, _ := json.Marshal(c)
	if err := os.WriteFile(cases, append(b, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "no-such-python")
	for _, tc := range []struct {
		name, config string
		passed       bool
		reason       string
	}{
		{"defaults", "", true, ""},
		{"configured interpreter", "suite:\n  code:\n    python: " + missing + "\n", false, missing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"grade", "--cases", cases}
			if tc.config != "" {
				cfg := filepath.Join(t.TempDir(), "c.yaml")
				if err := os.WriteFile(cfg, []byte(tc.config), 0o600); err != nil {
					t.Fatal(err)
				}
				args = append([]string{"--config", cfg}, args...)
			}
			var out, errb bytes.Buffer
			err := run(context.Background(), args, &out, &errb)
			if (err == nil) != tc.passed {
				t.Fatalf("err = %v (stderr %s)", err, errb.String())
			}
			var line gradeLine
			if err := json.Unmarshal(bytes.TrimSpace(out.Bytes()), &line); err != nil {
				t.Fatalf("output %q: %v", out.String(), err)
			}
			if line.Passed != tc.passed || !strings.Contains(line.Reason, tc.reason) {
				t.Errorf("line = %+v, want passed %v and a reason naming %q", line, tc.passed, tc.reason)
			}
		})
	}
}
