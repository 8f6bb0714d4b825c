package store

import (
	"encoding/json"
	"unicode/utf8"
)

// PreviewChars is the length of TraceSummary.InputPreview, in characters (code points).
const PreviewChars = 200

// InputPreview returns the first PreviewChars characters of the last message with
// role "user" in input, a JSON array of chat messages ([{"role":..,"content":..}]
// with string content). When input is not such an array or has no user message
// with string content, it previews input itself. The SQL stores compute the same
// figure in the query; the store contract (storetest.RunContract) checks their
// answer against this one.
func InputPreview(input string) string {
	var msgs []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	text := input
	if err := json.Unmarshal([]byte(input), &msgs); err == nil {
		for i := len(msgs) - 1; i >= 0; i-- {
			var s string
			if msgs[i].Role == "user" && json.Unmarshal(msgs[i].Content, &s) == nil {
				text = s
				break
			}
		}
	}
	return firstChars(text, PreviewChars)
}

func firstChars(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for k := 0; k < n; k++ {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i]
}
