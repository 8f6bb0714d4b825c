package ingest

import (
	"cmp"
	_ "embed"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Rule names of the gazetteer and shape rules (see piidata/SOURCES.md).
const (
	PIIPerson     = "person"      // person names: gazetteer pairs, titles and cues
	PIIAddress    = "address"     // street addresses: number + street name + street type, in several countries' shapes
	PIIPassport   = "passport"    // a passport number after a cue word
	PIINationalID = "national_id" // US SSN, UK NINO, Spanish DNI (with their checks)
)

// The word lists the person rule looks words up in (piidata/SOURCES.md):
// given names of English-speaking countries (Moby, public domain), name parts
// of many cultures (cspell's people-names, MIT) and common English words
// (SCOWL size 35, lower case).
var (
	//go:embed piidata/given_names.txt
	givenNamesTxt string
	//go:embed piidata/name_parts.txt
	namePartsTxt string
	//go:embed piidata/common_words.txt
	commonWordsTxt string
)

// nameLists are the gazetteers, read once (a few ms) by the first person rule.
type nameLists struct {
	given, parts, common map[string]bool
}

// ambiguous reports whether w, a name, is also a common word ("Rose", "Mark").
func (n *nameLists) ambiguous(w string) bool {
	w = strings.ToLower(w)
	a, b, ok := strings.Cut(w, "-")
	return n.common[w] || (ok && (n.common[a] || n.common[b]))
}

// part reports whether w is a known name part; a hyphenated one
// ("Reyes-Ortiz") when each half is.
func (n *nameLists) part(w string) bool {
	if n.parts[w] || n.given[w] {
		return true
	}
	a, b, ok := strings.Cut(w, "-")
	return ok && (n.parts[a] || n.given[a]) && (n.parts[b] || n.given[b])
}

// unknown reports whether w is in no list at all: a rare surname
// ("Raghunathan", "Westenra") rather than a word.
func (n *nameLists) unknown(w string) bool {
	return !n.part(w) && !n.common[strings.ToLower(w)] && !nameStop[w]
}

var loadNames = sync.OnceValue(func() *nameLists {
	set := func(txt string) map[string]bool {
		m := make(map[string]bool, strings.Count(txt, "\n"))
		for _, l := range strings.Split(txt, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				m[l] = true
			}
		}
		return m
	}
	return &nameLists{given: set(givenNamesTxt), parts: set(namePartsTxt), common: set(commonWordsTxt)}
})

// nameTokenRE is one capitalized word that can be part of a name ("Smith",
// "O'Brien", "McDonald", "Jean-Luc", "Łukasz") or an initial ("J.").
var nameTokenRE = regexp.MustCompile(nameTokenPattern)

const nameTokenPattern = `(?:\p{Lu}['’])?\p{Lu}\p{Ll}+(?:\p{Lu}\p{Ll}+)?(?:-\p{Lu}\p{Ll}+)?|\p{Lu}\.`

// nameTokenAtRE is nameTokenRE anchored where it is tried.
var nameTokenAtRE = regexp.MustCompile(`^(?:` + nameTokenPattern + `)`)

// nameTokens returns what nameTokenRE.FindAllStringIndex(s, -1) returns,
// trying the pattern only at capital letters, where every match of it
// starts (the pattern looks at nothing before its match), instead of at
// every byte of s.
func nameTokens(s string) [][]int {
	var out [][]int
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !unicode.IsUpper(r) {
			i += n
			continue
		}
		if m := nameTokenAtRE.FindStringIndex(s[i:]); m != nil {
			out = append(out, []int{i + m[0], i + m[1]})
			i += m[1]
			continue
		}
		i += n
	}
	return out
}

