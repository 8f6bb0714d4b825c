package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// RegexGrader passes when the output contains a match of the case's
// Reference, a Go (RE2) regular expression; flags go inline, e.g. "(?i)".
// An invalid expression is a grader error.
type RegexGrader struct{}

// Name returns "regex".
func (RegexGrader) Name() string { return GraderRegex }

// Grade searches the output for the pattern.
func (RegexGrader) Grade(_ context.Context, c Case, output string) Grade {
	re, err := regexp.Compile(c.Reference)
	if err != nil {
		return gradeErr("eval: regex grader: case %s: bad pattern: %w", c.ID, err)
	}
	if m := re.FindString(output); m != "" || re.MatchString(output) {
		g := pass("matched %q with /%s/", clip(m, 200), clip(c.Reference, 200))
		g.Extracted = m
		return g
	}
	return fail("no match for /%s/ in %q", clip(c.Reference, 200), clip(output, 200))
}

// JSONSchemaGrader passes when the output is JSON valid against the case's
// schema: Extra["schema"] (a JSON object) or, without it, the Reference as
// JSON text. The JSON is the first ```json (or unlabelled) fenced block of the
// output, else the whole trimmed output. Formats ("email", "date-time", …)
// are asserted. A schema that does not compile, or that refers to other
// documents (no loading), is a grader error; output that is not JSON fails.
type JSONSchemaGrader struct{}

// Name returns "json_schema".
func (JSONSchemaGrader) Name() string { return GraderJSONSchema }

var jsonFenceRe = regexp.MustCompile("(?s)```[ \\t]*(?:json)?[ \\t]*\\n(.*?)```")

// noLoader refuses every external schema reference.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("schema references %s: external schemas are not loaded", url)
}

// Grade validates the output's JSON.
func (JSONSchemaGrader) Grade(_ context.Context, c Case, output string) Grade {
	var doc any
	switch s := c.Extra["schema"].(type) {
	case map[string]any, bool:
		doc = s
	case nil:
		d, err := jsonschema.UnmarshalJSON(strings.NewReader(c.Reference))
		if err != nil {
			return gradeErr("eval: json_schema grader: case %s: reference is not a JSON schema: %w", c.ID, err)
		}
		doc = d
	default:
		return gradeErr("eval: json_schema grader: case %s: schema must be a JSON object, got %T", c.ID, s)
	}
	comp := jsonschema.NewCompiler()
	comp.AssertFormat()
	comp.UseLoader(noLoader{})
	const loc = "mem:///case-schema.json"
	if err := comp.AddResource(loc, doc); err != nil {
		return gradeErr("eval: json_schema grader: case %s: %w", c.ID, err)
	}
	sch, err := comp.Compile(loc)
	if err != nil {
		return gradeErr("eval: json_schema grader: case %s: compile schema: %w", c.ID, err)
	}
	text := strings.TrimSpace(output)
	if m := jsonFenceRe.FindStringSubmatch(output); m != nil {
		text = strings.TrimSpace(m[1])
	}
	if text == "" {
		return fail("empty output")
	}
	if !json.Valid([]byte(text)) {
		return fail("not JSON: %q", clip(text, 200))
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(text)))
	if err != nil {
		return fail("not JSON: %v", err)
	}
	if err := sch.Validate(v); err != nil {
		return fail("schema violation: %s", clip(strings.Join(strings.Fields(err.Error()), " "), 600))
	}
	return pass("valid JSON against the schema")
}
