package eval

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Grader names, as written in a case's "grader" field.
const (
	GraderExact   = "exact"
	GraderNumeric = "numeric"
	GraderMath    = "math"
	GraderChoice  = "choice"
	GraderCode    = "code"
	// GraderRegex: the Reference is a regular expression the output must contain.
	GraderRegex = "regex"
	// GraderJSONSchema: the output must be JSON valid against the case's schema.
	GraderJSONSchema = "json_schema"
	// GraderJudge: an LLM judge scores the answer against a rubric (eval/judge).
	GraderJudge = "judge"
	// GraderPairwise: an LLM judge compares the answer with the reference answer
	// in both orders (eval/judge).
	GraderPairwise = "pairwise"
)

// GraderNames lists the grader names GraderFor knows, sorted.
func GraderNames() []string {
	return []string{GraderChoice, GraderCode, GraderExact, GraderHijack, GraderInjection, GraderJSONSchema, GraderJudge, GraderMath, GraderNumeric, GraderPairwise, GraderRefusal, GraderRegex}
}

func isGraderName(name string) bool { return slices.Contains(GraderNames(), name) }

// Grade is one grader's verdict on one output.
type Grade struct {
	Value       float64 // 0..1; meaningless when Err is set
	Passed      bool
	Explanation string // what was extracted and compared, or why it failed
	// Extracted is the answer the grader read from the output, in the form it
	// compared (a number, a normalised expression, a letter, the matched text);
	// "" when it found none or the grader does not extract (code tests).
	Extracted string
	// Err: the grader itself could not judge (bad reference, python3 missing,
	// context cancelled, an LLM judge's failed call or unreadable reply).
	// Never a verdict on the output; recorded as a grader error.
	Err error
	// Judge is what an LLM judge's calls for this grade were and cost; nil
	// for graders that call no model.
	Judge *JudgeUsage
}

// Grader turns a run's output into a Grade against the case's reference.
// Implementations are safe for concurrent use.
type Grader interface {
	Name() string
	Grade(ctx context.Context, c Case, output string) Grade
}

// GraderFor returns the grader called name with default settings (the code
// grader uses NewDefaultCodeConfig). An unknown name is an error.
func GraderFor(name string) (Grader, error) {
	return GraderForConfig(name, NewDefaultCodeConfig())
}

// GraderForConfig is GraderFor with the code grader's settings given.
func GraderForConfig(name string, code CodeConfig) (Grader, error) {
	switch name {
	case GraderExact:
		return ExactGrader{}, nil
	case GraderNumeric:
		return NumericGrader{}, nil
	case GraderMath:
		return MathGrader{}, nil
	case GraderChoice:
		return ChoiceGrader{}, nil
	case GraderCode:
		return NewCodeGrader(code)
	case GraderRegex:
		return RegexGrader{}, nil
	case GraderJSONSchema:
		return JSONSchemaGrader{}, nil
	case GraderHijack:
		return HijackGrader{}, nil
	case GraderInjection:
		return InjectionGrader{}, nil
	case GraderRefusal:
		return RefusalGrader{}, nil
	case GraderJudge, GraderPairwise:
		return nil, fmt.Errorf("eval: grader %q calls an LLM judge: resolve graders with judge.Graders (SuiteOptions.Graders)", name)
	}
	return nil, fmt.Errorf("eval: unknown grader %q (one of %s)", name, strings.Join(GraderNames(), ", "))
}

// pass and fail build verdicts.
func pass(format string, args ...any) Grade {
	return Grade{Value: 1, Passed: true, Explanation: fmt.Sprintf(format, args...)}
}

func fail(format string, args ...any) Grade {
	return Grade{Value: 0, Passed: false, Explanation: fmt.Sprintf(format, args...)}
}

func gradeErr(format string, args ...any) Grade {
	err := fmt.Errorf(format, args...)
	return Grade{Err: err, Explanation: err.Error()}
}

func verdict(ok bool, format string, args ...any) Grade {
	if ok {
		return pass(format, args...)
	}
	return fail(format, args...)
}

// ExactGrader passes when the output equals the reference after trimming,
// lower-casing and collapsing runs of whitespace to one space.
type ExactGrader struct{}

// Name returns "exact".
func (ExactGrader) Name() string { return GraderExact }

// Grade compares normalised output and reference.
func (ExactGrader) Grade(_ context.Context, c Case, output string) Grade {
	got, want := normalizeExact(output), normalizeExact(c.Reference)
	g := verdict(got == want, "got %q, reference %q", clip(got, 200), clip(want, 200))
	g.Extracted = got
	return g
}

func normalizeExact(s string) string {
	return strings.ToLower(strings.Join(strings.Fields(s), " "))
}

// clip shortens s to at most n characters for explanations.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
