package store

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// InputNeedles returns the strings a text search looks for in Request.Input: the
// text itself and, when they differ, the text as it appears inside a JSON string
// literal. Input holds the chat messages as JSON, so a typed `"` is stored as
// `\"`, a tab as `\t` and a backslash as `\\`; searching only the typed text would
// miss them. The escaping is encoding/json's (Go 1.22+): `\"`, `\\`, `\n`, `\r`,
// `\t`, `\b`, `\f`, other control characters and U+2028/U+2029 as `\u00XX` /
// `\u2028`; <, > and & are kept as typed (the tap stores them unescaped).
func InputNeedles(text string) []string {
	esc := jsonEscapeText(text)
	if esc == text {
		return []string{text}
	}
	return []string{text, esc}
}

// jsonEscapeText renders s as the inside of a JSON string literal (no quotes).
func jsonEscapeText(s string) string {
	const hex = "0123456789abcdef"
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b.WriteByte('\\')
				b.WriteByte(c)
			case c == '\n':
				b.WriteString(`\n`)
			case c == '\r':
				b.WriteString(`\r`)
			case c == '\t':
				b.WriteString(`\t`)
			case c == '\b':
				b.WriteString(`\b`)
			case c == '\f':
				b.WriteString(`\f`)
			case c < 0x20:
				b.WriteString(`\u00`)
				b.WriteByte(hex[c>>4])
				b.WriteByte(hex[c&0xf])
			default:
				b.WriteByte(c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch r {
		case '\u2028':
			b.WriteString(`\u2028`)
		case '\u2029':
			b.WriteString(`\u2029`)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// inputMatchSQL is the SQL condition "input holds text" (exact bytes, or
// case-insensitively as UTF-8 text), over every needle of InputNeedles; the
// needles are bound in p as needle0, needle1, ...
func inputMatchSQL(p Params, text string) string {
	var parts []string
	for i, n := range InputNeedles(text) {
		name := "needle" + strconv.Itoa(i)
		p.Str(name, n)
		q := "{" + name + ":String}"
		parts = append(parts, "position(input, "+q+") > 0", "positionCaseInsensitiveUTF8(input, "+q+") > 0")
	}
	return "(" + strings.Join(parts, " OR ") + ")"
}
