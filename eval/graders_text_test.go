package eval

import (
	"context"
	"strings"
	"testing"
)

func TestRegexAndJSONSchemaGraders(t *testing.T) {
	tests := []struct {
		id, output string
		pass       bool
		gradeErr   bool
		expl       string
	}{
		{"regex-order-id", "The order id is ORD-48213.", true, false, `matched "ORD-48213"`},
		{"regex-order-id", "The order id is ORD-4821.", false, false, "no match"},
		{"regex-case-insensitive", "Positive — the reviewer loved it.", true, false, "matched"},
		{"regex-case-insensitive", "It is not positive.", false, false, "no match"},
		{"regex-bad-pattern", "anything", false, true, "bad pattern"},
		{"json-contact", `{"name": "Ada", "email": "ada@example.com"}`, true, false, "valid JSON"},
		{"json-contact", "Sure:\n```json\n{\"name\": \"Ada\", \"email\": \"ada@example.com\"}\n```", true, false, "valid JSON"},
		{"json-contact", `{"name": "Ada", "email": "not-an-email"}`, false, false, "schema violation"},
		{"json-contact", `{"name": "Ada"}`, false, false, "missing property 'email'"},
		{"json-contact", `{"name": "Ada", "email": "a@b.co", "age": 3}`, false, false, "additional properties 'age'"},
		{"json-contact", `name: Ada`, false, false, "not JSON"},
		{"json-contact", ``, false, false, "empty output"},
		{"json-ref-schema", `[1, 2, 3]`, true, false, "valid JSON"},
		{"json-ref-schema", `[1, 2, 3, 4]`, false, false, "schema violation"},
		{"json-ref-schema", `[1.5]`, false, false, "schema violation"},
		{"json-remote-ref", `{}`, false, true, "external schemas are not loaded"},
	}
	for _, tt := range tests {
		c := caseByID(t, "structured-small.jsonl", tt.id)
		g, err := GraderFor(c.Grader)
		if err != nil {
			t.Fatal(err)
		}
		got := g.Grade(context.Background(), c, tt.output)
		if (got.Err != nil) != tt.gradeErr || got.Passed != tt.pass || !strings.Contains(got.Explanation, tt.expl) {
			t.Errorf("%s on %q: passed=%v err=%v %q; want passed=%v err=%v containing %q",
				tt.id, tt.output, got.Passed, got.Err, got.Explanation, tt.pass, tt.gradeErr, tt.expl)
		}
	}
}
