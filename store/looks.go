package store

import (
	"context"
	"fmt"
	"time"
)

// SuiteLook is one row of suite_looks (migration 0160): look Look of the
// group-sequential plan of (SetName, Incumbent, Candidate, CandidateVersion,
// PolicyVersion), taken by suite run SuiteRunID on Cases paired graded cases
// at information fraction Fraction = Cases / MaxCases, deciding at the
// one-sided boundary Boundary (Confidence: the two-sided level of its
// intervals) with spending function Spending, and giving Verdict.
type SuiteLook struct {
	SetName          string    `json:"set_name"`
	Incumbent        string    `json:"incumbent"`
	Candidate        string    `json:"candidate"`
	CandidateVersion string    `json:"candidate_version"`
	PolicyVersion    string    `json:"policy_version"`
	Look             int32     `json:"look"`
	SuiteRunID       string    `json:"suite_run_id"`
	Cases            int32     `json:"cases"`
	MaxCases         int32     `json:"max_cases"`
	Fraction         float64   `json:"fraction"`
	Boundary         float64   `json:"boundary"`
	Confidence       float64   `json:"confidence"`
	Spending         string    `json:"spending"`
	Verdict          string    `json:"verdict"`
	CreatedAt        time.Time `json:"created_at"`
}

// LookKey names one group-sequential plan: the set (by name: a set that grew
// keeps its plan), the incumbent, the candidate and its version, and the gate
// policy version.
type LookKey struct {
	SetName, Incumbent, Candidate, CandidateVersion, PolicyVersion string
}

// LookStore keeps the looks of group-sequential plans (the suite runner's
// role besides SuiteWriter).
type LookStore interface {
	// Looks returns the plan's looks, by look number; none for a new plan.
	Looks(ctx context.Context, key LookKey) ([]SuiteLook, error)
	// InsertLooks stores looks, keyed by the plan and the look number; a later
	// write of the same look replaces it.
	InsertLooks(ctx context.Context, looks []SuiteLook) error
}

var _ LookStore = (*sqlStore)(nil)

// Looks implements LookStore.
func (s *sqlStore) Looks(ctx context.Context, key LookKey) ([]SuiteLook, error) {
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("store: looks: %w", err)
	}
	rows, err := queryRows[SuiteLook](ctx, s.t, fmt.Sprintf(
		"SELECT %s FROM %s.suite_looks FINAL WHERE set_name = {set:String} AND incumbent = {inc:String} AND candidate = {cand:String}"+
			" AND candidate_version = {ver:String} AND policy_version = {pol:String} ORDER BY look",
		selectList[SuiteLook](), s.db),
		Params{}.Str("set", key.SetName).Str("inc", key.Incumbent).Str("cand", key.Candidate).Str("ver", key.CandidateVersion).Str("pol", key.PolicyVersion))
	if err != nil {
		return nil, fmt.Errorf("store: looks of %s/%s@%s: %w", key.SetName, key.Candidate, key.CandidateVersion, err)
	}
	return rows, nil
}

// InsertLooks implements LookStore.
func (s *sqlStore) InsertLooks(ctx context.Context, looks []SuiteLook) error {
	return insert(ctx, s, "suite_looks", looks)
}
