// Package setbuild makes a regression set from captured traffic: a
// stratified sample of stored requests (by app and category), de-duplicated by
// input, with the incumbent's answer kept as the reference for a person to
// accept or correct in the written JSONL file.
package setbuild

import (
	"bufio"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/conductor-shadow/conductor-shadow/eval"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// Reference statuses written in each line's "reference_status"; a reviewer
// changes "unreviewed" to "accepted" or, after editing the reference,
// "corrected".
const (
	ReferenceUnreviewed = "unreviewed"
	ReferenceAccepted   = "accepted"
	ReferenceCorrected  = "corrected"
)

// Options tune Build.
type Options struct {
	N      int    // cases to pick, 1..10,000 (100–300 is the usual size)
	Seed   uint64 // the same seed and sources give the same set
	Grader string // every case's grader; default eval.GraderPairwise (judge against the reference)
	// StratifyBy names the columns the strata are made of, from StratifyColumns;
	// empty means app and category. Stratifying by segment columns (language,
	// has_table, has_code, length_bucket) draws a set whose segment mix is the
	// live mix of the captured requests.
	StratifyBy []string
}

// StratifyColumns are the request columns Options.StratifyBy may name.
var StratifyColumns = []string{"app", "category", "language", "has_table", "has_code", "length_bucket"}

// ParseStratifyBy splits a comma-separated list of StratifyColumns; an
// unknown or repeated name is an error.
func ParseStratifyBy(s string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if !slices.Contains(StratifyColumns, f) {
			return nil, fmt.Errorf("setbuild: cannot stratify by %q (one of %s)", f, strings.Join(StratifyColumns, ", "))
		}
		if slices.Contains(out, f) {
			return nil, fmt.Errorf("setbuild: %q named twice in --stratify-by", f)
		}
		out = append(out, f)
	}
	return out, nil
}

// stratumValue is a source's value of one StratifyColumns column.
func stratumValue(s store.SetSource, line Line, col string) string {
	switch col {
	case "app":
		return line.App
	case "category":
		return line.Category
	case "language":
		if s.Language == "" {
			return "unknown"
		}
		return s.Language
	case "has_table":
		return fmt.Sprint(s.HasTable)
	case "has_code":
		return fmt.Sprint(s.HasCode)
	case "length_bucket":
		return s.LengthBucket
	}
	return ""
}

// Stratum is one group of the stratification: requests available after
// de-duplication and how many were picked. App and Category are set when the
// strata are made of them; Key names the group's value of every stratify
// column, "language=ru has_table=true".
type Stratum struct {
	App       string `json:"app"`
	Category  string `json:"category"`
	Key       string `json:"key"`
	Available int    `json:"available"`
	Picked    int    `json:"picked"`
}

// Line is one case of the built set, as written to JSONL (eval.LoadSet reads
// it; keys other than id, category, input, reference, choices, grader and
// tags land in eval.Case.Extra).
type Line struct {
	ID                string            `json:"id"`
	Category          string            `json:"category"`
	Input             string            `json:"input"`
	Reference         string            `json:"reference"`
	Choices           []string          `json:"choices"`
	Grader            string            `json:"grader"`
	Tags              []string          `json:"tags"`
	App               string            `json:"app"`
	SourceRequestID   string            `json:"source_request_id"`
	IncumbentPipeline string            `json:"incumbent_pipeline"`
	ReferenceStatus   string            `json:"reference_status"`
	Context           []json.RawMessage `json:"context,omitempty"` // earlier chat messages (system, previous turns)
}

// Build de-duplicates sources by input hash (the first, i.e. newest, copy is
// kept), groups them by opts.StratifyBy (default app and category) and picks
// opts.N cases (all of them when fewer are usable). The cases are shared out in
// proportion to each stratum's share of the de-duplicated live traffic (Allocate:
// largest remainder, ties broken by the seed), so a small set keeps the live mix
// and a stratum too rare for N gets none; within a stratum a seeded shuffle
// decides. Lines come out sorted by stratum key, then id. It returns an error for
// N outside 1..10,000 or no usable sources.
func Build(sources []store.SetSource, opts Options) ([]Line, []Stratum, error) {
	if opts.N < 1 || opts.N > 10_000 {
		return nil, nil, fmt.Errorf("setbuild: n must be in 1..10000, got %d", opts.N)
	}
	if opts.Grader == "" {
		opts.Grader = eval.GraderPairwise
	}
	by := opts.StratifyBy
	if len(by) == 0 {
		by = []string{"app", "category"}
	}
	for _, c := range by {
		if !slices.Contains(StratifyColumns, c) {
			return nil, nil, fmt.Errorf("setbuild: cannot stratify by %q (one of %s)", c, strings.Join(StratifyColumns, ", "))
		}
	}
	seen := map[string]bool{}
	groups := map[string][]Line{}
	first := map[string]Line{}
	for _, s := range sources {
		h := s.InputHash
		if h == "" {
			sum := sha256.Sum256([]byte(s.Input))
			h = hex.EncodeToString(sum[:])
		}
		if seen[h] {
			continue
		}
		seen[h] = true
		line, ok := lineOf(s, h, opts.Grader)
		if !ok {
			continue
		}
		parts := make([]string, len(by))
		for i, c := range by {
			parts[i] = c + "=" + stratumValue(s, line, c)
		}
		k := strings.Join(parts, " ")
		if _, ok := groups[k]; !ok {
			first[k] = line
		}
		groups[k] = append(groups[k], line)
	}
	if len(groups) == 0 {
		return nil, nil, errors.New("setbuild: no usable requests (captured requests with an incumbent answer)")
	}
	keys := make([]string, 0, len(groups))
	total := 0
	for k, g := range groups {
		keys = append(keys, k)
		total += len(g)
	}
	slices.Sort(keys)
	n := min(opts.N, total)
	sizes := make([]int, len(keys))
	for i, k := range keys {
		sizes[i] = len(groups[k])
	}
	quota := Allocate(sizes, n, opts.Seed)
	rng := rand.New(rand.NewPCG(opts.Seed, 0x5e7b))
	var out []Line
	var strata []Stratum
	for i, k := range keys {
		g := groups[k]
		rng.Shuffle(len(g), func(a, b int) { g[a], g[b] = g[b], g[a] })
		picked := g[:quota[i]]
		slices.SortFunc(picked, func(a, b Line) int { return strings.Compare(a.ID, b.ID) })
		out = append(out, picked...)
		st := Stratum{Key: k, Available: len(g), Picked: quota[i]}
		if slices.Contains(by, "app") {
			st.App = first[k].App
		}
		if slices.Contains(by, "category") {
			st.Category = first[k].Category
		}
		strata = append(strata, st)
	}
	return out, strata, nil
}

