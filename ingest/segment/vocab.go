package segment

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode"
)

// Vocabulary is the set of words of the regression sets in use. Words are
// lower-cased runs of letters and digits; each Han, kana, Hangul or Thai
// character is a word of its own (those scripts put no spaces between words).
type Vocabulary struct {
	words map[string]struct{}
	sets  []string
}

// NewVocabulary returns a vocabulary of the words of texts.
func NewVocabulary(texts ...string) *Vocabulary {
	v := &Vocabulary{words: map[string]struct{}{}}
	for _, t := range texts {
		v.Add(t)
	}
	return v
}

// Add puts the words of text into v.
func (v *Vocabulary) Add(text string) {
	for _, w := range Words(text) {
		v.words[w] = struct{}{}
	}
}

// Len is the number of distinct words.
func (v *Vocabulary) Len() int { return len(v.words) }

// Sets are the files the vocabulary was read from.
func (v *Vocabulary) Sets() []string { return v.sets }

// Novelty is the share (0..1) of text's words (with repeats) absent from v;
// 0 for a text without words.
func (v *Vocabulary) Novelty(text string) float64 {
	ws := Words(text)
	if len(ws) == 0 {
		return 0
	}
	miss := 0
	for _, w := range ws {
		if _, ok := v.words[w]; !ok {
			miss++
		}
	}
	return float64(miss) / float64(len(ws))
}

// Words splits text into lower-cased words (see Vocabulary).
func Words(text string) []string {
	var out []string
	start := -1
	flush := func(end int) {
		if start >= 0 {
			out = append(out, strings.ToLower(text[start:end]))
			start = -1
		}
	}
	for i, r := range text {
		switch {
		case wide(r):
			flush(i)
			out = append(out, string(r))
		case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			if start < 0 {
				start = i
			}
		default:
			flush(i)
		}
	}
	flush(len(text))
	return out
}

// LoadVocabulary reads the "input" (and, when present, "choices") of every
// JSONL regression set matching the glob patterns. A pattern matching no file
// is an error (a vocabulary silently empty would call every word new); so is
// a line that is not a JSON object.
func LoadVocabulary(patterns ...string) (*Vocabulary, error) {
	v := NewVocabulary()
	for _, pat := range patterns {
		files, err := filepath.Glob(pat)
		if err != nil {
			return nil, fmt.Errorf("segment: vocabulary pattern %q: %w", pat, err)
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("segment: vocabulary pattern %q matches no file", pat)
		}
		for _, f := range files {
			if err := v.addSet(f); err != nil {
				return nil, err
			}
			v.sets = append(v.sets, f)
		}
	}
	return v, nil
}

func (v *Vocabulary) addSet(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("segment: vocabulary: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	line := 0
	for sc.Scan() {
		line++
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var c struct {
			Input   string   `json:"input"`
			Choices []string `json:"choices"`
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			return fmt.Errorf("segment: vocabulary %s line %d: %w", path, line, err)
		}
		v.Add(c.Input)
		for _, ch := range c.Choices {
			v.Add(ch)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("segment: vocabulary %s: %w", path, err)
	}
	return nil
}
