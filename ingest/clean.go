package ingest

import "strings"

// nulReplacement stands in for a NUL byte in stored text: NUL is no text (HTML
// forbids it, C-string APIs cut at it), so it is shown as U+FFFD instead.
const nulReplacement = "\uFFFD"

// replaceNUL returns s with every NUL byte replaced by U+FFFD and how many there were.
func replaceNUL(s string) (string, int) {
	n := strings.Count(s, "\x00")
	if n == 0 {
		return s, 0
	}
	return strings.ReplaceAll(s, "\x00", nulReplacement), n
}

// ReplaceNUL replaces every NUL byte in the exchange's text (messages, answer,
// reasoning, choices, tool calls, error, app and metadata) with U+FFFD, before
// anything is stored; it returns how many it replaced.
func (e *Exchange) ReplaceNUL() int {
	total := 0
	fix := func(s *string) {
		var n int
		*s, n = replaceNUL(*s)
		total += n
	}
	fix(&e.App)
	for i := range e.Request.Messages {
		m := &e.Request.Messages[i]
		fix(&m.Content)
		fix(&m.Name)
		for j := range m.MultiContent {
			fix(&m.MultiContent[j].Text)
		}
		for j := range m.ToolCalls {
			fix(&m.ToolCalls[j].Function.Arguments)
		}
	}
	for k, v := range e.Metadata {
		if nv, n := replaceNUL(v); n > 0 {
			e.Metadata[k] = nv
			total += n
		}
	}
	if r := e.Response; r != nil {
		fix(&r.Content)
		fix(&r.Reasoning)
		fix(&r.Error)
		for i := range r.Choices {
			c := &r.Choices[i]
			fix(&c.Content)
			fix(&c.Reasoning)
			for j := range c.ToolCalls {
				fix(&c.ToolCalls[j].Name)
				fix(&c.ToolCalls[j].Arguments)
			}
		}
	}
	return total
}