// Allocate shares n cases out over strata of the given sizes in proportion to
// their sizes, by the largest-remainder method (Hamilton's apportionment):
// stratum i's exact quota is n × sizes[i] / Σsizes; each gets the integer part,
// and the seats left over go one each to the largest fractional parts. Equal
// fractional parts (strata of equal size, most often) are ordered by a
// permutation drawn from seed, never by name, so when n is smaller than the
// number of strata the strata that get a case are a seeded random draw weighted
// by the live mix. The quotas sum to min(n, Σsizes) and none exceeds its size;
// the same sizes, n and seed give the same quotas. Remainders are compared as
// exact integers (n × size mod Σsizes), so no rounding decides a seat.
func Allocate(sizes []int, n int, seed uint64) []int {
	q := make([]int, len(sizes))
	total := 0
	for _, s := range sizes {
		total += max(s, 0)
	}
	n = min(max(n, 0), total)
	if n == 0 {
		return q
	}
	rem := make([]int, len(sizes))
	given := 0
	for i, s := range sizes {
		s = max(s, 0)
		q[i] = n * s / total // ≤ s, since n ≤ total
		rem[i] = n * s % total
		given += q[i]
	}
	// The tie-break: a seeded random rank per stratum.
	rank := rand.New(rand.NewPCG(seed, 0xa110c)).Perm(len(sizes))
	order := make([]int, len(sizes))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		if c := cmp.Compare(rem[b], rem[a]); c != 0 {
			return c
		}
		return cmp.Compare(rank[a], rank[b])
	})
	// Σ floors ≥ n − len(sizes) + 1, and a stratum with a remainder > 0 has
	// room for one more (its exact quota is below its size), so one pass does.
	for _, i := range order {
		if given == n {
			break
		}
		if rem[i] > 0 {
			q[i]++
			given++
		}
	}
	return q
}

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// lineOf turns a source into a case line: the last user message is the
// input, earlier messages are kept as context.
func lineOf(s store.SetSource, hash, grader string) (Line, bool) {
	var raw []json.RawMessage
	input := strings.TrimSpace(s.Input)
	var context []json.RawMessage
	if err := json.Unmarshal([]byte(s.Input), &raw); err == nil && len(raw) > 0 {
		input = ""
		for i := len(raw) - 1; i >= 0; i-- {
			var m message
			if json.Unmarshal(raw[i], &m) == nil && m.Role == "user" && strings.TrimSpace(m.Content) != "" {
				input = m.Content
				context = raw[:i]
				break
			}
		}
	}
	if strings.TrimSpace(input) == "" || strings.TrimSpace(s.IncumbentOutput) == "" {
		return Line{}, false
	}
	cat := s.Category
	if cat == "" {
		cat = "uncategorized"
	}
	tags := []string{}
	if s.App != "" {
		tags = append(tags, "app:"+s.App)
	}
	return Line{
		ID: "req-" + hash[:min(12, len(hash))], Category: cat, Input: input, Reference: s.IncumbentOutput,
		Choices: []string{}, Grader: grader, Tags: tags, App: s.App, SourceRequestID: s.RequestID,
		IncumbentPipeline: s.IncumbentPipeline, ReferenceStatus: ReferenceUnreviewed, Context: context,
	}, true
}

// Write writes lines as JSONL.
func Write(w io.Writer, lines []Line) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for _, l := range lines {
		if err := enc.Encode(l); err != nil {
			return fmt.Errorf("setbuild: write %s: %w", l.ID, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("setbuild: write: %w", err)
	}
	return nil
}
