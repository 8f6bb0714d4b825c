package shadow

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// testPool is the conductor's view used by the plan tests: the paper's seven
// workers as Models 0..6 and the conductor itself as Model 7.
var testPool = []string{
	"gemma-3-27b", "qwen3-32b", "qwen3-32b-thinking", "deepseek-r1-distill-qwen-32b",
	"claude-sonnet-4", "gemini-2.5-pro", "gpt-5", "conductor",
}

func step(worker string, id int, subtask string, access Access) PlanStep {
	return PlanStep{Worker: worker, ModelID: id, Subtask: subtask, Access: access}
}

// solveCheck is the two-step plan of the bare-index and None files: Model 2
// solves, Model 0 checks.
func solveCheck(a0, a1 Access) []PlanStep {
	return []PlanStep{step("qwen3-32b-thinking", 2, "Solve", a0), step("gemma-3-27b", 0, "Check", a1)}
}

func TestParsePlan(t *testing.T) {
	tests := []struct {
		file        string
		parseKind   string // want a *PlanError of this kind from ParsePlan
		resolveKind string // want a *PlanError of this kind from Resolve
		want        []PlanStep
	}{
		{file: "paper.txt", want: []PlanStep{
			step("qwen3-32b-thinking", 2, "Solve step by step: what is 17 * 23? Show your work.", AccessSteps()),
			step("gemma-3-27b", 0, "Check the solution above for arithmetic errors. The question was: what is 17 * 23?", AccessAll()),
			step("qwen3-32b", 1, "Give the final answer to: what is 17 * 23? Reply with the number only.", AccessSteps(0, 1)),
		}},
		{file: "paper_repeated.txt", want: []PlanStep{
			step("qwen3-32b", 1, "Solve: how many primes are below 20? Explain briefly.", AccessSteps()),
			step("deepseek-r1-distill-qwen-32b", 3, "Verify the count of primes below 20 and state it as 'N primes'.", AccessAll()),
		}},
		{file: "paper_escapes.txt", want: []PlanStep{
			step("gemma-3-27b", 0, "It's a \"quote\" test:\n\tline two \\ backslash Aé and r\\N{DASH}", AccessSteps()),
		}},
		{file: "unicode.txt", want: []PlanStep{
			step("claude-sonnet-4", 4, "Résous : combien font 2³ + √16 ? Donne la démarche. 日本語も可。", AccessSteps()),
			step("gemini-2.5-pro", 5, "Donne la réponse finale à « 2³ + √16 » — un nombre 🙂", AccessSteps(0)),
		}},
		{file: "json.txt", want: []PlanStep{
			step("qwen3-32b", 1, "Solve: 2+2?", AccessSteps()),
			step("qwen3-32b", 1, "Give the final answer to 2+2.", AccessAll()),
		}},
		{file: "json_fenced.txt", want: []PlanStep{
			step("gpt-5", 6, "Write a Python function is_prime(n).", AccessSteps()),
			step("gemma-3-27b", 0, "Review the function and give the final version.", AccessSteps(0)),
		}},
		{file: "bare_index.txt", want: solveCheck(AccessSteps(), AccessSteps(0))},
		{file: "access_none.txt", want: solveCheck(AccessSteps(), AccessSteps(0))},
		{file: "access_null.txt", want: solveCheck(AccessSteps(), AccessSteps(0))},
		{file: "json_lists.txt", want: solveCheck(AccessSteps(), AccessSteps(0))},
		{file: "json_lists_inline.txt", want: solveCheck(AccessSteps(), AccessAll())},
		{file: "json_steps_null_bare.txt", want: solveCheck(AccessSteps(), AccessSteps(0))},
		{file: "access_strings.txt", want: append(solveCheck(AccessSteps(), AccessSteps(0)), step("qwen3-32b", 1, "Answer", AccessSteps(0, 1)))},
		{file: "access_bad_string.txt", parseKind: PlanUnparsable},
		{file: "bare_index_forward.txt", parseKind: PlanForwardReference},
		{file: "access_bad_word.txt", parseKind: PlanUnparsable},
		{file: "json_lists_missing.txt", parseKind: PlanUnparsable},
		{file: "json_lists_float.txt", parseKind: PlanUnparsable},
		{file: "garbage.txt", parseKind: PlanUnparsable},
		{file: "binary.txt", parseKind: PlanUnparsable},
		{file: "prose_only.txt", parseKind: PlanUnparsable},
		{file: "missing_access.txt", parseKind: PlanUnparsable},
		{file: "bad_access.txt", parseKind: PlanUnparsable},
		{file: "unequal.txt", parseKind: PlanUnequalLengths},
		{file: "negative_id.txt", parseKind: PlanModelOutOfRange},
		{file: "forward_ref.txt", parseKind: PlanForwardReference},
		{file: "self_ref.txt", parseKind: PlanForwardReference},
		{file: "json_forward_ref.txt", parseKind: PlanForwardReference},
		{file: "empty.txt", parseKind: PlanEmpty},
		{file: "empty_subtask.txt", parseKind: PlanInvalidStep},
		{file: "out_of_range.txt", resolveKind: PlanModelOutOfRange},
		{file: "unknown_worker_json.txt", resolveKind: PlanUnknownWorker},
		{file: "too_many.txt", resolveKind: PlanTooManySteps},
		{file: "recursion.txt", resolveKind: PlanRecursionUnsupported},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			text, err := os.ReadFile(filepath.Join("testdata", "plans", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			plan, err := ParsePlan(string(text))
			if tt.parseKind != "" {
				assertPlanErr(t, err, tt.parseKind)
				return
			}
			if err != nil {
				t.Fatalf("ParsePlan: %v", err)
			}
			resolved, err := plan.Resolve(testPool, "conductor", DefaultMaxSteps)
			if tt.resolveKind != "" {
				assertPlanErr(t, err, tt.resolveKind)
				return
			}
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if !reflect.DeepEqual(resolved.Steps, tt.want) {
				t.Errorf("steps:\n got %+v\nwant %+v", resolved.Steps, tt.want)
			}
			// The stored JSON form parses back to the same plan.
			again, err := ParsePlan(resolved.JSON())
			if err != nil {
				t.Fatalf("ParsePlan(JSON()) of %s: %v", resolved.JSON(), err)
			}
			if !reflect.DeepEqual(again.Steps, resolved.Steps) {
				t.Errorf("round trip:\n got %+v\nwant %+v", again.Steps, resolved.Steps)
			}
		})
	}
}

