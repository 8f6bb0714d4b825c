package store

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Rows travel between Go and both transports as JSON objects, one per line
// (ClickHouse's JSONEachRow). encoding/json would replace invalid UTF-8 with
// U+FFFD; stored text is arbitrary user input, so this codec keeps string bytes
// exactly: it escapes only '"', '\\' and control characters and copies every other
// byte, valid UTF-8 or not. ClickHouse's String type holds bytes, so the text
// round-trips unchanged.

// chTimeLayout is how DateTime64(3, 'UTC') values are written and read.
const chTimeLayout = "2006-01-02 15:04:05.000"

// field is one column of a model struct: the json tag is the column name.
type field struct {
	name  string
	index int
	kind  reflect.Kind
	typ   reflect.Type
}

var timeType = reflect.TypeFor[time.Time]()

// fieldCache maps a struct type to its columns. It is a pure cache of
// reflection results, safe for concurrent use.
var fieldCache sync.Map

func fieldsOf(t reflect.Type) []field {
	if f, ok := fieldCache.Load(t); ok {
		return f.([]field)
	}
	var out []field
	for i := range t.NumField() {
		sf := t.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "" || name == "-" || !sf.IsExported() {
			continue
		}
		out = append(out, field{name: name, index: i, kind: sf.Type.Kind(), typ: sf.Type})
	}
	fieldCache.Store(t, out)
	return out
}

// columnsOf returns the column names of model type T, in field order.
func columnsOf[T any]() []string {
	var names []string
	for _, f := range fieldsOf(reflect.TypeFor[T]()) {
		names = append(names, f.name)
	}
	return names
}

// encodeTime renders t as a DateTime64(3, 'UTC') text. The zero time is stored
// as the Unix epoch (DateTime64 cannot hold year 1) and read back as zero.
func encodeTime(t time.Time) string {
	if t.IsZero() {
		return time.Unix(0, 0).UTC().Format(chTimeLayout)
	}
	return t.UTC().Format(chTimeLayout)
}

func decodeTime(s string) (time.Time, error) {
	t, err := time.ParseInLocation("2006-01-02 15:04:05.999999999", s, time.UTC)
	if err != nil {
		return time.Time{}, err
	}
	if t.Equal(time.Unix(0, 0)) {
		return time.Time{}, nil
	}
	return t, nil
}

func sortedKeys(m reflect.Value) []string {
	keys := make([]string, 0, m.Len())
	for _, k := range m.MapKeys() {
		keys = append(keys, k.String())
	}
	slices.Sort(keys)
	return keys
}

// decodeRow parses one JSON object into *T by json tags. Unknown keys are ignored.
func decodeRow[T any](line []byte) (T, error) {
	var out T
	p := jsonParser{b: line}
	obj, err := p.parseTop()
	if err != nil {
		return out, err
	}
	rv := reflect.ValueOf(&out).Elem()
	for _, f := range fieldsOf(rv.Type()) {
		raw, ok := obj[f.name]
		if !ok {
			continue
		}
		if err := assign(rv.Field(f.index), f, raw); err != nil {
			return out, fmt.Errorf("column %s: %w", f.name, err)
		}
	}
	return out, nil
}

func assign(dst reflect.Value, f field, v any) error {
	if v == nil {
		return nil
	}
	switch {
	case f.typ == timeType:
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("want a time text, got %T", v)
		}
		t, err := decodeTime(s)
		if err != nil {
			return err
		}
		dst.Set(reflect.ValueOf(t))
	case f.kind == reflect.String:
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("want text, got %T", v)
		}
		dst.SetString(s)
	case f.kind == reflect.Bool:
		switch x := v.(type) {
		case bool:
			dst.SetBool(x)
		case jsonNumber:
			dst.SetBool(x != "0")
		default:
			return fmt.Errorf("want a bool, got %T", v)
		}
	case f.kind >= reflect.Int && f.kind <= reflect.Int64:
		s, err := numberText(v)
		if err != nil {
			return err
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			fl, ferr := strconv.ParseFloat(s, 64)
			if ferr != nil {
				return err
			}
			n = int64(fl)
		}
		dst.SetInt(n)
	case f.kind == reflect.Float64 || f.kind == reflect.Float32:
		s, err := numberText(v)
		if err != nil {
			return err
		}
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return err
		}
		dst.SetFloat(x)
	case f.kind == reflect.Slice:
		arr, ok := v.([]any)
		if !ok {
			return fmt.Errorf("want an array, got %T", v)
		}
		if len(arr) == 0 {
			return nil // empty arrays read back as nil
		}
		out := reflect.MakeSlice(f.typ, len(arr), len(arr))
		for i, e := range arr {
			s, ok := e.(string)
			if !ok {
				return fmt.Errorf("want text elements, got %T", e)
			}
			out.Index(i).SetString(s)
		}
		dst.Set(out)
	case f.kind == reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("want an object, got %T", v)
		}
		if len(obj) == 0 {
			return nil // empty maps read back as nil
		}
		out := reflect.MakeMapWithSize(f.typ, len(obj))
		for k, e := range obj {
			s, ok := e.(string)
			if !ok {
				return fmt.Errorf("want text values, got %T", e)
			}
			out.SetMapIndex(reflect.ValueOf(k), reflect.ValueOf(s))
		}
		dst.Set(out)
	default:
		return fmt.Errorf("unsupported Go type %s", f.typ)
	}
	return nil
}

