package shadow

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// pyKind is the type of a parsed Python literal.
type pyKind int

const (
	pyStr pyKind = iota
	pyInt
	pyList
	pyNone // Python None or JSON null
)

func (k pyKind) String() string {
	switch k {
	case pyStr:
		return "string"
	case pyInt:
		return "integer"
	case pyNone:
		return "None"
	default:
		return "list"
	}
}

// pyValue is a Python literal restricted to what workflow lists hold: strings,
// integers, None (also written null) and (nested) lists or tuples.
type pyValue struct {
	kind pyKind
	s    string
	i    int64
	list []pyValue
}

// maxPyDepth bounds list nesting so hostile input cannot exhaust the stack.
const maxPyDepth = 16

type pyParser struct {
	src string
	pos int
}

// parsePyList parses a Python list (or tuple) literal starting at src[pos] (leading
// whitespace allowed) and returns it with the offset just past its end.
func parsePyList(src string, pos int) (pyValue, int, error) {
	p := &pyParser{src: src, pos: pos}
	p.skipSpace()
	if p.pos >= len(p.src) || (p.src[p.pos] != '[' && p.src[p.pos] != '(') {
		return pyValue{}, p.pos, fmt.Errorf("offset %d: want '[' to start a list", p.pos)
	}
	v, err := p.value(0)
	return v, p.pos, err
}

// skipSpace skips whitespace, backslash line continuations and # comments.
func (p *pyParser) skipSpace() {
	for p.pos < len(p.src) {
		switch c := p.src[p.pos]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			p.pos++
		case c == '\\' && p.pos+1 < len(p.src) && (p.src[p.pos+1] == '\n' || p.src[p.pos+1] == '\r'):
			p.pos += 2
		case c == '#':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' {
				p.pos++
			}
		default:
			return
		}
	}
}

func (p *pyParser) errf(format string, args ...any) error {
	return fmt.Errorf("offset %d: %s", p.pos, fmt.Sprintf(format, args...))
}

func (p *pyParser) value(depth int) (pyValue, error) {
	if depth > maxPyDepth {
		return pyValue{}, p.errf("lists nested deeper than %d", maxPyDepth)
	}
	p.skipSpace()
	if p.pos >= len(p.src) {
		return pyValue{}, p.errf("unexpected end of text")
	}
	c := p.src[p.pos]
	switch {
	case c == '[':
		return p.seq(']', depth)
	case c == '(':
		return p.seq(')', depth)
	case c == '-' || c == '+' || (c >= '0' && c <= '9'):
		return p.integer()
	case c == '\'' || c == '"':
		return p.stringConcat()
	case strings.ContainsRune("rRuU", rune(c)) && p.pos+1 < len(p.src) && (p.src[p.pos+1] == '\'' || p.src[p.pos+1] == '"'):
		return p.stringConcat()
	case p.keyword("None") || p.keyword("null"):
		return pyValue{kind: pyNone}, nil
	default:
		r, _ := utf8.DecodeRuneInString(p.src[p.pos:])
		return pyValue{}, p.errf("unexpected %q: want a list, a string, an integer or None", r)
	}
}

// keyword consumes word at p.pos when it stands alone (not the start of a
// longer identifier) and reports whether it did.
func (p *pyParser) keyword(word string) bool {
	end := p.pos + len(word)
	if !strings.HasPrefix(p.src[p.pos:], word) {
		return false
	}
	if end < len(p.src) {
		if c := p.src[end]; c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			return false
		}
	}
	p.pos = end
	return true
}

// seq parses the items of a list or tuple up to the closing byte.
func (p *pyParser) seq(closing byte, depth int) (pyValue, error) {
	p.pos++ // opening bracket
	v := pyValue{kind: pyList, list: []pyValue{}}
	for {
		p.skipSpace()
		if p.pos >= len(p.src) {
			return pyValue{}, p.errf("unclosed list: want %q", closing)
		}
		if p.src[p.pos] == closing {
			p.pos++
			return v, nil
		}
		item, err := p.value(depth + 1)
		if err != nil {
			return pyValue{}, err
		}
		v.list = append(v.list, item)
		p.skipSpace()
		if p.pos >= len(p.src) {
			return pyValue{}, p.errf("unclosed list: want %q", closing)
		}
		switch p.src[p.pos] {
		case ',':
			p.pos++
		case closing:
		default:
			r, _ := utf8.DecodeRuneInString(p.src[p.pos:])
			return pyValue{}, p.errf("unexpected %q: want ',' or %q", r, closing)
		}
	}
}

