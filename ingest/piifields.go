package ingest

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"slices"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// textVisitor rewrites one field: text for free text, json for a field that
// holds JSON text (its string keys and values are rewritten, its structure
// kept), strings for a string map (keys and values).
type textVisitor interface {
	text(s *string)
	json(s *string)
	strings(m *map[string]string)
}

// textFields is the one list of every stored text field that pseudonymization
// covers. It calls v on each text of the exchange ex (when not nil) and of the
// records b written for it (when not nil): what a candidate's workers answered
// can echo or invent personal data.
//
// Exchange: request id, app, models, every message's content, refusal, text
// and image-URL parts, a file part's filename, name, reasoning, function and
// tool calls (id, name, arguments), tool-call id; the tools (name, description,
// parameters) and what the input lacks; the answer's id, content, reasoning, every choice
// (content, reasoning, tool calls with id, name, arguments), error and headers
// (keys and values); metadata keys and values.
//
// Records: every run's final output, reasoning, choices, tool calls, plan,
// raw plan, error and input-reduced reason; every step's subtask, messages,
// output, tool calls, reasoning and error; every score's explanation and
// error; every live judgment's raw replies (both orders), error and note (a
// judge can echo the answers it compares). Ids, enums (status, mode, role,
// finish reason), worker and pipeline names, access lists and numbers are not
// text and are left alone.
//
// Slices and maps are copied before they are written: a caller's backing
// arrays are never changed. A field added to Exchange or to a stored row must
// be listed here or in piiNotText (pii_fields_test.go checks both by
// reflection, and the store scan test checks every String column).
func textFields(ex *Exchange, b *store.Batch, v textVisitor) {
	if ex != nil {
		v.text(&ex.RequestID)
		v.text(&ex.App)
		v.text(&ex.Request.Model)
		ex.Request.Messages = slices.Clone(ex.Request.Messages)
		for i := range ex.Request.Messages {
			messageFields(&ex.Request.Messages[i], v)
		}
		ex.Request.Tools = slices.Clone(ex.Request.Tools)
		for i := range ex.Request.Tools {
			toolFields(&ex.Request.Tools[i], v)
		}
		v.text(&ex.Request.InputReduced)
		if ex.Response != nil {
			r := *ex.Response
			v.text(&r.ID)
			v.text(&r.Model)
			v.text(&r.Content)
			v.text(&r.Reasoning)
			v.text(&r.Error)
			v.strings(&r.Headers)
			r.Choices = slices.Clone(r.Choices)
			for i := range r.Choices {
				c := &r.Choices[i]
				v.text(&c.Content)
				v.text(&c.Reasoning)
				c.ToolCalls = slices.Clone(c.ToolCalls)
				for j := range c.ToolCalls {
					tc := &c.ToolCalls[j]
					v.text(&tc.ID)
					v.text(&tc.Name)
					v.json(&tc.Arguments)
				}
			}
			ex.Response = &r
		}
		v.strings(&ex.Metadata)
	}
	if b != nil {
		b.Runs = slices.Clone(b.Runs)
		for i := range b.Runs {
			r := &b.Runs[i]
			v.text(&r.FinalOutput)
			v.text(&r.Reasoning)
			v.json(&r.Choices)
			v.json(&r.ToolCalls)
			v.text(&r.PlanRaw)
			v.json(&r.Plan)
			v.text(&r.Error)
			v.strings(&r.ResponseHeaders)
			v.text(&r.InputReducedReason)
		}
		b.Steps = slices.Clone(b.Steps)
		for i := range b.Steps {
			s := &b.Steps[i]
			v.text(&s.Subtask)
			v.json(&s.Messages)
			v.text(&s.Output)
			v.json(&s.ToolCalls)
			v.text(&s.Reasoning)
			v.text(&s.Error)
		}
		b.Scores = slices.Clone(b.Scores)
		for i := range b.Scores {
			v.text(&b.Scores[i].Explanation)
			v.text(&b.Scores[i].Error)
		}
		b.Judgments = slices.Clone(b.Judgments)
		for i := range b.Judgments {
			j := &b.Judgments[i]
			v.text(&j.Raw1)
			v.text(&j.Raw2)
			v.text(&j.Error)
			v.text(&j.Note)
		}
	}
}

// toolFields visits one tool definition's texts: its name and description,
// and its parameters' JSON schema (descriptions, enums, examples) as JSON.
func toolFields(t *openai.Tool, v textVisitor) {
	if t.Function != nil {
		f := *t.Function
		v.text(&f.Name)
		v.text(&f.Description)
		if f.Parameters != nil {
			if b, err := json.Marshal(f.Parameters); err == nil {
				s := string(b)
				v.json(&s)
				f.Parameters = json.RawMessage(s)
			}
		}
		t.Function = &f
	}
	if len(t.Parameters) > 0 {
		if b, err := json.Marshal(t.Parameters); err == nil {
			s := string(b)
			v.json(&s)
			var m map[string]any
			if json.Unmarshal([]byte(s), &m) == nil {
				t.Parameters = m
			}
		}
	}
}

