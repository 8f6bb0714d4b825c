package eval

import (
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
)

// RelTolerance is the relative tolerance used only between a decimal and a
// fraction (e.g. 4.666666666666667 against 14/3): |a-b| <= RelTolerance·max(|a|,|b|).
// Integers, fractions and decimals written out are otherwise compared exactly, so
// no tolerance ever makes two different integers or fractions equal.
const RelTolerance = 1e-6

// number is a value read from text: its exact rational value and the form it was
// written in.
type number struct {
	exact *big.Rat
	// frac: written as a fraction (a/b, \frac{a}{b}); its decimal expansion may
	// not terminate.
	frac bool
	// decimal: written with a decimal point.
	decimal bool
}

func (n number) float() float64 { f, _ := n.exact.Float64(); return f }

func (n number) String() string {
	if n.exact.IsInt() {
		return n.exact.Num().String()
	}
	if n.frac {
		return n.exact.RatString()
	}
	return strconv.FormatFloat(n.float(), 'g', -1, 64)
}

// numbersEqual is the one definition of "the same number" used by the numeric
// and math graders: exact equality of the rational values, except that a
// decimal and a fraction whose expansion it rounds may differ by RelTolerance.
func numbersEqual(a, b number) bool {
	if a.exact.Cmp(b.exact) == 0 {
		return true
	}
	if (a.frac && b.decimal && !b.frac) || (b.frac && a.decimal && !a.frac) {
		x, y := a.float(), b.float()
		return math.Abs(x-y) <= RelTolerance*math.Max(math.Abs(x), math.Abs(y))
	}
	return false
}

// parseNumber reads a whole token as a number: an integer or decimal (optional
// sign), or a/b of those (optionally parenthesised).
func parseNumber(s string) (number, bool) {
	s = strings.TrimSpace(s)
	neg := false
	if strings.HasPrefix(s, "-") {
		neg, s = true, s[1:]
	} else if strings.HasPrefix(s, "+") {
		s = s[1:]
	}
	unparen := func(x string) string {
		if len(x) >= 2 && x[0] == '(' && x[len(x)-1] == ')' {
			return x[1 : len(x)-1]
		}
		return x
	}
	s = unparen(s)
	var n number
	if a, b, ok := strings.Cut(s, "/"); ok {
		num, ok1 := decimalRat(unparen(a))
		den, ok2 := decimalRat(unparen(b))
		if !ok1 || !ok2 || den.Sign() == 0 {
			return number{}, false
		}
		n = number{exact: new(big.Rat).Quo(num, den), frac: true}
	} else {
		r, ok := decimalRat(s)
		if !ok {
			return number{}, false
		}
		n = number{exact: r, decimal: strings.Contains(s, ".")}
	}
	if neg {
		n.exact.Neg(n.exact)
	}
	return n, true
}

var plainDecimalRe = regexp.MustCompile(`^(?:\d+(?:\.\d*)?|\.\d+)$`)

// decimalRat parses an unsigned plain decimal exactly.
func decimalRat(s string) (*big.Rat, bool) {
	if !plainDecimalRe.MatchString(s) || len(s) > 200 {
		return nil, false
	}
	r, ok := new(big.Rat).SetString(strings.TrimSuffix(s, "."))
	return r, ok
}

// Dashes read as a minus sign or hyphen: U+2010 hyphen, U+2011, U+2012 figure
// dash, U+2013 en dash, U+2014 em dash, U+2015, U+2212 minus, U+FE58, U+FE63
// small hyphen-minus, U+FF0D fullwidth hyphen-minus.
var dashes = []string{"\u2010", "\u2011", "\u2012", "\u2013", "\u2014", "\u2015", "\u2212", "\uFE58", "\uFE63", "\uFF0D"}

// normalizeDashes rewrites every dash of dashes as "-".
func normalizeDashes(s string) string {
	if !strings.ContainsAny(s, strings.Join(dashes, "")) {
		return s
	}
	args := make([]string, 0, 2*len(dashes))
	for _, d := range dashes {
		args = append(args, d, "-")
	}
	return strings.NewReplacer(args...).Replace(s)
}

// groupSep matches one thousands separator between digit groups: a comma,
// LaTeX spacing (\, \; \: \! "\ " {,}), a thin, narrow no-break or no-break
// space (U+2009, U+202F, U+00A0), or an apostrophe (' or U+2019, as in 1'234'567).
const groupSep = `(?:,|\{,\}|\\[,;:! ]|\x{2009}|\x{202F}|\x{00A0}|'|\x{2019})`

var groupedRe = regexp.MustCompile(`\d+(?:` + groupSep + `\d{3})+`)
var groupSepRe = regexp.MustCompile(groupSep)

// joinDigitGroups removes thousands separators from numbers written in groups
// of three ("1\;234\;567", "1 234 567" with thin spaces, "70{,}000"): a run
// qualifies when its first group has 1–3 digits, every later group exactly 3,
// and no digit follows it.
func joinDigitGroups(s string) string {
	locs := groupedRe.FindAllStringIndex(s, -1)
	if locs == nil {
		return s
	}
	var b strings.Builder
	prev := 0
	for _, loc := range locs {
		m := s[loc[0]:loc[1]]
		groups := groupSepRe.Split(m, -1)
		ok := len(groups[0]) <= 3 && (loc[1] == len(s) || s[loc[1]] < '0' || s[loc[1]] > '9')
		for _, g := range groups[1:] {
			ok = ok && len(g) == 3
		}
		b.WriteString(s[prev:loc[0]])
		if ok {
			b.WriteString(strings.Join(groups, ""))
		} else {
			b.WriteString(m)
		}
		prev = loc[1]
	}
	b.WriteString(s[prev:])
	return b.String()
}