// nameStop are capitalized words never taken as part of a name: months, days,
// function words that start sentences, places and organisations' heads.
var nameStop = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`January February March April May June July August September October November December
		Monday Tuesday Wednesday Thursday Friday Saturday Sunday The A An I In On At Of And Or For To With By From Is It If As But So
		This That These Those There Then When Where What Who Why How Mr Mrs Ms Miss Dr Prof Sir Street Avenue Road Lane Drive Court
		Place Boulevard Way Square University College School Inc Ltd Corp Company Group Bank Park River Lake Mount City County State
		Island Hospital Church Hotel Museum Center Centre Library Institute Foundation Association Society Department Ministry
		Bridge Tower Airport Station North South East West New Old Saint San Santa Christmas Easter God Lord Jesus Christ Bible
		English French German Spanish Italian Chinese Japanese Russian American British European African Asian Indian Python
		Java Rust Go Ruby Swift Excel Windows Linux Apple Google Amazon Microsoft Tesla Android São Los Las El La Le Port Fort
		Pond Bay Beach Valley Falls Springs Creek Harbor Harbour Point Forest Canyon Desert Ocean Sea Gulf Hills`) {
		m[w] = true
	}
	return m
}()

// namePlaces are given names and name parts that are more often places:
// none starts a name unless a title or a cue says so ("Canada India").
var namePlaces = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`Virginia Georgia Carolina Florida Indiana Montana Nevada Dakota Washington Jordan Chad Israel
		Austin Dallas Houston Denver Phoenix Orlando Sydney Paris London Florence Victoria Adelaide Charlotte Eugene Troy Lincoln
		Madison Jackson Chelsea Kent Devon Shannon Aurora Asia Africa America India China Kenya Ireland Holland Berlin Vienna
		Canada Mexico Brazil Peru Chile Cuba Egypt Japan Korea Russia Germany France Spain Italy Greece Turkey Iran Iraq`) {
		m[w] = true
	}
	return m
}()

// nameTitles are titles inside a run of capitalized words ("Aunt Polly").
var nameTitles = map[string]bool{"Mr": true, "Mrs": true, "Ms": true, "Dr": true, "Prof": true, "Sir": true, "Dame": true,
	"Lord": true, "Lady": true, "Aunt": true, "Uncle": true, "Squire": true, "Captain": true, "Colonel": true, "Professor": true}

// nameTitleRE ends at a title before a name ("Dr. ", "Mrs ", "Herr ").
var nameTitleRE = regexp.MustCompile(`(?:^|[^\p{L}])(?:Mr|Mrs|Ms|Miss|Mx|Dr|Prof|Professor|Doctor|Sir|Dame|Lord|Lady|Aunt|Uncle|Squire|Captain|Capt|Colonel|Col|Sergeant|Sgt|Rev|Reverend|Herr|Frau|Mme|Mlle|Sr|Sra|Srta|Señor|Señora|Signor|Signora|Dott)\.? $`)

// nameCueRE ends at words after which a single capitalized name-like word
// is a name: "my name is", "call me", "Dear", "Regards,", "patient", ...
// (any case).
var nameCueRE = regexp.MustCompile(`(?i)(?:^|[^\p{L}])(?:my name is|my name's|name\s*:|full name\s*:?|named|called|call me|dear|regards,?|sincerely,?|signed,?|from\s*:|attn\.?:?|c/o|patient|customer|client|employee|applicant|tenant|contact)\s*\n?$`)

// nameVerbRE ends at words after which two or three name-like words are a
// name ("wrote Priya Raghunathan", "I am Olga Petrova"), but one is not: in
// word problems "said Amy" or "told James" is common and pseudonymizing it
// would change what a candidate reads.
var nameVerbRE = regexp.MustCompile(`(?i)(?:^|[^\p{L}])(?:said|says|asked|told|wrote|replied|cried|thought|answered|signed by|i am|i'm|this is)\s*$`)

// calledRE are the cues "named" and "called", which name things as often as
// people ("a group called Troika"): one word after them must be a given name.
var calledRE = regexp.MustCompile(`(?i)(?:named|called)\s*$`)

// nameCueAnyRE are the cues after which any capitalized word is a name.
var nameCueAnyRE = regexp.MustCompile(`(?i)(?:my name is|my name's|name\s*:|full name\s*:?|named|called|call me)\s*$`)

type nameToken struct {
	start, end int
	word       string
	initial    bool
}

