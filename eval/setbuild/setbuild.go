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
}

// Stratum is one (app, category) group: requests available after
// de-duplication and how many were picked.
type Stratum struct {
	App       string `json:"app"`
	Category  string `json:"category"`
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
// kept), groups them by (app, category) and picks opts.N cases: each stratum
// gets a share proportional to its size (largest remainder), at least one
// when N allows; within a stratum a seeded shuffle decides. Lines come out
// sorted by (app, category, id). It returns an error for N outside 1..10,000
// or no usable sources.
func Build(sources []store.SetSource, opts Options) ([]Line, []Stratum, error) {
	if opts.N < 1 || opts.N > 10_000 {
		return nil, nil, fmt.Errorf("setbuild: n must be in 1..10000, got %d", opts.N)
	}
	if opts.Grader == "" {
		opts.Grader = eval.GraderPairwise
	}
	seen := map[string]bool{}
	groups := map[[2]string][]Line{}
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
		k := [2]string{line.App, line.Category}
		groups[k] = append(groups[k], line)
	}
	if len(groups) == 0 {
		return nil, nil, errors.New("setbuild: no usable requests (captured requests with an incumbent answer)")
	}
	keys := make([][2]string, 0, len(groups))
	total := 0
	for k, g := range groups {
		keys = append(keys, k)
		total += len(g)
	}
	slices.SortFunc(keys, func(a, b [2]string) int { return cmp.Or(strings.Compare(a[0], b[0]), strings.Compare(a[1], b[1])) })
	n := min(opts.N, total)
	quota := allocate(keys, groups, n)
	rng := rand.New(rand.NewPCG(opts.Seed, 0x5e7b))
	var out []Line
	var strata []Stratum
	for i, k := range keys {
		g := groups[k]
		rng.Shuffle(len(g), func(a, b int) { g[a], g[b] = g[b], g[a] })
		picked := g[:quota[i]]
		slices.SortFunc(picked, func(a, b Line) int { return strings.Compare(a.ID, b.ID) })
		out = append(out, picked...)
		strata = append(strata, Stratum{App: k[0], Category: k[1], Available: len(g), Picked: quota[i]})
	}
	return out, strata, nil
}

// allocate splits n over the groups in proportion to their sizes (Hamilton's
// largest remainder), giving every group one first when n ≥ groups and
// otherwise one each to the n largest.
func allocate(keys [][2]string, groups map[[2]string][]Line, n int) []int {
	q := make([]int, len(keys))
	order := make([]int, len(keys))
	for i := range order {
		order[i] = i
	}
	size := func(i int) int { return len(groups[keys[i]]) }
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(size(b), size(a)) })
	if n < len(keys) {
		for _, i := range order[:n] {
			q[i] = 1
		}
		return q
	}
	total := 0
	for i := range keys {
		q[i] = 1
		total += size(i)
	}
	rest := n - len(keys)
	remainders := make([]float64, len(keys))
	given := 0
	for i := range keys {
		share := float64(rest) * float64(size(i)) / float64(total)
		extra := min(int(share), size(i)-1)
		q[i] += extra
		given += extra
		remainders[i] = share - float64(int(share))
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(remainders[b], remainders[a]) })
	for given < rest {
		progress := false
		for _, i := range order {
			if given == rest {
				break
			}
			if q[i] < size(i) {
				q[i]++
				given++
				progress = true
			}
		}
		if !progress {
			break
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
