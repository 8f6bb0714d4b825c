package eval

import "github.com/conductor-shadow/conductor-shadow/ingest/segment"

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