// findPersons returns the spans of person names in s, looking at each run of
// capitalized words: a known given name followed by up to two initials or
// name parts and a known name part ("Mary Ann Smith", "John F. Kennedy") or
// a word in no list ("Basil Hallward"), unless both ends are also common
// words ("Will Power", "May Day"); two name parts that are no words ("Kwame
// Mensah"); up to three words after a title ("Dr. Pankaj Harkut", "Aunt
// Polly") or a cue ("my name is Ryan", "Dear Olga,"); two or three after a
// verb of speech ("wrote Priya Raghunathan"). A title is not part of the span.
func findPersons(s string) [][2]int {
	if !hasUpper(s) {
		return nil
	}
	names := loadNames()
	var spans [][2]int
	toks := nameTokens(s)
	for i := 0; i < len(toks); {
		// A group: tokens separated by one space (or none after an initial's dot).
		group := []nameToken{tokenAt(s, toks[i])}
		j := i + 1
		for ; j < len(toks); j++ {
			gap := s[toks[j-1][1]:toks[j][0]]
			if gap != " " && !(gap == "" && group[len(group)-1].initial) {
				break
			}
			group = append(group, tokenAt(s, toks[j]))
		}
		i = j
		if !wordStart(s, group[0].start) || !wordEnd(s, group[len(group)-1].end) {
			continue // inside a longer word: "iPhone", "McKinsey&Co"
		}
		spans = append(spans, personSpans(s, group, names)...)
	}
	return spans
}

func tokenAt(s string, loc []int) nameToken {
	w := s[loc[0]:loc[1]]
	return nameToken{start: loc[0], end: loc[1], word: w, initial: strings.HasSuffix(w, ".")}
}

// personSpans finds the names in one group of capitalized words.
func personSpans(s string, g []nameToken, names *nameLists) [][2]int {
	if len(g) == 0 {
		return nil
	}
	before := s[:g[0].start]
	if len(before) > 40 {
		before = before[len(before)-40:]
	}
	usable := func(t nameToken) bool { return !t.initial && !nameStop[t.word] }
	// After a title or a cue: the group (at most three words) is a name.
	title, cue, verb := nameTitleRE.MatchString(before), nameCueRE.MatchString(before), nameVerbRE.MatchString(before)
	if title || cue || verb {
		n := 0
		for n < len(g) && n < 3 && (usable(g[n]) || (n > 0 && g[n].initial)) {
			n++
		}
		for n > 0 && g[n-1].initial {
			n--
		}
		nameLike := func(t nameToken) bool {
			return t.initial || ((names.part(t.word) || names.unknown(t.word)) && !names.ambiguous(t.word) && !namePlaces[t.word])
		}
		switch {
		case n == 0:
		case !title && n == 1 && calledRE.MatchString(before) && !names.given[g[0].word]:
		case title, cue && nameCueAnyRE.MatchString(before),
			cue && nameLike(g[0]) && nameLike(g[n-1]),
			verb && n > 1 && nameLike(g[0]) && nameLike(g[n-1]):
			return append([][2]int{{g[0].start, g[n-1].end}}, personSpans(s, g[n:], names)...)
		}
	}
	for k := 0; k+1 < len(g); k++ { // "Aunt Polly", "Lord Henry Wotton" inside a run
		if nameTitles[g[k].word] && usable(g[k+1]) {
			n := k + 1
			for n+1 < len(g) && n+1 < k+4 && usable(g[n+1]) {
				n++
			}
			spans := append(personSpans(s, g[:k], names), [2]int{g[k+1].start, g[n].end})
			return append(spans, personSpans(s, g[n+1:], names)...)
		}
	}
	var spans [][2]int
	for i := 0; i < len(g); i++ {
		first := g[i].word
		if !usable(g[i]) || namePlaces[first] || !(names.part(first) || (names.unknown(first) && !strings.Contains(first, "-"))) {
			continue
		}
		end := -1
		for j := i + 1; j < len(g) && j <= i+3; j++ {
			if g[j].initial {
				continue
			}
			last := g[j].word
			if !usable(g[j]) {
				break
			}
			switch {
			case names.part(last) && names.given[first] && !(names.ambiguous(first) && names.ambiguous(last)):
				end = j // "John Smith", "Rose Tremain", "Mark Tully"
			case names.part(last) && !names.ambiguous(first) && !names.ambiguous(last):
				end = j // "Kwame Mensah", "Hiroshi Tanaka": a known surname after a name that is no word
			case names.given[first] && names.unknown(last):
				end = j // "Basil Hallward": a given name and a rare surname
			}
			if !names.part(last) {
				break
			}
		}
		if end > 0 {
			spans = append(spans, [2]int{g[i].start, g[end].end})
			i = end
		}
	}
	return spans
}

