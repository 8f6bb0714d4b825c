package ingest

import (
	"encoding/json"
	"testing"
)

func TestUnescapeHTMLInJSON(t *testing.T) {
	tests := []struct{ text, want string }{
		{"<EMAIL_3f9a> & <b>", `"<EMAIL_3f9a> & <b>"`},
		{`a literal \u003c stays`, `"a literal \\u003c stays"`},
		{"quote \" and \\ and \n newline", `"quote \" and \\ and \n newline"`},
		{"\u2028 separators stay escaped", `"\u2028 separators stay escaped"`},
		{"no escapes", `"no escapes"`},
	}
	for _, tt := range tests {
		enc, err := json.Marshal(tt.text)
		if err != nil {
			t.Fatal(err)
		}
		got := unescapeHTMLInJSON(enc)
		if string(got) != tt.want {
			t.Errorf("%q: got %s, want %s", tt.text, got, tt.want)
		}
		var back string
		if err := json.Unmarshal(got, &back); err != nil || back != tt.text {
			t.Errorf("%q: decodes to %q, %v: the JSON value must not change", tt.text, back, err)
		}
	}
}

func FuzzUnescapeHTMLInJSON(f *testing.F) {
	for _, s := range []string{"<a>", `\u003c`, "&&", `\\u003c<`, "plain"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		enc, _ := json.Marshal(s)
		var back string
		if err := json.Unmarshal(unescapeHTMLInJSON(enc), &back); err != nil {
			t.Fatalf("%q: invalid JSON after unescaping: %v", s, err)
		}
		var orig string
		_ = json.Unmarshal(enc, &orig)
		if back != orig {
			t.Fatalf("%q: value changed: %q != %q", s, back, orig)
		}
	})
}
