package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// SegmentFilter selects requests by their segment columns (ingest/segment).
// Zero values mean "any".
type SegmentFilter struct {
	Language     string // ISO 639-1 code; SegmentUnknown for requests whose language was not told
	HasTable     string // SegmentYes, SegmentNo or "" (any)
	HasCode      string // SegmentYes, SegmentNo or "" (any)
	LengthBucket string // e.g. "128-511"
	// MinNovelty selects requests whose novelty (the share of the prompt's
	// words absent from the regression sets' vocabulary, 0–1) is at least this;
	// 0 selects every request, with or without a novelty.
	MinNovelty float64
}

// Values of SegmentFilter's flags and language.
const (
	SegmentYes     = "yes"
	SegmentNo      = "no"
	SegmentUnknown = "unknown"
)

// Empty reports a filter that selects everything.
func (f SegmentFilter) Empty() bool { return f == SegmentFilter{} }

// Validate reports a flag that is not yes, no or empty, a language that is
// not two lower-case letters or "unknown", and a MinNovelty outside [0, 1].
func (f SegmentFilter) Validate() error {
	var errs []error
	if !(f.MinNovelty >= 0 && f.MinNovelty <= 1) {
		errs = append(errs, fmt.Errorf("store: segment filter: min_novelty %v must be between 0 and 1", f.MinNovelty))
	}
	for _, fl := range []struct{ name, v string }{{"has_table", f.HasTable}, {"has_code", f.HasCode}} {
		if fl.v != "" && fl.v != SegmentYes && fl.v != SegmentNo {
			errs = append(errs, fmt.Errorf("store: segment filter: %s %q must be %q, %q or empty", fl.name, fl.v, SegmentYes, SegmentNo))
		}
	}
	if l := f.Language; l != "" && l != SegmentUnknown && (len(l) != 2 || l[0] < 'a' || l[0] > 'z' || l[1] < 'a' || l[1] > 'z') {
		errs = append(errs, fmt.Errorf("store: segment filter: language %q is not an ISO 639-1 code (two lower-case letters) or %q", l, SegmentUnknown))
	}
	return errors.Join(errs...)
}

// sqlCond renders f as conditions on the requests table's columns, "" for none.
func (f SegmentFilter) sqlCond() string {
	var c []string
	if f.Language != "" {
		lang := f.Language
		if lang == SegmentUnknown {
			lang = ""
		}
		c = append(c, "language = "+quoteString(lang))
	}
	for _, fl := range []struct{ col, v string }{{"has_table", f.HasTable}, {"has_code", f.HasCode}} {
		if fl.v != "" {
			c = append(c, fmt.Sprintf("%s = %v", fl.col, fl.v == SegmentYes))
		}
	}
	if f.LengthBucket != "" {
		c = append(c, "length_bucket = "+quoteString(f.LengthBucket))
	}
	if f.MinNovelty > 0 { // Validate keeps it a number in (0, 1]
		c = append(c, "novelty >= "+strconv.FormatFloat(f.MinNovelty, 'f', -1, 64))
	}
	return strings.Join(c, " AND ")
}

// SegmentMixQuery selects the live traffic (LiveSources: not suite cases,
// not generated rows) received in [From, To), optionally of one App.
type SegmentMixQuery struct {
	From, To time.Time
	App      string
}

// SegmentCount is the number of live requests with one combination of
// segment values. WithNovelty counts those with a novelty (≥ 0), NoveltySum
// sums it, NovelRequests counts novelty ≥ 0.5 (mostly new words).
type SegmentCount struct {
	Language      string  `json:"language"`
	HasTable      bool    `json:"has_table"`
	HasCode       bool    `json:"has_code"`
	LengthBucket  string  `json:"length_bucket"`
	Requests      int64   `json:"requests"`
	WithNovelty   int64   `json:"with_novelty"`
	NovelRequests int64   `json:"novel_requests"`
	NoveltySum    float64 `json:"novelty_sum"`
}

// SegmentReader reads the segment mix of live traffic. The SQL stores
// (embedded and server) implement it.
type SegmentReader interface {
	// SegmentMix counts the window's live requests per combination of segment
	// values, most requests first. A window whose end is not after its start
	// is an error.
	SegmentMix(ctx context.Context, q SegmentMixQuery) ([]SegmentCount, error)
}

var _ SegmentReader = (*sqlStore)(nil)

// Validate reports an empty or inverted window.
func (q SegmentMixQuery) Validate() error {
	if q.From.IsZero() || q.To.IsZero() || !q.To.After(q.From) {
		return errors.New("store: segment mix: the window needs a start before its end")
	}
	return nil
}

// SegmentMix implements SegmentReader.
func (s *sqlStore) SegmentMix(ctx context.Context, q SegmentMixQuery) ([]SegmentCount, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("store: segment mix: %w", err)
	}
	p := Params{}.Time("from", q.From).Time("to", q.To)
	cond := "received_at >= {from:DateTime64(3, 'UTC')} AND received_at < {to:DateTime64(3, 'UTC')} AND " + liveRequestSQL
	if q.App != "" {
		p.Str("app", q.App)
		cond += " AND app = {app:String}"
	}
	rows, err := queryRows[SegmentCount](ctx, s.t, fmt.Sprintf(`SELECT
    language, has_table, has_code, length_bucket,
    count() AS requests,
    countIf(novelty >= 0) AS with_novelty,
    countIf(novelty >= 0.5) AS novel_requests,
    sumIf(novelty, novelty >= 0) AS novelty_sum
FROM %s.requests FINAL
WHERE %s
GROUP BY language, has_table, has_code, length_bucket
ORDER BY requests DESC, language, has_table, has_code, length_bucket`, s.db, cond), p)
	if err != nil {
		return nil, fmt.Errorf("store: segment mix: %w", err)
	}
	return rows, nil
}