func hasUpper(s string) bool {
	for _, r := range s {
		if unicode.IsUpper(r) {
			return true
		}
	}
	return false
}

// wordStart and wordEnd report whether s has no letter or digit just before
// i, or just at j.
func wordStart(s string, i int) bool {
	r, _ := utf8.DecodeLastRuneInString(s[:i])
	return i == 0 || !(unicode.IsLetter(r) || unicode.IsDigit(r))
}

func wordEnd(s string, j int) bool {
	r, _ := utf8.DecodeRuneInString(s[j:])
	return j == len(s) || !(unicode.IsLetter(r) || unicode.IsDigit(r))
}

// Street addresses, in the shapes of several countries (street types from
// USPS Publication 28 appendix C1 and the national conventions):
//   - US, UK, Canada, Australia: number + street name + type, then an
//     optional unit ("Apt 4B") and ZIP or postcode: "221B Baker Street",
//     "1600 Pennsylvania Ave NW, Suite 200";
//   - Germany, Austria, Switzerland, the Netherlands, Scandinavia: name with
//     the type joined or apart + number: "Hauptstraße 5", "Berliner Str. 12a",
//     "Kerkstraat 12", "Storgatan 3";
//   - France, Belgium: number + type + name: "12 rue de la Paix", "5 bis
//     avenue Victor Hugo";
//   - Spain, Italy, Portugal, Latin America: type + name + number: "Calle
//     Mayor 5", "Via Roma 10", "Rua Augusta, 100".
var addressREs = func() []addressShape {
	name := `\p{Lu}[\p{L}'’.\-]*`
	en := `(?:Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Place|Pl|Terrace|Ter|Way|Close|Crescent|Cres|Square|Sq|Parkway|Pkwy|Highway|Hwy|Circle|Cir|Trail|Trl|Row|Mews|Grove|Gardens|Walk|Alley|Plaza|Heights|Hts|Parade|Pde|Esplanade|Broadway)`
	unit := `(?:,?\s+(?:Apt|Apartment|Suite|Ste|Unit|Flat|Floor|Fl|Room|Rm|#)\.?\s*#?[A-Za-z0-9\-]{1,6})?`
	city := `\p{Lu}\p{Ll}+\.?(?:-\p{Lu}\p{Ll}+)?`
	post := `(?:,\s*` + city + `(?:\s` + city + `){0,2})?(?:,?\s+[A-Z]{2}\b)?(?:,?\s+(?:\d{5}(?:-\d{4})?|[A-Z]{1,2}\d[A-Z\d]?\s?\d[A-Z]{2})\b)?`
	de := `(?:straße|strasse|str\.|weg|allee|gasse|platz|ring|damm|ufer|steig|pfad|chaussee|laan|straat|gracht|plein|kade|singel|dijk|vej|gade|gatan|gata|vägen|veien|gate|tie|katu)`
	deApart := `(?:Straße|Strasse|Str\.|Weg|Allee|Gasse|Platz|Ring|Damm|Ufer|Chaussee)`
	fr := `(?i:rue|avenue|av\.|boulevard|bd|place|allée|allee|chemin|impasse|quai|route|cours|square|passage)`
	frLink := `(?:(?:de la|de l['’]|du|des|de|d['’]|la|le|les)\s*)?`
	es := `(?:Calle|C/|Avenida|Avda\.?|Av\.|Plaza|Pza\.?|Paseo|Pº|Camino|Carrer|Ronda|Via|Viale|V\.le|Piazza|P\.zza|Corso|Largo|Vicolo|Rua|R\.|Travessa|Praça|Alameda|Estrada)`
	esLink := `(?:(?:de la|de los|de las|del|de|dos|das|da|do|di|della|delle|dei|degli)\s+)?`
	words := func(alts string) []string { // the alternatives of a group, as plain lower-case text
		var out []string
		for _, w := range strings.Split(strings.ToLower(strings.Trim(strings.TrimPrefix(alts, "(?i"), "(?:)")), "|") {
			out = append(out, strings.TrimSuffix(strings.ReplaceAll(w, `\.`, "."), "?"))
		}
		return out
	}
	return []addressShape{
		newAddressShape(words(en), regexp.MustCompile(`\b\d{1,5}[A-Za-z]?(?:-\d{1,5})?,?\s+(?:(?:[NSEW]\.?|North|South|East|West)\s+)?(?:(?:`+name+`|\d{1,3}(?:st|nd|rd|th))\s+){1,4}`+en+`\b\.?(?:\s+(?:NW|NE|SW|SE|N|S|E|W)\b)?`+unit+post)),
		newAddressShape(words(de), regexp.MustCompile(`\b\p{Lu}\p{Ll}+`+de+`\s*\d{1,4}\s?[a-zA-Z]?\b(?:,?\s+\d{4,5}\s+\p{Lu}\p{L}+)?`)),
		newAddressShape(words(deApart), regexp.MustCompile(`\b(?:`+name+`\s+){1,2}`+deApart+`\s*\d{1,4}\s?[a-zA-Z]?\b(?:,?\s+\d{4,5}\s+\p{Lu}\p{L}+)?`)),
		newAddressShape(words(fr), regexp.MustCompile(`\b\d{1,4}(?:\s?(?:bis|ter))?,?\s+`+fr+`\s+`+frLink+name+`(?:\s+`+frLink+name+`){0,3}(?:,?\s+\d{5}\s+\p{Lu}\p{L}+)?`)),
		newAddressShape(words(es), regexp.MustCompile(`(?:^|[^\p{L}])`+es+`\s+`+esLink+name+`(?:\s+`+esLink+name+`){0,3},?\s+(?:n[º°o]\.?\s*)?\d{1,4}[a-zA-Z]?\b(?:,?\s+\d{5}\s+\p{Lu}\p{L}+)?`)),
	}
}()

