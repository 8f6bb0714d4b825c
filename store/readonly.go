package store

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// readKeywords are the statement kinds Query accepts: the first keyword of the statement.
var readKeywords = map[string]bool{
	"SELECT": true, "WITH": true, "SHOW": true, "DESCRIBE": true, "DESC": true, "EXPLAIN": true,
}

// CheckReadOnly reports whether sql is exactly one read-only statement by our
// own lexer: its first keyword is SELECT, WITH, SHOW, DESCRIBE (DESC) or
// EXPLAIN, it holds no second statement after a ';', and no INTO OUTFILE,
// FORMAT or SETTINGS clause (the store picks the output format and sets the
// settings itself). It returns an error wrapping ErrReadOnly otherwise, or a
// plain error for empty or unterminated text. Comments and quoted text
// ('…', "…", `…`, $$…$$, $tag$…$tag$, with \ and doubled-quote escapes) are
// skipped, so "SELECT ';'" is one statement. This is the console's first and
// second line only: Store.Query also has the engine parse the statement (see
// console.go).
func CheckReadOnly(sql string) error {
	toks, err := lexSQL(sql)
	if err != nil {
		return fmt.Errorf("store: query: %w", err)
	}
	// Drop trailing semicolons; any other ';' means a second statement.
	for len(toks) > 0 && toks[len(toks)-1].text == ";" {
		toks = toks[:len(toks)-1]
	}
	if len(toks) == 0 {
		return fmt.Errorf("store: query: empty statement")
	}
	first := toks[0]
	// A read may start with parentheses: (SELECT 1) UNION ALL (SELECT 2).
	for i := 0; i < len(toks) && toks[i].text == "("; i++ {
		if i+1 < len(toks) {
			first = toks[i+1]
		}
	}
	if first.kind != tokWord || !readKeywords[strings.ToUpper(first.text)] {
		return fmt.Errorf("%w: %q is not a read statement", ErrReadOnly, first.text)
	}
	for i, t := range toks {
		if t.text == ";" {
			return fmt.Errorf("%w: only one statement is allowed", ErrReadOnly)
		}
		if t.kind != tokWord || i > 0 && toks[i-1].text == "." {
			continue // not a keyword (quoted, or a name qualified by a dot)
		}
		up := strings.ToUpper(t.text)
		next := ""
		if i+1 < len(toks) {
			next = toks[i+1].text
		}
		switch {
		case up == "INTO" && strings.EqualFold(next, "OUTFILE"):
			return fmt.Errorf("%w: INTO OUTFILE is not allowed", ErrReadOnly)
		case up == "FORMAT" && next != "(" && next != "":
			return fmt.Errorf("%w: a FORMAT clause is not allowed; rows are returned as text", ErrReadOnly)
		case up == "SETTINGS" && next != "(" && next != "":
			return fmt.Errorf("%w: a SETTINGS clause is not allowed; the store sets them", ErrReadOnly)
		}
	}
	return nil
}

// queryLimits bound an ad-hoc query; zero fields set nothing.
type queryLimits struct {
	timeout      time.Duration // max_execution_time, seconds with ms precision
	maxRows      int           // max_result_rows
	maxRowsRead  int64         // max_rows_to_read
	maxBytesRead int64         // max_bytes_to_read, uncompressed bytes
	maxMemory    int64         // max_memory_usage, bytes
	// unbounded leaves out consoleWorkLimits (tests only, with
	// consoleGuard.unchecked: the worker's time limit alone must hold).
	unbounded bool
}

// consoleWorkLimits bound the work of a console statement beyond time, rows
// read and memory: the size of its syntax tree (the same limits
// checkTreeSize checks in Go), the right side of a join, an IN set, DISTINCT
// and GROUP BY keys (each 10^7 rows, then the statement fails), its result
// (64 MiB), subquery and recursive CTE depth, the elements range() may make
// per block (10^6) and sleep (none). The engine checks them as it goes, so a
// statement that reaches one fails with the engine's limit error.
var consoleWorkLimits = fmt.Sprintf("max_ast_elements = %d, max_expanded_ast_elements = %d, max_ast_depth = %d, "+
	"max_subquery_depth = 20, max_recursive_cte_evaluation_depth = 100, "+
	"max_rows_in_join = 10000000, join_overflow_mode = 'throw', max_rows_in_set = 10000000, set_overflow_mode = 'throw', "+
	"max_rows_in_distinct = 10000000, distinct_overflow_mode = 'throw', max_rows_to_group_by = 10000000, group_by_overflow_mode = 'throw', "+
	"max_result_bytes = 67108864, function_range_max_elements_in_block = 1000000, function_sleep_max_microseconds_per_block = 0, ",
	consoleMaxASTElements, consoleMaxExpandedASTElements, consoleMaxASTDepth)

