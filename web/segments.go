package web

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/conductor-shadow/conductor-shadow/ingest/segment"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// parseSegmentFilter reads the segment filters of the traces list and the
// overview: language (ISO 639-1 or "unknown"), has_table and has_code
// ("yes", "no" or empty), length_bucket (one of segment.LengthBuckets()) and
// min_novelty (a number from 0 to 1; empty or 0 for any).
func parseSegmentFilter(v url.Values) (store.SegmentFilter, error) {
	f := store.SegmentFilter{
		Language:     strings.ToLower(strings.TrimSpace(v.Get("language"))),
		HasTable:     strings.TrimSpace(v.Get("has_table")),
		HasCode:      strings.TrimSpace(v.Get("has_code")),
		LengthBucket: strings.TrimSpace(v.Get("length_bucket")),
	}
	if s := strings.TrimSpace(v.Get("min_novelty")); s != "" {
		n, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return f, fmt.Errorf("min_novelty %q is not a number between 0 and 1", s)
		}
		f.MinNovelty = n
	}
	if f.LengthBucket != "" {
		if err := segment.ValidBucket(f.LengthBucket); err != nil {
			return f, errors.New(strings.TrimPrefix(err.Error(), "segment: "))
		}
	}
	if err := f.Validate(); err != nil {
		return f, errors.New(strings.ReplaceAll(err.Error(), "store: segment filter: ", ""))
	}
	return f, nil
}

// setSegmentValues writes f's non-empty filters into v.
func setSegmentValues(v url.Values, f store.SegmentFilter) {
	for k, val := range map[string]string{"language": f.Language, "has_table": f.HasTable, "has_code": f.HasCode, "length_bucket": f.LengthBucket, "min_novelty": noveltyValue(f)} {
		if val != "" {
			v.Set(k, val)
		}
	}
}

// lengthBuckets lists the length bucket names for the filter forms.
func lengthBuckets() []string {
	buckets := segment.LengthBuckets()
	out := make([]string, len(buckets))
	for i, b := range buckets {
		out[i] = b.Name
	}
	return out
}

// segmentLabel renders a trace's segments: "ru · table · code · 128-511".
func segmentLabel(r store.TraceSummary) string {
	parts := []string{r.Language}
	if r.Language == "" {
		parts[0] = segment.Unknown
	}
	if r.HasTable {
		parts = append(parts, "table")
	}
	if r.HasCode {
		parts = append(parts, "code")
	}
	if r.LengthBucket != "" {
		parts = append(parts, r.LengthBucket)
	}
	return strings.Join(parts, " · ")
}

// segmentFilterLabel renders an active segment filter: "language=ru, has_table=yes".
func segmentFilterLabel(f store.SegmentFilter) string {
	var parts []string
	for _, kv := range [][2]string{{"language", f.Language}, {"has_table", f.HasTable}, {"has_code", f.HasCode}, {"length_bucket", f.LengthBucket}, {"min_novelty", noveltyValue(f)}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+"="+kv[1])
		}
	}
	return strings.Join(parts, ", ")
}

// noveltyValue renders f.MinNovelty for a form or a link, "" when unset.
func noveltyValue(f store.SegmentFilter) string {
	if f.MinNovelty == 0 {
		return ""
	}
	return strconv.FormatFloat(f.MinNovelty, 'f', -1, 64)
}
