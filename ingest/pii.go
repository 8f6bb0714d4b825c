package ingest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"regexp"
	"slices"
	"strings"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// Built-in PII rule names, as stored in metadata["pii_rules"] and counted in Stats.
const (
	PIIEmail = "email"
	PIIPhone = "phone"
	PIIIBAN  = "iban"
	PIICard  = "card"
	PIIIP    = "ip"
)

// MetadataPIIRules is the metadata key under which the names of the rules that
// fired on an exchange are stored, comma-separated and sorted ("card,email").
// The raw values are never stored.
const MetadataPIIRules = "pii_rules"

// PIIConfig sets the pseudonymization applied to every tapped exchange before it is
// queued, stored or sent to any worker.
type PIIConfig struct {
	// Enabled turns pseudonymization on (the default).
	Enabled bool `yaml:"enabled"`
	// SecretEnv names the environment variable holding the HMAC secret. When it is
	// empty or unset, a random secret is drawn at start: tokens are then stable only
	// for the life of the process.
	SecretEnv string `yaml:"secret_env"`
	// Rules are the built-in rules applied: any of email, iban, card,
	// national_id, passport, ip, phone, address, person (all by default).
	Rules []string `yaml:"rules"`
	// Custom are extra patterns, applied before the built-in rules.
	Custom []CustomPIIRule `yaml:"custom"`
}

// CustomPIIRule is one configured pattern: every match of Pattern (RE2 syntax) is
// replaced by <NAME_xxxxxxxxxxxxxxxx>.
type CustomPIIRule struct {
	Name    string `yaml:"name"`    // lower-case letters, digits and _; becomes the token's label
	Pattern string `yaml:"pattern"` // RE2 regular expression
}

// NewDefaultPIIConfig enables every built-in rule (person names and street
// addresses included: see the figures in the README) with the secret in
// $CONDUCTOR_SHADOW_PII_SECRET.
func NewDefaultPIIConfig() PIIConfig {
	return PIIConfig{
		Enabled:   true,
		SecretEnv: "CONDUCTOR_SHADOW_PII_SECRET",
		Rules:     slices.Clone(builtinOrder),
	}
}

var customNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)

// Validate reports unknown rules and custom rules with bad names or patterns.
func (c PIIConfig) Validate() error {
	var errs []error
	for _, r := range c.Rules {
		if _, ok := builtinRules[r]; !ok {
			errs = append(errs, fmt.Errorf("ingest: pii.rules: unknown rule %q (want %s)", r, strings.Join(builtinOrder, ", ")))
		}
	}
	for i, cr := range c.Custom {
		if !customNameRE.MatchString(cr.Name) {
			errs = append(errs, fmt.Errorf("ingest: pii.custom[%d].name %q: want 1-32 lower-case letters, digits or _", i, cr.Name))
		}
		if _, err := regexp.Compile(cr.Pattern); err != nil || cr.Pattern == "" {
			errs = append(errs, fmt.Errorf("ingest: pii.custom[%d].pattern: %v", i, err))
		}
	}
	return errors.Join(errs...)
}

// piiRule finds candidates with re and keeps those check accepts.
type piiRule struct {
	name  string
	label string
	re    *regexp.Regexp
	check func(match string) bool // nil: every match counts
	find  func(s string) [][2]int // when set, finds the values instead of re and check
	hint  string                  // a match holds one of these bytes; text without any is skipped
	// need says whether text with these byte counts can hold a match at all
	// (a necessary condition read off the pattern); nil: any text can.
	need func(c textCounts) bool
}

// textCounts are the byte counts the rules' need conditions read.
type textCounts struct{ digits, upper, dots, colons, dashes int }

// countOutside counts s outside the pseudonyms at tokens (tokenRE's
// matches, in order): no rule looks inside one (apply), and a pseudonym's 16
// hex digits and capital label would otherwise meet the digit and capital
// needs of the card, phone and national-id rules on every text that held an
// e-mail address.
func countOutside(s string, tokens [][]int) textCounts {
	var c textCounts
	last := 0
	for _, t := range tokens {
		c.add(s[last:t[0]])
		last = t[1]
	}
	c.add(s[last:])
	return c
}

func countText(s string) textCounts {
	var c textCounts
	c.add(s)
	return c
}