func assertPlanErr(t *testing.T, err error, kind string) {
	t.Helper()
	var pe *PlanError
	if !errors.As(err, &pe) {
		t.Fatalf("want *PlanError of kind %q, got %v", kind, err)
	}
	if pe.Kind != kind {
		t.Fatalf("kind: got %q (%s), want %q", pe.Kind, pe.Detail, kind)
	}
	if pe.Detail == "" || !strings.Contains(pe.Error(), kind) {
		t.Errorf("error text %q should name the kind and a detail", pe.Error())
	}
}

func TestPlanJSONShape(t *testing.T) {
	p := Plan{Steps: []PlanStep{
		step("gpt-5", 6, "a <b> & c", AccessAll()),
		step("gemma-3-27b", 0, "d", AccessSteps()),
		step("qwen3-32b", 1, "e", AccessSteps(2, 0, 0)),
	}}
	var got struct {
		Steps []map[string]any `json:"steps"`
	}
	if err := json.Unmarshal([]byte(p.JSON()), &got); err != nil {
		t.Fatalf("JSON() is not JSON: %v", err)
	}
	wantAccess := []any{"all", []any{}, []any{0.0, 2.0}}
	for i, s := range got.Steps {
		if !reflect.DeepEqual(s["access"], wantAccess[i]) {
			t.Errorf("step %d access = %#v, want %#v", i, s["access"], wantAccess[i])
		}
		for _, k := range []string{"worker", "model_id", "subtask"} {
			if _, ok := s[k]; !ok {
				t.Errorf("step %d lacks %q", i, k)
			}
		}
	}
	if got.Steps[0]["subtask"] != "a <b> & c" {
		t.Errorf("subtask = %q", got.Steps[0]["subtask"])
	}
}

