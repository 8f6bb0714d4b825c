package ingest

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// piiNotText are the string fields textFields leaves alone, by Type.Field:
// ids, hashes, enums and configuration names, none of which is free text.
// Anything else of Exchange or of a stored run, step or score is text.
var piiNotText = map[string]string{
	"Exchange.Subject":              "replaced by its hash before anything else",
	"Exchange.SubjectHash":          "keyed hash",
	"Exchange.TraceParent":          "W3C trace id",
	"Exchange.StoreOnly":            "enum, set by the tap",
	"Exchange.BodyOmitted":          "enum, set by the tap",
	"Request.NotShadowed":           "enum, set by the tap",
	"Request.BodyOmitted":           "enum, set by the tap",
	"ChatCompletionMessage.Role":    "enum",
	"ChatMessagePart.Type":          "enum",
	"ChatMessageImageURL.Detail":    "enum",
	"ToolCall.Type":                 "enum",
	"Tool.Type":                     "enum",
	"ExchangeResponse.FinishReason": "enum",
	"Choice.FinishReason":           "enum",
	"Run.RunID":                     "id", "Run.RequestID": "the exchange's id, pseudonymized by the tap",
	"Run.SuiteRunID": "id", "Run.Pipeline": "configured name", "Run.PipelineVersion": "configured version",
	"Run.Mode": "enum", "Run.Status": "enum",
	"Step.RunID": "id", "Step.Role": "enum", "Step.Worker": "configured name",
	"Step.Model": "configured model, or the exchange's, pseudonymized by the tap", "Step.Access": "access list",
	"Step.Status": "enum", "Step.FinishReason": "enum", "Step.PriceVersion": "price table version",
	"Score.SuiteRunID": "id", "Score.RunID": "id", "Score.RequestID": "the exchange's id, pseudonymized by the tap",
	"Score.CaseID": "id", "Score.Pipeline": "configured name", "Score.Grader": "configured name",
	"Judgment.RequestID": "the exchange's id, pseudonymized by the tap", "Judgment.SuiteRunID": "id", "Judgment.CaseID": "id",
	"Judgment.Pipeline": "configured name", "Judgment.PipelineVersion": "configured version", "Judgment.CandidateRunID": "id",
	"Judgment.IncumbentPipeline": "configured name, or the exchange's model, pseudonymized by the tap", "Judgment.IncumbentRunID": "id",
	"Judgment.Judge": "the judge worker's model", "Judgment.JudgeWorker": "configured name", "Judgment.PromptVersion": "configured version",
	"Judgment.Canary": "enum", "Judgment.Labels": "judge prompt labels", "Judgment.Outcome": "enum",
	"Judgment.Verdict1": "enum", "Judgment.Verdict2": "enum",
	"Step.EndpointHost": "configured host", "Score.JudgeWorker": "configured name", "Score.JudgeHost": "configured host",
	"Judgment.JudgeHost": "configured host",
}

// fillStrings sets every string (and every key and value of every string
// map) reachable from v to s, giving each slice one element and each pointer
// a value.
func fillStrings(v reflect.Value, s string) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Pointer:
		if v.Type().Elem() == reflect.TypeFor[int]() {
			return
		}
		v.Set(reflect.New(v.Type().Elem()))
		fillStrings(v.Elem(), s)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fillStrings(v.Index(0), s)
	case reflect.Map:
		if v.Type().Key().Kind() == reflect.String && v.Type().Elem().Kind() == reflect.String {
			m := reflect.MakeMap(v.Type())
			m.SetMapIndex(reflect.ValueOf(s).Convert(v.Type().Key()), reflect.ValueOf(s).Convert(v.Type().Elem()))
			v.Set(m)
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillStrings(v.Field(i), s)
			}
		}
	}
}

// rawStrings calls found with the Type.Field path of every string under v
// that still holds raw and is not in piiNotText.
func rawStrings(v reflect.Value, owner, raw string, found func(string)) {
	switch v.Kind() {
	case reflect.String:
		if _, skip := piiNotText[owner]; !skip && strings.Contains(v.String(), raw) {
			found(owner)
		}
	case reflect.Pointer:
		if !v.IsNil() {
			rawStrings(v.Elem(), owner, raw, found)
		}
	case reflect.Slice:
		for i := range v.Len() {
			rawStrings(v.Index(i), owner, raw, found)
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			rawStrings(k, owner+"[key]", raw, found)
			rawStrings(v.MapIndex(k), owner, raw, found)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if f.IsExported() {
				rawStrings(v.Field(i), v.Type().Name()+"."+f.Name, raw, found)
			}
		}
	}
}

// TestEveryTextFieldIsListed fills every string field of an Exchange and of
// the stored rows a candidate writes with personal data, by reflection, and
// checks that Exchange and Records replaced it everywhere but in the fields
// piiNotText names: a field added to any of these types fails here until
// textFields covers it or piiNotText says why it is not text.
func TestEveryTextFieldIsListed(t *testing.T) {
	p, err := NewPseudonymizer(NewDefaultPIIConfig(), testSecret)
	if err != nil {
		t.Fatal(err)
	}
	text := plantedText()
	var ex Exchange
	fillStrings(reflect.ValueOf(&ex).Elem(), text)
	p.Exchange(&ex)
	var b store.Batch
	fillStrings(reflect.ValueOf(&b).Elem(), text)
	p.Records("app", &b)
	for _, raw := range rawNeedles() {
		rawStrings(reflect.ValueOf(ex), "Exchange", raw, func(where string) { t.Errorf("%s still holds the raw value %q", where, raw) })
	}
	// Enums hold the planted text too (by reflection), so they are set to
	// real values before the stored request is encoded from the exchange;
	// a message holds parts or a content, never both.
	m := &ex.Request.Messages[0]
	m.Role, m.Content, m.MultiContent[0].Type, m.MultiContent[0].ImageURL.Detail, m.ToolCalls[0].Type = "user", "", "text", "", "function"
	ex.Request.Tools[0].Type = "function"
	ex.SubjectHash = ""
	req, err := RequestRecord(ex)
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range rawNeedles() {
		report := func(where string) { t.Errorf("%s still holds the raw value %q", where, raw) }
		rawStrings(reflect.ValueOf(b.Runs), "Run", raw, report)
		rawStrings(reflect.ValueOf(b.Steps), "Step", raw, report)
		rawStrings(reflect.ValueOf(b.Scores), "Score", raw, report)
		rawStrings(reflect.ValueOf(b.Judgments), "Judgment", raw, report)
		rawStrings(reflect.ValueOf(req), "Request", raw, report)
	}
	for path := range piiNotText {
		typ, field, _ := strings.Cut(path, ".")
		if !hasField(typ, field) {
			t.Errorf("piiNotText names %s, which no covered type has", path)
		}
	}
}

// hasField reports whether one of the types TestEveryTextFieldIsListed walks
// is named typ and has the field.
func hasField(typ, field string) bool {
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type) bool
	walk = func(t reflect.Type) bool {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] {
			return false
		}
		seen[t] = true
		if _, ok := t.FieldByName(field); ok && t.Name() == typ {
			return true
		}
		for i := range t.NumField() {
			if walk(t.Field(i).Type) {
				return true
			}
		}
		return false
	}
	return walk(reflect.TypeFor[Exchange]()) || walk(reflect.TypeFor[store.Batch]())
}