// addressShape is one country group's pattern and the street-type words
// (lower case) one of which any match holds: text without them is skipped.
type addressShape struct {
	need []string
	re   *regexp.Regexp
	// byFirst is need by first byte; empty: need holds "", which any text holds.
	byFirst *[256][]string
	empty   bool
}

// newAddressShape indexes need by first byte (holdsNeed).
func newAddressShape(need []string, re *regexp.Regexp) addressShape {
	a := addressShape{need: need, re: re, byFirst: new([256][]string)}
	for _, w := range need {
		if w == "" {
			a.empty = true
			continue
		}
		a.byFirst[w[0]] = append(a.byFirst[w[0]], w)
	}
	return a
}

// holdsNeed reports whether lower holds one of a.need, as
// slices.ContainsFunc(a.need, strings.Contains(lower, w)) does, trying at
// each byte only the words that start with it.
func (a addressShape) holdsNeed(lower string) bool {
	for i := 0; i < len(lower); i++ {
		for _, w := range a.byFirst[lower[i]] {
			if strings.HasPrefix(lower[i:], w) {
				return true
			}
		}
	}
	return a.empty
}

// findAddresses returns the spans of street addresses in s.
func findAddresses(s string) [][2]int {
	var spans [][2]int
	lower := strings.ToLower(s)
	for _, a := range addressREs {
		if !a.holdsNeed(lower) {
			continue
		}
		for _, m := range a.re.FindAllStringIndex(s, -1) {
			start := m[0]
			for start < m[1] { // the Spanish shape's leading non-letter
				r, n := utf8.DecodeRuneInString(s[start:])
				if unicode.IsLetter(r) || unicode.IsDigit(r) {
					break
				}
				start += n
			}
			spans = append(spans, [2]int{start, m[1]})
		}
	}
	return mergeSpans(spans)
}

