package store

import (
	"slices"
	"strconv"
	"strings"
	"time"
)

// Params bind the {name:Type} placeholders of a statement (ClickHouse query
// parameters) to values in ClickHouse's escaped text form (the form the engine
// parses parameters in, as TabSeparated: backslash, tab, newline, CR and NUL
// escaped; arrays as ['a','b']). Both transports bind them
// on the engine side: the server through the protocol's query parameters
// (clickhouse.WithParameters), the embedded engine through SET param_name
// before the statement in the same session call. Values never become SQL text.
// The layers match: clickhouse-go sends each value as a quoted Field dump that
// the server unquotes before parsing the escaped form, as the engine unquotes
// the SET literal (TestServerParameterEncoding, TestParamsBindOnEngine).
type Params map[string]string

// Str binds a String parameter.
func (p Params) Str(name, v string) Params { p[name] = escapeParam(v); return p }

// Time binds a DateTime64(3, 'UTC') parameter (ms precision, UTC).
func (p Params) Time(name string, t time.Time) Params { p[name] = encodeTime(t); return p }

// Int binds an integer parameter.
func (p Params) Int(name string, v int64) Params { p[name] = strconv.FormatInt(v, 10); return p }

// Strs binds an Array(String) parameter: ['a','b'] in ClickHouse's text form.
func (p Params) Strs(name string, vs []string) Params {
	var b strings.Builder
	b.WriteByte('[')
	for i, v := range vs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(controlEscaper.Replace(quoteString(v)))
	}
	b.WriteByte(']')
	p[name] = b.String()
	return p
}

// escapeParam renders a parameter value in the escaped text format the engine
// parses parameters with (as in TabSeparated): backslash, tab, newline,
// carriage return and NUL escaped.
func escapeParam(v string) string {
	if !strings.ContainsAny(v, "\\\t\n\r\x00") {
		return v
	}
	r := strings.NewReplacer(`\`, `\\`, "\t", `\t`, "\n", `\n`, "\r", `\r`, "\x00", `\0`)
	return r.Replace(v)
}

// setParams returns the SET param_<name> statements that bind params in an
// embedded session, in name order.
func setParams(params Params) []string {
	if len(params) == 0 {
		return nil
	}
	names := make([]string, 0, len(params))
	for n := range params {
		names = append(names, n)
	}
	slices.Sort(names)
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "SET param_" + n + " = " + quoteString(params[n])
	}
	return out
}

// controlEscaper escapes the control bytes a quoted string literal may not
// hold raw inside a parameter value.
var controlEscaper = strings.NewReplacer("\t", `\t`, "\n", `\n`, "\r", `\r`)
