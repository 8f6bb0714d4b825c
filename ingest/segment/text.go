package segment

import (
	"regexp"
	"strings"
	"unicode"
)

// codeLine matches a line that starts like source code in the common
// languages of chat traffic (C family, Python, JS/TS, Go, Java, SQL, R, HTML).
var codeLine = regexp.MustCompile(`^\s*(#include\b|#define\b|#!|import\s|from\s+\S+\s+import\b|def\s|class\s|public\s|private\s|protected\s|static\s|return\b|using\s|package\s|func\s|var\s|let\s|const\s|function\b|for\s*\(|if\s*\(|while\s*\(|switch\s*\(|\}|\{|//|/\*|\*/|<[a-zA-Z/!][^>]*>|(?i:select|insert|update|delete|create|declare)\s.*(?i:from|into|set|table|@)|[A-Za-z_][\w.\[\]"']*\s*(=|\+=|-=|<-|:=)\s*\S)`)

// codeEnding matches a line that ends like a statement or block of code
// (endsLikeCode is what it matches, without trying every byte of the line).
var codeEnding = regexp.MustCompile(`(;|\{|\}|\)\s*:|=>)\s*$`)

// reSpace is what \s matches in codeEnding (RE2's Perl class).
const reSpace = " \t\n\f\r"

// endsLikeCode reports what codeEnding.MatchString reports: after trailing
// space, a ';', '{', '}', "=>", or a ':' after a ')' and space.
func endsLikeCode(t string) bool {
	u := strings.TrimRight(t, reSpace)
	if u == "" {
		return false
	}
	switch u[len(u)-1] {
	case ';', '{', '}':
		return true
	case '>':
		return strings.HasSuffix(u, "=>")
	case ':':
		return strings.HasSuffix(strings.TrimRight(u[:len(u)-1], reSpace), ")")
	}
	return false
}

// symbolDense reports a line with at least one code symbol per ten letters
// (and at least two): prose rarely has that many brackets, '=', ';' or '_'.
func symbolDense(t string) bool {
	sym, let := 0, 0
	for _, r := range t {
		switch {
		case unicode.IsLetter(r):
			let++
		case strings.ContainsRune("{}[]()<>=;_#/\\*|$&^~`", r):
			sym++
		}
	}
	return sym >= 2 && sym*10 >= let
}

// isCodeLine reports whether one line reads as code.
func isCodeLine(line string) bool {
	t := strings.TrimSpace(line)
	if t == "" {
		return false
	}
	return codeLine.MatchString(line) || endsLikeCode(t) || symbolDense(t)
}

// prose returns text without fenced blocks and code lines; the non-Latin
// letters of code lines (comments in the writer's language) are kept.
func prose(text string) string {
	var b strings.Builder
	fenced := false
	for _, ln := range strings.Split(text, "\n") {
		t := strings.TrimSpace(ln)
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fenced = !fenced
			continue
		}
		if fenced || isCodeLine(ln) || isTableRow(t) {
			if nl := nonLatin(ln); nl != "" {
				b.WriteString(nl)
				b.WriteByte('\n')
			}
			continue
		}
		b.WriteString(ln)
		b.WriteByte('\n')
	}
	return b.String()
}

// nonLatin keeps the letters of scripts other than Latin, runs separated by
// one space.
func nonLatin(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsLetter(r) && r > 0x2FF && !unicode.Is(unicode.Latin, r) || unicode.IsSpace(r) {
			b.WriteRune(r)
		} else {
			b.WriteByte(' ')
		}
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// wide reports a character of a script written without spaces between words
// (Han, kana, Hangul, Thai), which carries about a word's worth of text.
func wide(r rune) bool {
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r) ||
		unicode.Is(unicode.Hangul, r) || unicode.Is(unicode.Thai, r)
}

// focus returns only the non-Latin text of p when non-Latin letters carry
// at least a fifth of p's letters (a wide character weighs three) and at
// least six weighted letters; otherwise p.
func focus(p string) string {
	lat, other := 0, 0
	for _, r := range p {
		switch {
		case !unicode.IsLetter(r):
		case unicode.Is(unicode.Latin, r):
			lat++
		case wide(r):
			other += 3
		default:
			other++
		}
	}
	if other >= 6 && other*4 >= lat {
		return nonLatin(p)
	}
	return p
}

func letters(s string) int {
	n := 0
	for _, r := range s {
		if unicode.IsLetter(r) {
			n++
		}
	}
	return n
}

// HasCode reports a fenced code block or at least three lines that start or
// end like code (codeLine, codeEnding). Symbol density alone does not count
// here: LaTeX, Markdown headings and lyrics' [Verse] tags are dense too.
func HasCode(text string) bool {
	n := 0
	for _, ln := range strings.Split(text, "\n") {
		t := strings.TrimSpace(ln)
		if strings.HasPrefix(t, "```") {
			return true
		}
		if isTableRow(t) {
			continue
		}
		if codeLine.MatchString(ln) || endsLikeCode(t) {
			if n++; n >= 3 {
				return true
			}
		}
	}
	return false
}

// mdSeparator is a Markdown table's header separator row: |---|:--:|.
var mdSeparator = regexp.MustCompile(`^\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)+\|?$`)

// isTableRow reports a Markdown table row: starts and ends with '|' and has
// at least two cells.
func isTableRow(t string) bool {
	return len(t) >= 3 && t[0] == '|' && t[len(t)-1] == '|' && strings.Count(t, "|") >= 3
}

// HasTable reports a Markdown table (a header separator row next to a row
// with cells, or three consecutive |-delimited rows) or at least three
// consecutive delimited rows with the same number (≥ 1 tab, or ≥ 2 commas or
// semicolons) of delimiters and no code symbols.
func HasTable(text string) bool {
	lines := strings.Split(text, "\n")
	mdRun := 0
	var runDelim rune
	runCount, runLen := 0, 0
	for i, ln := range lines {
		t := strings.TrimSpace(ln)
		if mdSeparator.MatchString(t) && strings.Contains(t, "|") {
			if i > 0 && strings.Count(lines[i-1], "|") >= 1 {
				return true
			}
		}
		if isTableRow(t) {
			if mdRun++; mdRun >= 3 {
				return true
			}
		} else {
			mdRun = 0
		}
		d, c := delimited(t)
		if d != 0 && d == runDelim && c == runCount {
			if runLen++; runLen >= 3 {
				return true
			}
		} else {
			runDelim, runCount, runLen = d, c, 1
			if d == 0 {
				runLen = 0
			}
		}
	}
	return false
}

// delimited returns the delimiter of a TSV/CSV-like row and how many times
// it occurs, or 0 when t is not such a row.
func delimited(t string) (rune, int) {
	if t == "" || strings.ContainsAny(t, "(){}=<>") {
		return 0, 0
	}
	if n := strings.Count(t, "\t"); n >= 1 {
		return '\t', n
	}
	if n := strings.Count(t, ","); n >= 2 {
		return ',', n
	}
	if n := strings.Count(t, ";"); n >= 2 && !strings.HasSuffix(t, ";") {
		return ';', n
	}
	return 0, 0
}