func TestResolveRejectsNameIDMismatch(t *testing.T) {
	p, err := ParsePlan(`{"steps":[{"worker":"gpt-5","model_id":0,"subtask":"x","access":[]}]}`)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Resolve(testPool, "conductor", 5)
	assertPlanErr(t, err, PlanInvalidStep)
}

func TestParsePyList(t *testing.T) {
	tests := []struct {
		in      string
		want    []string // string items, when ok
		wantErr string
	}{
		{in: `["a", 'b']`, want: []string{"a", "b"}},
		{in: `["a" 'b' "c",]`, want: []string{"abc"}},
		{in: `[r"\d+\n", u"x"]`, want: []string{`\d+\n`, "x"}},
		{in: `["\101\x42\u0043\U0001F600"]`, want: []string{"ABC😀"}},
		{in: "[\"line \\\ncontinued\"]", want: []string{"line continued"}},
		{in: `['''multi
line''']`, want: []string{"multi\nline"}},
		{in: `("t1", "t2")`, want: []string{"t1", "t2"}},
		{in: `["a" # comment
, "b"]`, want: []string{"a", "b"}},
		{in: `["unterminated]`, wantErr: "unterminated"},
		{in: `["bad \x4"]`, wantErr: `\x`},
		{in: `["a" "b"`, wantErr: "unclosed"},
		{in: `["a" 1]`, wantErr: "want ','"},
		{in: `[1.5]`, wantErr: "fraction"},
		{in: `[Nonesuch]`, wantErr: "unexpected"},
		{in: `[True]`, wantErr: "unexpected"},
		{in: `[nullable]`, wantErr: "unexpected"},
		{in: strings.Repeat("[", 40) + strings.Repeat("]", 40), wantErr: "nested deeper"},
		{in: `[99999999999999999999]`, wantErr: "out of range"},
		{in: "[\"new\nline\"]", wantErr: "newline"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			v, _, err := parsePyList(tt.in, 0)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, it := range v.list {
				got = append(got, it.s)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestAccessVisible(t *testing.T) {
	if got := AccessAll().Visible(3); !reflect.DeepEqual(got, []int{0, 1, 2}) {
		t.Errorf("all at 3: %v", got)
	}
	if got := AccessAll().Visible(0); len(got) != 0 {
		t.Errorf("all at 0: %v", got)
	}
	if got := AccessSteps(2, 0, 2).Visible(4); !reflect.DeepEqual(got, []int{0, 2}) {
		t.Errorf("[2,0,2] at 4: %v", got)
	}
}

func FuzzParsePlan(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "plans", "*.txt"))
	if err != nil {
		f.Fatal(err)
	}
	for _, fn := range files {
		b, err := os.ReadFile(fn)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, text string) {
		p, err := ParsePlan(text)
		if err != nil {
			var pe *PlanError
			if !errors.As(err, &pe) {
				t.Fatalf("error is not a *PlanError: %v", err)
			}
			return
		}
		if len(p.Steps) == 0 {
			t.Fatal("a plan without error has no steps")
		}
		for i, s := range p.Steps {
			for _, j := range s.Access.Visible(i) {
				if j < 0 || j >= i {
					t.Fatalf("step %d sees step %d", i, j)
				}
			}
		}
		if _, err := p.Resolve(testPool, "conductor", 0); err != nil {
			var pe *PlanError
			if !errors.As(err, &pe) {
				t.Fatalf("Resolve error is not a *PlanError: %v", err)
			}
		}
	})
}
