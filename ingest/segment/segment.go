// Package segment computes the traffic segments of one prompt at ingest: its
// language (ISO 639-1, detected by lingua-go on the prose once code is set
// aside), whether it holds a table (Markdown, TSV- or CSV-like) or code, a
// length bucket in tokens and a novelty score against the vocabulary of the
// regression sets in use. Segments are stored as columns of the request, so
// traces, overviews, suite verdicts and shift alarms can be split by them.
//
// The package is a leaf: it imports no other package of the product.
package segment

import (
	"strings"
	"sync"

	"github.com/pemistahl/lingua-go"
)

// Segments are the segment columns of one request.
type Segments struct {
	// Language is the ISO 639-1 code of the prompt's prose ("ru", "zh"), ""
	// when it cannot be told (no prose, e.g. a bare code paste or "hi").
	Language string `json:"language"`
	// HasTable is true when the prompt holds a Markdown table or at least three
	// consecutive TSV- or CSV-like rows with the same number of cells.
	HasTable bool `json:"has_table"`
	// HasCode is true when the prompt holds a fenced code block or at least
	// three lines that read as source code.
	HasCode bool `json:"has_code"`
	// LengthBucket is the prompt's length in tokens (EstimateTokens) as one of
	// LengthBuckets().
	LengthBucket string `json:"length_bucket"`
	// Novelty is the share (0..1) of the prompt's words absent from the
	// vocabulary of the regression sets in use; -1 when no vocabulary is loaded.
	Novelty float64 `json:"novelty"`
}

// Unknown is how an undetected language is shown.
const Unknown = "unknown"

// LanguageLabel returns s.Language, or Unknown when empty.
func (s Segments) LanguageLabel() string {
	if s.Language == "" {
		return Unknown
	}
	return s.Language
}

// Segmenter computes Segments. It is safe for concurrent use; the zero value
// is not usable, use New.
type Segmenter struct {
	vocab *Vocabulary
	once  sync.Once
	det   lingua.LanguageDetector
}

// New returns a Segmenter scoring novelty against vocab (nil: novelty -1).
//
// Language detection uses lingua-go in low-accuracy mode over all 75 of its
// languages: trigram models only, loaded on first use of each language (about
// 50 MB of heap once all are loaded; the high-accuracy mode needs about 1 GB
// and was measured no better on real non-English prompts once code is set aside).
func New(vocab *Vocabulary) *Segmenter {
	return &Segmenter{vocab: vocab}
}

func (s *Segmenter) detector() lingua.LanguageDetector {
	s.once.Do(func() {
		s.det = lingua.NewLanguageDetectorBuilder().FromAllLanguages().WithLowAccuracyMode().Build()
	})
	return s.det
}

// Of computes the segments of one prompt text (the user messages joined by
// newlines).
func (s *Segmenter) Of(text string) Segments {
	seg := Segments{
		Language:     s.Language(text),
		HasTable:     HasTable(text),
		HasCode:      HasCode(text),
		LengthBucket: Bucket(EstimateTokens(text)),
		Novelty:      -1,
	}
	if s.vocab != nil {
		seg.Novelty = s.vocab.Novelty(text)
	}
	return seg
}

// maxDetectRunes caps the prose handed to the detector: a few hundred
// characters identify a language, and detection time grows with the text
// (BenchmarkSegment: about 12 ms per real prompt uncapped, 4 ms at 300 runes,
// with the same 57 of 57 non-English prompts right).
const maxDetectRunes = 300

func clipRunes(s string, n int) string {
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}

// minProseLetters is the fewest letters of prose a language is told from.
const minProseLetters = 2

// Language returns the ISO 639-1 code of text's prose, "" when undetermined.
// Code lines and fenced blocks are set aside first (their comments in a
// non-Latin script are kept); when a non-Latin script carries at least a
// fifth of the remaining letters (a CJK character weighs three), only that
// script's text is judged, so a Russian question around English code reads
// as Russian.
func (s *Segmenter) Language(text string) string {
	p := focus(prose(text))
	if letters(p) < minProseLetters {
		return ""
	}
	p = clipRunes(p, maxDetectRunes)
	lang, ok := s.detector().DetectLanguageOf(p)
	if !ok {
		return ""
	}
	return strings.ToLower(lang.IsoCode639_1().String())
}