// settings renders the limits as "name = value, " pairs. They come before
// readonly = 1, which forbids changing settings after it.
func (l queryLimits) settings() string {
	var b strings.Builder
	if ms := l.timeout.Milliseconds(); ms > 0 {
		// Whole seconds render as an integer (every server version takes
		// it); fractions as a decimal (the engine's Seconds setting).
		fmt.Fprintf(&b, "max_execution_time = %s, timeout_overflow_mode = 'throw', ", strconv.FormatFloat(float64(ms)/1000, 'f', -1, 64))
	}
	if l.maxRows > 0 {
		fmt.Fprintf(&b, "max_result_rows = %d, result_overflow_mode = 'throw', ", l.maxRows)
	}
	if l.maxRowsRead > 0 {
		fmt.Fprintf(&b, "max_rows_to_read = %d, ", l.maxRowsRead)
	}
	if l.maxBytesRead > 0 {
		fmt.Fprintf(&b, "max_bytes_to_read = %d, ", l.maxBytesRead)
	}
	if l.maxRowsRead > 0 || l.maxBytesRead > 0 {
		b.WriteString("read_overflow_mode = 'throw', ")
	}
	if l.maxMemory > 0 {
		fmt.Fprintf(&b, "max_memory_usage = %d, ", l.maxMemory)
	}
	if !l.unbounded {
		b.WriteString(consoleWorkLimits)
	}
	b.WriteString("allow_ddl = 0, allow_introspection_functions = 0, ")
	return b.String()
}

type tokKind int

const (
	tokWord tokKind = iota
	tokString
	tokQuotedIdent
	tokPunct
)

type sqlToken struct {
	kind tokKind
	text string
	pos  int // byte offset in the statement
}

// lexSQL splits sql into words, quoted literals and punctuation, skipping
// whitespace and comments (-- …, # …, /* … */).
func lexSQL(sql string) ([]sqlToken, error) {
	var toks []sqlToken
	i := 0
	for i < len(sql) {
		c := sql[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '-' && i+1 < len(sql) && sql[i+1] == '-', c == '#':
			for i < len(sql) && sql[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(sql) && sql[i+1] == '*':
			end := strings.Index(sql[i+2:], "*/")
			if end < 0 {
				return nil, fmt.Errorf("unterminated comment")
			}
			i += 2 + end + 2
		case c == '$' && heredocTag(sql[i:]) != "":
			tag := heredocTag(sql[i:])
			end := strings.Index(sql[i+len(tag):], tag)
			if end < 0 {
				return nil, fmt.Errorf("unterminated %s string", tag)
			}
			j := i + len(tag) + end + len(tag)
			toks = append(toks, sqlToken{kind: tokString, text: sql[i:j], pos: i})
			i = j
		case c == '\'' || c == '"' || c == '`':
			j := i + 1
			for ; j < len(sql); j++ {
				if sql[j] == '\\' {
					j++
					continue
				}
				if sql[j] == c {
					if j+1 < len(sql) && sql[j+1] == c { // doubled quote
						j++
						continue
					}
					break
				}
			}
			if j >= len(sql) {
				return nil, fmt.Errorf("unterminated quoted text")
			}
			kind := tokString
			if c != '\'' {
				kind = tokQuotedIdent
			}
			toks = append(toks, sqlToken{kind: kind, text: sql[i : j+1], pos: i})
			i = j + 1
		case isWordByte(c):
			j := i
			for j < len(sql) && isWordByte(sql[j]) {
				j++
			}
			toks = append(toks, sqlToken{kind: tokWord, text: sql[i:j], pos: i})
			i = j
		default:
			toks = append(toks, sqlToken{kind: tokPunct, text: sql[i : i+1], pos: i})
			i++
		}
	}
	return toks, nil
}

// heredocTag returns the opening delimiter of a heredoc string ($$ or $name$)
// at the start of s, or "".
func heredocTag(s string) string {
	for j := 1; j < len(s); j++ {
		c := s[j]
		if c == '$' {
			return s[:j+1]
		}
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return ""
		}
	}
	return ""
}

func isWordByte(c byte) bool {
	return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}
