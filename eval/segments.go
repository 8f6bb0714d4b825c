package eval

import (
	"context"
	"fmt"
	"time"

	"github.com/conductor-shadow/conductor-shadow/eval/shift"
	"github.com/conductor-shadow/conductor-shadow/ingest/segment"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// SegmentNames turns a prompt's segments into the segment names of verdicts:
// "lang:<iso>" ("lang:unknown" when undetermined), "table" and "code" when
// present, "len:<bucket>", and the pairs "lang:<iso>+table" and
// "lang:<iso>+code", so a report can say "the candidate is worse on Russian
// prompts with tables". Novelty is not a segment here (a regression set is its
// own vocabulary).
func SegmentNames(s segment.Segments) []string {
	lang := "lang:" + s.LanguageLabel()
	out := []string{lang}
	if s.HasTable {
		out = append(out, "table", lang+"+table")
	}
	if s.HasCode {
		out = append(out, "code", lang+"+code")
	}
	if s.LengthBucket != "" {
		out = append(out, "len:"+s.LengthBucket)
	}
	return out
}

// ShiftOf compares set's segment mix with the live traffic st received in
// [from, to) (eval/shift: PSI and Pearson chi-square per dimension), reading
// the live mix from an (store.SegmentReader).
func ShiftOf(ctx context.Context, an store.SegmentReader, set *Set, from, to time.Time) (*shift.Report, error) {
	live, err := an.SegmentMix(ctx, store.SegmentMixQuery{From: from, To: to})
	if err != nil {
		return nil, fmt.Errorf("eval: shift: %w", err)
	}
	prompts := make([]string, len(set.Cases))
	for i, c := range set.Cases {
		prompts[i] = c.Prompt()
	}
	r, err := shift.Compare(set.Name, shift.SetMix(segment.New(nil), prompts), live, from, to, shift.Options{})
	if err != nil {
		return nil, fmt.Errorf("eval: shift: %w", err)
	}
	return &r, nil
}