// messageFields visits one chat message's texts (see textFields).
func messageFields(m *openai.ChatCompletionMessage, v textVisitor) {
	v.text(&m.Content)
	v.text(&m.Refusal)
	v.text(&m.Name)
	v.text(&m.ReasoningContent)
	v.text(&m.ToolCallID)
	if len(m.MultiContent) > 0 {
		m.MultiContent = slices.Clone(m.MultiContent)
		for j := range m.MultiContent {
			p := &m.MultiContent[j]
			v.text(&p.Text)
			if p.ImageURL != nil && !strings.HasPrefix(p.ImageURL.URL, "data:") { // inline image bytes are not text
				u := *p.ImageURL
				v.text(&u.URL)
				p.ImageURL = &u
			}
			if p.Type == shadow.PartTypeFile && p.ImageURL != nil { // a file part's Detail is its filename
				u := *p.ImageURL
				name := string(u.Detail)
				v.text(&name)
				u.Detail = openai.ImageURLDetail(name)
				p.ImageURL = &u
			}
		}
	}
	if len(m.ToolCalls) > 0 {
		m.ToolCalls = slices.Clone(m.ToolCalls)
		for j := range m.ToolCalls {
			tc := &m.ToolCalls[j]
			v.text(&tc.ID)
			v.text(&tc.Function.Name)
			v.json(&tc.Function.Arguments)
		}
	}
	if m.FunctionCall != nil {
		fc := *m.FunctionCall
		v.text(&fc.Name)
		v.json(&fc.Arguments)
		m.FunctionCall = &fc
	}
}

// pseudonymizeVisitor applies a Pseudonymizer to each field textFields names.
type pseudonymizeVisitor struct {
	p     *Pseudonymizer
	app   string
	fired map[string]int
}

func (v pseudonymizeVisitor) text(s *string) { *s = v.p.Text(v.app, *s, v.fired) }

func (v pseudonymizeVisitor) json(s *string) { *s = v.p.jsonText(v.app, *s, v.fired) }

func (v pseudonymizeVisitor) strings(m *map[string]string) {
	if len(*m) == 0 {
		return
	}
	out := make(map[string]string, len(*m))
	for k, val := range *m {
		out[v.p.Text(v.app, k, v.fired)] = v.p.Text(v.app, val, v.fired)
	}
	*m = out
}

// jsonText pseudonymizes the string keys and values of s when s is a JSON
// object or array, keeping its structure and key order (JSON escapes such as
// \n would otherwise hide a value's edges from the rules); any other text is
// pseudonymized as text. s is returned unchanged when nothing fired.
func (p *Pseudonymizer) jsonText(app, s string, fired map[string]int) string {
	t := strings.TrimSpace(s)
	if t == "" || (t[0] != '{' && t[0] != '[') || !json.Valid([]byte(t)) {
		return p.Text(app, s, fired)
	}
	before := sumCounts(fired)
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	dec := json.NewDecoder(strings.NewReader(t))
	dec.UseNumber()
	// Tokens come without commas and colons: rebuild them from the nesting.
	type level struct {
		object bool
		n      int // tokens written at this level
	}
	var stack []level
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return p.Text(app, s, fired) // json.Valid said otherwise; be safe
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			out.WriteByte(byte(d))
			continue
		}
		if n := len(stack); n > 0 {
			top := &stack[n-1]
			switch {
			case top.object && top.n%2 == 1:
				out.WriteByte(':')
			case top.n > 0:
				out.WriteByte(',')
			}
			top.n++
		}
		switch x := tok.(type) {
		case json.Delim:
			out.WriteByte(byte(x))
			stack = append(stack, level{object: x == '{'})
		case string:
			_ = enc.Encode(p.Text(app, x, fired)) // a string always encodes
			out.Truncate(out.Len() - 1)           // Encode's newline
		case json.Number:
			out.WriteString(x.String())
		case bool:
			if x {
				out.WriteString("true")
			} else {
				out.WriteString("false")
			}
		case nil:
			out.WriteString("null")
		}
	}
	if sumCounts(fired) == before {
		return s
	}
	return out.String()
}

func sumCounts(m map[string]int) int {
	n := 0
	for v := range maps.Values(m) {
		n += v
	}
	return n
}

// UsePseudonymizer makes the processor pseudonymize every text of a candidate
// run's records (Pseudonymizer.Records) before it writes them: the exchange
// was pseudonymized by the tap, but a worker's answer can echo or invent
// personal data. Replacements are counted in StatsSnapshot.PII. Call before
// Start; nil turns it off.
func (p *Processor) UsePseudonymizer(pz *Pseudonymizer) { p.pii = pz }

// pseudonymize applies the processor's pseudonymizer to b, for app (the
// app the exchange was tapped with, already pseudonymized).
func (p *Processor) pseudonymize(app string, b *store.Batch) {
	if p.pii != nil {
		p.stats.addPII(p.pii.Records(app, b))
	}
}
