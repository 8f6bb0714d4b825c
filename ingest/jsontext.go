package ingest

import "bytes"

// htmlEscape maps the escapes encoding/json writes for <, > and & (go-openai's
// message marshaller always uses them) back to the characters.
func htmlEscape(esc string) (byte, bool) {
	switch esc {
	case "u003c":
		return '<', true
	case "u003e":
		return '>', true
	case "u0026":
		return '&', true
	}
	return 0, false
}

// unescapeHTMLInJSON turns the \u003c, \u003e and \u0026 escapes of valid JSON
// back into <, > and &, so stored input reads (and matches LIKE '%<EMAIL_%') as
// the user typed it. The result is the same JSON value. Escapes are read pair by
// pair, so an escaped backslash followed by "u003c" (the text `\u003c`) is kept.
func unescapeHTMLInJSON(b []byte) []byte {
	if !bytes.Contains(b, []byte(`\u00`)) {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			out = append(out, b[i])
			continue
		}
		if b[i+1] == 'u' && i+6 <= len(b) {
			if c, ok := htmlEscape(string(b[i+1 : i+6])); ok {
				out = append(out, c)
				i += 5
				continue
			}
		}
		out = append(out, b[i], b[i+1]) // any other escape, whole
		i++
	}
	return out
}
