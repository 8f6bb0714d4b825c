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

// `grade --cases FILE` prints one JSON line per case with the verdict, the
// answer read and the reason; a case without output is reported and makes the
// command fail after every case is printed.
func TestGradeCommand(t *testing.T) {
	var out, errb bytes.Buffer
	err := run(context.Background(), []string{"grade", "--cases", filepath.Join("testdata", "grade", "cases.jsonl")}, &out, &errb)
	if err == nil || !strings.Contains(err.Error(), "1 of 11 cases could not be graded") {
		t.Fatalf("err = %v, want the case without output reported", err)
	}
	want := map[string]struct {
		passed    bool
		extracted string
		reason    string
	}{
		"math-trailing-words":          {true, "72", "reference"},
		"numeric-en-dash":              {true, "-3", "reference -3"},
		"numeric-en-dash-positive-ref": {false, "-3", "reference 3"},
		"numeric-latex-groups":         {true, "1234567", ""},
		"numeric-thin-space-groups":    {true, "1234567", ""},
		"numeric-negative-frac":        {true, "-3/4", ""},
		"math-different-integers":      {false, "1000000", ""},
		"choice-chinese-cue":           {true, "B", `"answer"`},
		"choice-fullwidth":             {true, "B", ""},
		"choice-cue-after-option":      {true, "B", `"answer"`},
		"no-output":                    {false, "", `has no "output"`},
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), out.String())
	}
	for _, l := range lines {
		var g map[string]any
		if err := json.Unmarshal([]byte(l), &g); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		if len(g) != 4 {
			t.Errorf("line %q: want exactly id, passed, extracted, reason", l)
		}
		id, _ := g["id"].(string)
		w, ok := want[id]
		if !ok {
			t.Errorf("unexpected id %q", id)
			continue
		}
		if g["passed"] != w.passed || g["extracted"] != w.extracted || !strings.Contains(g["reason"].(string), w.reason) {
			t.Errorf("%s: got %v, want passed=%v extracted=%q reason containing %q", id, g, w.passed, w.extracted, w.reason)
		}
	}
}

func TestGradeCommandBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte("{\"id\":\"a\",\"input\":\"x\",\"reference\":\"1\",\"grader\":\"numeric\",\"output\":\"1\"}\nnot json\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"grade"}, "--cases FILE is required"},
		{[]string{"grade", "--cases", filepath.Join(dir, "missing.jsonl")}, "no such file"},
		{[]string{"grade", "--cases", bad}, "bad.jsonl:2"},
	} {
		var out, errb bytes.Buffer
		err := run(context.Background(), tt.args, &out, &errb)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: err = %v, want %q", tt.args, err, tt.want)
		}
	}
}

// `plan parse` reads the conductor's text from stdin and prints the workflow,
// or fails naming the problem and where it is.
func TestPlanParseCommand(t *testing.T) {
	tests := []struct {
		file    string
		workers string
		want    string // substring of the JSON output
		wantErr string // substring of the error
	}{
		{file: "bare_index.txt", want: `"access": [
        0
      ]`},
		{file: "bare_index.txt", workers: "7", want: `"worker": "model-2"`},
		{file: "json_lists.txt", want: `"access": []`},
		{file: "out_of_range.txt", want: `"model_id": 9`},
		{file: "out_of_range.txt", workers: "7", wantErr: "model_out_of_range: step 1: model id 9, the pool has Models 0..6"},
		{file: "broken_string.txt", wantErr: "unparsable: subtasks: offset 46 (line 2, column 29): newline in a single-quoted string"},
		{file: "unequal.txt", wantErr: "unequal_lengths: model_id has 2 items, subtasks 1, access_list 2"},
	}
	for _, tt := range tests {
		t.Run(tt.file+"/"+tt.workers, func(t *testing.T) {
			in, err := os.Open(filepath.Join("testdata", "plan", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()
			cmd := planCmd()
			var out bytes.Buffer
			cmd.SetIn(in)
			cmd.SetOut(&out)
			cmd.SetErr(&out)
			args := []string{"parse"}
			if tt.workers != "" {
				args = append(args, "--workers", tt.workers)
			}
			cmd.SetArgs(args)
			err = cmd.ExecuteContext(context.Background())
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), tt.want) || !json.Valid(out.Bytes()) {
				t.Errorf("output %s lacks %q", out.String(), tt.want)
			}
		})
	}
}