func (c *textCounts) add(s string) {
	for i := 0; i < len(s); i++ {
		switch b := s[i]; {
		case b >= '0' && b <= '9':
			c.digits++
		case b >= 'A' && b <= 'Z':
			c.upper++
		case b == '.':
			c.dots++
		case b == ':':
			c.colons++
		case b == '-':
			c.dashes++
		}
	}
}

// The built-in patterns find candidates; checksums and parsers decide.
var builtinRules = map[string]piiRule{
	PIIEmail: {name: PIIEmail, label: "EMAIL", re: emailRE, find: findEmails, hint: "@"},
	PIIIBAN: {name: PIIIBAN, label: "IBAN", re: regexp.MustCompile(`\b[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b`), check: ibanValid, hint: digits,
		need: func(c textCounts) bool { return c.digits >= 2 && c.upper >= 2 }},
	PIICard: {name: PIICard, label: "CARD", re: regexp.MustCompile(`\b[0-9](?:[ \-]?[0-9]){12,18}\b`), check: cardValid, hint: digits,
		need: func(c textCounts) bool { return c.digits >= 13 }},
	PIIIP: {name: PIIIP, label: "IP", re: regexp.MustCompile(`\b(?:[0-9]{1,3}\.){3}[0-9]{1,3}\b|(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}`), check: ipValid, hint: ".:",
		need: func(c textCounts) bool { return c.digits >= 4 && c.dots >= 3 || c.colons >= 2 }},
	// A US SSN is 9 digits and 2 dashes, a UK NINO 3 capitals and 6 digits, a
	// Spanish DNI 8 digits and a capital (nationalIDRE).
	PIINationalID: {name: PIINationalID, label: "NATIONAL_ID", re: nationalIDRE, check: nationalIDValid, hint: digits,
		need: func(c textCounts) bool {
			return c.digits >= 9 && c.dashes >= 2 || c.digits >= 6 && c.upper >= 3 || c.digits >= 8 && c.upper >= 1
		}},
	PIIPassport: {name: PIIPassport, label: "PASSPORT", find: findPassports, hint: digits},
	PIIAddress:  {name: PIIAddress, label: "ADDRESS", find: findAddresses, hint: digits},
	PIIPerson:   {name: PIIPerson, label: "PERSON", find: findPersons},
	// phoneValid takes 9 digits at least.
	PIIPhone: {name: PIIPhone, label: "PHONE", re: regexp.MustCompile(`(?:\+[0-9]{1,3}[ .\-]?(?:\([0-9]{1,4}\)[ .\-]?)?|\([0-9]{1,4}\)[ .\-]?|\b)[0-9]{2,4}(?:[ .\-][0-9]{2,4}){1,5}\b|\+[0-9]{8,15}\b`), check: phoneValid, hint: digits,
		need: func(c textCounts) bool { return c.digits >= 9 }},
}

const digits = "0123456789"

var emailRE = regexp.MustCompile(`[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}`)

// findEmails finds what emailRE finds in s, running it only on the run of
// address bytes around each '@' instead of from every byte of s: every byte of
// a match is a local-part byte before its one '@' or a domain byte after it,
// so no match reaches past that run, and runs around different '@'s share no
// '@'.
func findEmails(s string) [][2]int {
	local := func(c byte) bool {
		return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte("._%+-", c) >= 0
	}
	domain := func(c byte) bool {
		return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.'
	}
	var out [][2]int
	from := 0 // matches do not overlap: the next starts at or after the last's end
	for i := from; i < len(s); i++ {
		if s[i] != '@' {
			continue
		}
		l := i
		for l > from && local(s[l-1]) {
			l--
		}
		r := i + 1
		for r < len(s) && domain(s[r]) {
			r++
		}
		if m := emailRE.FindStringIndex(s[l:r]); m != nil {
			out = append(out, [2]int{l + m[0], l + m[1]})
			from = l + m[1]
			i = max(i, from-1)
		}
	}
	return out
}

// builtinOrder applies the checksummed rules before the loose phone pattern, so a
// card, IBAN or SSN is never half-eaten as a phone number, and addresses
// before names, so a street named after a person is one address.
var builtinOrder = []string{PIIEmail, PIIIBAN, PIICard, PIINationalID, PIIPassport, PIIIP, PIIPhone, PIIAddress, PIIPerson}