func (p *pyParser) integer() (pyValue, error) {
	start := p.pos
	if p.src[p.pos] == '-' || p.src[p.pos] == '+' {
		p.pos++
	}
	digits := p.pos
	for p.pos < len(p.src) && (p.src[p.pos] >= '0' && p.src[p.pos] <= '9' || p.src[p.pos] == '_') {
		p.pos++
	}
	if p.pos == digits {
		return pyValue{}, p.errf("want digits after sign")
	}
	if p.pos < len(p.src) && (p.src[p.pos] == '.' || p.src[p.pos] == 'e' || p.src[p.pos] == 'E') {
		return pyValue{}, p.errf("want an integer, got a number with a fraction or exponent")
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(p.src[start:p.pos], "_", ""), 10, 64)
	if err != nil {
		return pyValue{}, fmt.Errorf("offset %d: integer %q: %w", start, p.src[start:p.pos], err)
	}
	return pyValue{kind: pyInt, i: n}, nil
}

// stringConcat parses one string literal and any adjacent ones (Python concatenates
// "a" "b" into "ab").
func (p *pyParser) stringConcat() (pyValue, error) {
	var b strings.Builder
	for {
		if err := p.stringLit(&b); err != nil {
			return pyValue{}, err
		}
		save := p.pos
		p.skipSpace()
		if p.pos < len(p.src) && (p.src[p.pos] == '\'' || p.src[p.pos] == '"' ||
			(strings.ContainsRune("rRuU", rune(p.src[p.pos])) && p.pos+1 < len(p.src) && (p.src[p.pos+1] == '\'' || p.src[p.pos+1] == '"'))) {
			continue
		}
		p.pos = save
		return pyValue{kind: pyStr, s: b.String()}, nil
	}
}

func (p *pyParser) stringLit(b *strings.Builder) error {
	raw := false
	if c := p.src[p.pos]; c == 'r' || c == 'R' {
		raw = true
		p.pos++
	} else if c == 'u' || c == 'U' {
		p.pos++
	}
	q := p.src[p.pos]
	triple := strings.HasPrefix(p.src[p.pos:], strings.Repeat(string(q), 3))
	if triple {
		p.pos += 3
	} else {
		p.pos++
	}
	start := p.pos
	for {
		if p.pos >= len(p.src) {
			return fmt.Errorf("offset %d: unterminated string", start)
		}
		c := p.src[p.pos]
		switch {
		case c == q && (!triple || strings.HasPrefix(p.src[p.pos:], strings.Repeat(string(q), 3))):
			if triple {
				p.pos += 3
			} else {
				p.pos++
			}
			return nil
		case c == '\n' && !triple:
			return fmt.Errorf("offset %d: newline in a single-quoted string", p.pos)
		case c == '\\':
			if p.pos+1 >= len(p.src) {
				return fmt.Errorf("offset %d: unterminated string", start)
			}
			if raw {
				b.WriteByte('\\')
				b.WriteByte(p.src[p.pos+1])
				p.pos += 2
				continue
			}
			if err := p.escape(b); err != nil {
				return err
			}
		default:
			b.WriteByte(c)
			p.pos++
		}
	}
}

// escape decodes one backslash escape at p.pos as Python does.
func (p *pyParser) escape(b *strings.Builder) error {
	at := p.pos
	e := p.src[p.pos+1]
	p.pos += 2
	simple := map[byte]string{
		'\\': "\\", '\'': "'", '"': "\"", 'a': "\a", 'b': "\b", 'f': "\f",
		'n': "\n", 'r': "\r", 't': "\t", 'v': "\v", '\n': "",
	}
	if s, ok := simple[e]; ok {
		b.WriteString(s)
		return nil
	}
	switch {
	case e == '\r':
		if p.pos < len(p.src) && p.src[p.pos] == '\n' {
			p.pos++
		}
		return nil
	case e >= '0' && e <= '7':
		end := p.pos - 1
		for end < len(p.src) && end < p.pos+2 && p.src[end] >= '0' && p.src[end] <= '7' {
			end++
		}
		n, _ := strconv.ParseUint(p.src[p.pos-1:end], 8, 32)
		b.WriteRune(rune(n))
		p.pos = end
		return nil
	case e == 'x' || e == 'u' || e == 'U':
		width := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
		if p.pos+width > len(p.src) {
			return fmt.Errorf("offset %d: truncated \\%c escape", at, e)
		}
		n, err := strconv.ParseUint(p.src[p.pos:p.pos+width], 16, 32)
		if err != nil {
			return fmt.Errorf("offset %d: bad \\%c escape %q", at, e, p.src[p.pos:p.pos+width])
		}
		if n > utf8.MaxRune {
			return fmt.Errorf("offset %d: \\%c escape %q is beyond Unicode", at, e, p.src[p.pos:p.pos+width])
		}
		b.WriteRune(rune(n))
		p.pos += width
		return nil
	default:
		// Python keeps unknown escapes (and \N{...}) as written.
		b.WriteByte('\\')
		b.WriteByte(e)
		return nil
	}
}