func numberText(v any) (string, error) {
	switch x := v.(type) {
	case jsonNumber:
		return string(x), nil
	case string: // 64-bit integers may be quoted
		return x, nil
	case bool:
		if x {
			return "1", nil
		}
		return "0", nil
	}
	return "", fmt.Errorf("want a number, got %T", v)
}

// jsonNumber is a number's literal text.
type jsonNumber string

// jsonParser parses JSON values, keeping string bytes that are not escapes as
// they are (invalid UTF-8 included). Values: string, jsonNumber, bool, nil,
// []any, map[string]any.
type jsonParser struct {
	b []byte
	i int
}

func (p *jsonParser) parseTop() (map[string]any, error) {
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	p.ws()
	if p.i != len(p.b) {
		return nil, fmt.Errorf("json: trailing data at byte %d", p.i)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("json: want an object per row")
	}
	return obj, nil
}

func (p *jsonParser) ws() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\n' || p.b[p.i] == '\t' || p.b[p.i] == '\r') {
		p.i++
	}
}

func (p *jsonParser) errf(format string, args ...any) error {
	return fmt.Errorf("json: byte %d: %s", p.i, fmt.Sprintf(format, args...))
}

func (p *jsonParser) value() (any, error) {
	p.ws()
	if p.i >= len(p.b) {
		return nil, p.errf("unexpected end")
	}
	switch c := p.b[p.i]; {
	case c == '"':
		return p.str()
	case c == '{':
		p.i++
		obj := map[string]any{}
		p.ws()
		if p.i < len(p.b) && p.b[p.i] == '}' {
			p.i++
			return obj, nil
		}
		for {
			p.ws()
			if p.i >= len(p.b) || p.b[p.i] != '"' {
				return nil, p.errf("want a key")
			}
			k, err := p.str()
			if err != nil {
				return nil, err
			}
			p.ws()
			if p.i >= len(p.b) || p.b[p.i] != ':' {
				return nil, p.errf("want ':'")
			}
			p.i++
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			obj[k] = v
			p.ws()
			if p.i < len(p.b) && p.b[p.i] == ',' {
				p.i++
				continue
			}
			if p.i < len(p.b) && p.b[p.i] == '}' {
				p.i++
				return obj, nil
			}
			return nil, p.errf("want ',' or '}'")
		}
	case c == '[':
		p.i++
		arr := []any{}
		p.ws()
		if p.i < len(p.b) && p.b[p.i] == ']' {
			p.i++
			return arr, nil
		}
		for {
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
			p.ws()
			if p.i < len(p.b) && p.b[p.i] == ',' {
				p.i++
				continue
			}
			if p.i < len(p.b) && p.b[p.i] == ']' {
				p.i++
				return arr, nil
			}
			return nil, p.errf("want ',' or ']'")
		}
	case bytes.HasPrefix(p.b[p.i:], []byte("true")):
		p.i += 4
		return true, nil
	case bytes.HasPrefix(p.b[p.i:], []byte("false")):
		p.i += 5
		return false, nil
	case bytes.HasPrefix(p.b[p.i:], []byte("null")):
		p.i += 4
		return nil, nil
	default:
		j := p.i
		for j < len(p.b) && strings.IndexByte("+-0123456789.eEnaifNAIF", p.b[j]) >= 0 {
			j++
		}
		if j == p.i {
			return nil, p.errf("unexpected %q", c)
		}
		n := jsonNumber(p.b[p.i:j])
		p.i = j
		return n, nil
	}
}

func (p *jsonParser) str() (string, error) {
	p.i++ // opening quote
	var sb []byte
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch c {
		case '"':
			p.i++
			return string(sb), nil
		case '\\':
			if p.i+1 >= len(p.b) {
				return "", p.errf("unterminated escape")
			}
			e := p.b[p.i+1]
			p.i += 2
			switch e {
			case '"', '\\', '/':
				sb = append(sb, e)
			case 'b':
				sb = append(sb, '\b')
			case 'f':
				sb = append(sb, '\f')
			case 'n':
				sb = append(sb, '\n')
			case 'r':
				sb = append(sb, '\r')
			case 't':
				sb = append(sb, '\t')
			case 'u':
				r, err := p.hex4()
				if err != nil {
					return "", err
				}
				if r >= 0xD800 && r < 0xDC00 && bytes.HasPrefix(p.b[p.i:], []byte(`\u`)) {
					save := p.i
					p.i += 2
					lo, err := p.hex4()
					if err == nil && lo >= 0xDC00 && lo < 0xE000 {
						r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
					} else {
						p.i = save
					}
				}
				sb = utf8.AppendRune(sb, r)
			default:
				return "", p.errf("bad escape \\%c", e)
			}
		default:
			sb = append(sb, c)
			p.i++
		}
	}
	return "", p.errf("unterminated string")
}

func (p *jsonParser) hex4() (rune, error) {
	if p.i+4 > len(p.b) {
		return 0, p.errf("short \\u escape")
	}
	n, err := strconv.ParseUint(string(p.b[p.i:p.i+4]), 16, 32)
	if err != nil {
		return 0, p.errf("bad \\u escape")
	}
	p.i += 4
	return rune(n), nil
}