// ibanValid applies the ISO 13616 mod-97 check.
func ibanValid(s string) bool {
	s = strings.ReplaceAll(s, " ", "")
	if len(s) < 15 || len(s) > 34 {
		return false
	}
	s = s[4:] + s[:4]
	rem := 0
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9':
			rem = (rem*10 + int(r-'0')) % 97
		case r >= 'A' && r <= 'Z':
			rem = (rem*100 + int(r-'A'+10)) % 97
		default:
			return false
		}
	}
	return rem == 1
}

// cardValid accepts 13-19 digits passing the Luhn check.
func cardValid(s string) bool {
	digits := make([]int, 0, 19)
	for _, r := range s {
		if r >= '0' && r <= '9' {
			digits = append(digits, int(r-'0'))
		}
	}
	if len(digits) < 13 || len(digits) > 19 {
		return false
	}
	sum := 0
	for i := range digits {
		d := digits[len(digits)-1-i]
		if i%2 == 1 {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	return sum%10 == 0
}

// ipValid accepts what net/netip parses as an IPv4 or IPv6 address. An IPv6
// candidate needs three colons or a 4-digit first group ("fe80::1"), so that code
// such as "abc::def" or "d::bad" is left alone; loopback and unspecified addresses
// are not personal.
func ipValid(s string) bool {
	a, err := netip.ParseAddr(s)
	if err != nil || a.IsUnspecified() || a.IsLoopback() {
		return false
	}
	if a.Is6() && strings.Count(s, ":") < 3 {
		first, _, _ := strings.Cut(s, ":")
		return len(first) == 4
	}
	return true
}

// isoDateRE marks a date ("2026-11-30 09"), which the phone pattern would see as digits.
var isoDateRE = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}`)

// phoneValid accepts 9-15 digits written with a leading + or with separators
// (E.164 allows at most 15 digits); bare digit runs are too often plain numbers.
func phoneValid(s string) bool {
	if isoDateRE.MatchString(s) {
		return false
	}
	n := 0
	for _, r := range s {
		if r >= '0' && r <= '9' {
			n++
		}
	}
	return n >= 9 && n <= 15
}

// Pseudonymizer replaces PII by stable keyed tokens: <LABEL_x…x>, where x…x is
// the first tokenBytes (8 bytes, 16 hex digits) of HMAC-SHA256(secret, app ‖
// rule ‖ value). 64 bits make a collision between two values of one rule
// unlikely until about 2^32 (4.3 billion) distinct values (the birthday bound).
// The same value gives the same token within an app (tenant) and a different one in
// another app. Safe for concurrent use.
type Pseudonymizer struct {
	secret []byte
	rules  []piiRule
}

// NewPseudonymizer compiles cfg's rules. secret must not be empty.
func NewPseudonymizer(cfg PIIConfig, secret []byte) (*Pseudonymizer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(secret) == 0 {
		return nil, errors.New("ingest: pii: the HMAC secret is empty")
	}
	p := &Pseudonymizer{secret: slices.Clone(secret)}
	for _, cr := range cfg.Custom {
		p.rules = append(p.rules, piiRule{name: cr.Name, label: strings.ToUpper(cr.Name), re: regexp.MustCompile(cr.Pattern)})
	}
	for _, name := range builtinOrder {
		if slices.Contains(cfg.Rules, name) {
			p.rules = append(p.rules, builtinRules[name])
		}
	}
	return p, nil
}

// Token returns the pseudonym of value under rule for app.
func (p *Pseudonymizer) Token(app, rule, label, value string) string {
	mac := hmac.New(sha256.New, p.secret)
	mac.Write([]byte(app))
	mac.Write([]byte{0})
	mac.Write([]byte(rule))
	mac.Write([]byte{0})
	mac.Write([]byte(value))
	return "<" + label + "_" + hex.EncodeToString(mac.Sum(nil)[:tokenBytes]) + ">"
}

// tokenBytes is how much of the HMAC a pseudonym keeps: 64 bits.
const tokenBytes = 8

// tokenRE matches a pseudonym: text already pseudonymized is left as it is.
var tokenRE = regexp.MustCompile(`<[A-Z][A-Z0-9_]{0,31}_[0-9a-f]{16}>`)

// Text pseudonymizes s for app and adds to fired how many values each rule
// replaced. Pseudonyms already in s are kept as they are (no rule looks
// inside one), so applying Text twice changes nothing more.
func (p *Pseudonymizer) Text(app, s string, fired map[string]int) string {
	if s == "" {
		return s
	}
	counted, tokenized := "", ""
	var counts textCounts
	var tokens [][]int
	for _, r := range p.rules {
		if r.hint != "" && !strings.ContainsAny(s, r.hint) {
			continue
		}
		if tokenized != s { // found again after a rule changed the text
			tokenized, tokens = s, nil
			if strings.IndexByte(s, '<') >= 0 {
				tokens = tokenRE.FindAllStringIndex(s, -1)
			}
		}
		if r.need != nil {
			if counted != s { // recounted after a rule changed the text
				counted, counts = s, countOutside(s, tokens)
			}
			if !r.need(counts) {
				continue
			}
		}
		s = p.apply(app, r, s, tokens, fired)
	}
	return s
}

// apply replaces what rule r finds in s, outside the pseudonyms s holds
// (tokens: where tokenRE finds them in s).
func (p *Pseudonymizer) apply(app string, r piiRule, s string, tokens [][]int, fired map[string]int) string {
	var b strings.Builder
	last, changed := 0, false
	segment := func(from, to int) {
		seg := s[from:to]
		at := 0
		for _, sp := range r.spans(seg) {
			b.WriteString(seg[at:sp[0]])
			b.WriteString(p.Token(app, r.name, r.label, normalizePII(r.name, seg[sp[0]:sp[1]])))
			fired[r.name]++
			at, changed = sp[1], true
		}
		b.WriteString(seg[at:])
	}
	for _, t := range tokens {
		segment(last, t[0])
		b.WriteString(s[t[0]:t[1]])
		last = t[1]
	}
	segment(last, len(s))
	if !changed {
		return s
	}
	return b.String()
}

// spans returns where r finds values in s, in order, not overlapping.
func (r piiRule) spans(s string) [][2]int {
	if r.find != nil {
		return r.find(s)
	}
	var out [][2]int
	for _, m := range r.re.FindAllStringIndex(s, -1) {
		if r.check == nil || r.check(s[m[0]:m[1]]) {
			out = append(out, [2]int{m[0], m[1]})
		}
	}
	return out
}

// normalizePII makes differently written forms of one value give one token.
func normalizePII(rule, m string) string {
	switch rule {
	case PIIEmail:
		return strings.ToLower(m)
	case PIIIBAN:
		return strings.ReplaceAll(m, " ", "")
	case PIIPerson, PIIAddress:
		return strings.ToLower(strings.Join(strings.Fields(m), " "))
	case PIICard, PIIPhone, PIINationalID, PIIPassport:
		var b strings.Builder
		for _, r := range m {
			if (r >= '0' && r <= '9') || r == '+' || (r >= 'A' && r <= 'Z') {
				b.WriteRune(r)
			}
		}
		return b.String()
	}
	return m
}

// Exchange pseudonymizes, in place, every text of ex that is queued, stored or
// sent to a worker: the fields textFields lists (messages, answer, reasoning,
// choices, tool calls, error, headers, metadata keys and values, ids). Tokens
// are keyed by the app as sent. It records the rules that fired in
// ex.Metadata[MetadataPIIRules] and returns the count of replacements per rule.
func (p *Pseudonymizer) Exchange(ex *Exchange) map[string]int {
	fired := map[string]int{}
	if _, claimed := ex.Metadata[MetadataPIIRules]; claimed {
		md := maps.Clone(ex.Metadata) // a producer cannot claim which rules fired
		delete(md, MetadataPIIRules)
		ex.Metadata = md
	}
	textFields(ex, nil, pseudonymizeVisitor{p: p, app: ex.App, fired: fired})
	if len(fired) > 0 {
		md := make(map[string]string, len(ex.Metadata)+1)
		maps.Copy(md, ex.Metadata)
		md[MetadataPIIRules] = strings.Join(slices.Sorted(maps.Keys(fired)), ",")
		ex.Metadata = md
	}
	return fired
}

// Records pseudonymizes, in place, every text of the records a candidate run
// wrote for a request of app (runs, steps, scores: see textFields), since a
// worker's answer can echo or invent personal data. Text pseudonymized before
// is left as it is (tokens are never replaced again). It returns the count of
// replacements per rule.
func (p *Pseudonymizer) Records(app string, b *store.Batch) map[string]int {
	fired := map[string]int{}
	textFields(nil, b, pseudonymizeVisitor{p: p, app: app, fired: fired})
	return fired
}
