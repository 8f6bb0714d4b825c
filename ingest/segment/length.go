package segment

import (
	"fmt"
	"slices"
)

// EstimateTokens is the prompt's size in bytes / 4, rounded up: the usual rule
// of thumb for BPE tokenizers on English text, the same the shadow side's
// rate limiter uses (about 0.75 tokens per CJK character, which is close to
// what tokenizers give on CJK text).
func EstimateTokens(text string) int { return (len(text) + 3) / 4 }

// LengthBucket is one length bucket: it holds lengths from Min tokens up to
// the next bucket's Min.
type LengthBucket struct {
	Name string
	Min  int // tokens
}

// lengthBuckets is the fixed table behind LengthBuckets, shortest first.
var lengthBuckets = [...]LengthBucket{
	{"0-127", 0}, {"128-511", 128}, {"512-2047", 512}, {"2048-8191", 2048}, {"8192+", 8192},
}

// LengthBuckets returns the length buckets in tokens, shortest first (a copy).
func LengthBuckets() []LengthBucket { return slices.Clone(lengthBuckets[:]) }

// Bucket returns the name of the length bucket that holds tokens.
func Bucket(tokens int) string {
	name := lengthBuckets[0].Name
	for _, b := range lengthBuckets {
		if tokens >= b.Min {
			name = b.Name
		}
	}
	return name
}

// ValidBucket reports an error for a name that is not one of LengthBuckets.
func ValidBucket(name string) error {
	for _, b := range lengthBuckets {
		if b.Name == name {
			return nil
		}
	}
	return fmt.Errorf("segment: unknown length bucket %q", name)
}