// mergeSpans sorts spans and joins the overlapping ones.
func mergeSpans(spans [][2]int) [][2]int {
	if len(spans) < 2 {
		return spans
	}
	slices.SortFunc(spans, func(a, b [2]int) int { return cmp.Compare(a[0], b[0]) })
	out := spans[:1]
	for _, sp := range spans[1:] {
		if last := &out[len(out)-1]; sp[0] < last[1] {
			last[1] = max(last[1], sp[1])
		} else {
			out = append(out, sp)
		}
	}
	return out
}

// passportRE is a passport number after a cue word in English, Spanish,
// French, German, Dutch or Italian ("passport no. X1234567", "Reisepass:
// C01X00T47"): 6-9 capital letters and digits with at least one digit.
var passportRE = regexp.MustCompile(`(?i:passport|pasaporte|passeport|reisepass|reisepassnummer|paspoort|passaporto)(?i:\s+(?:no\.?|number|num\.?|nr\.?|n[º°o]\.?|#|id))?\s*[:#]?\s*([A-Z0-9]{6,9})\b`)

// findPassports returns the spans of the numbers (not the cue words).
func findPassports(s string) [][2]int {
	if !containsFoldASCII(s, "pas") { // every cue word of passportRE holds it
		return nil
	}
	var spans [][2]int
	for _, m := range passportRE.FindAllStringSubmatchIndex(s, -1) {
		if strings.ContainsAny(s[m[2]:m[3]], digits) {
			spans = append(spans, [2]int{m[2], m[3]})
		}
	}
	return spans
}

// containsFoldASCII reports whether s holds lower (ASCII lower-case letters)
// in any case.
func containsFoldASCII(s, lower string) bool {
	for i := 0; i+len(lower) <= len(s); i++ {
		j := 0
		for j < len(lower) && s[i+j]|0x20 == lower[j] {
			j++
		}
		if j == len(lower) {
			return true
		}
	}
	return false
}

// nationalIDRE finds the shapes of national ids with a check: US Social
// Security numbers written with dashes, UK National Insurance numbers and
// Spanish DNI numbers.
var nationalIDRE = regexp.MustCompile(`\b[0-9]{3}-[0-9]{2}-[0-9]{4}\b|\b[A-Z]{2} ?[0-9]{2} ?[0-9]{2} ?[0-9]{2} ?[A-D]\b|\b[0-9]{8}-?[A-Z]\b`)

// ninoPrefixRE is a valid NINO prefix (HMRC: no D, F, I, Q, U, V; no O
// second; not BG, GB, KN, NK, NT, TN, ZZ).
var ninoPrefixRE = regexp.MustCompile(`^[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]`)

// nationalIDValid checks each shape: an SSN's area is not 000, 666 or 9xx,
// its group not 00 and its serial not 0000 (SSA); a NINO's prefix is one
// HMRC allocates; a DNI's letter is its number mod 23 in "TRWAGMYFPDXBNJZSQVHLCKE".
func nationalIDValid(m string) bool {
	switch {
	case len(m) == 11 && m[3] == '-':
		area, group, serial := m[:3], m[4:6], m[7:]
		return area != "000" && area != "666" && area[0] != '9' && group != "00" && serial != "0000"
	case m[0] >= 'A' && m[0] <= 'Z':
		p := m[:2]
		return ninoPrefixRE.MatchString(p) && !slices.Contains([]string{"BG", "GB", "KN", "NK", "NT", "TN", "ZZ"}, p)
	default:
		n := 0
		for _, r := range m[:8] {
			n = n*10 + int(r-'0')
		}
		return "TRWAGMYFPDXBNJZSQVHLCKE"[n%23] == m[len(m)-1]
	}
}
