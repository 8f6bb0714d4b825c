package store

import (
	"context"
	"fmt"
	"time"
)

// Verdict notice states (VerdictNotice.Status).
const (
	// NoticePending: the change is decided and not yet delivered; a restart sends it.
	NoticePending = "pending"
	// NoticeSent: the receiver accepted it.
	NoticeSent = "sent"
	// NoticeFailed: every retry failed (or the receiver refused it for good).
	NoticeFailed = "failed"
	// NoticeDropped: the sink's outbox was full; it was never sent.
	NoticeDropped = "dropped"
)

// VerdictNotice is one row of verdict_notices (migration 0180): for one sink
// ("webhook", "email") and one verdict key — Kind ("suite", "live"),
// Candidate pipeline, CandidateVersion and SetName (the regression set; ""
// for live) — the last verdict a notification was decided for, the verdict
// notified before it, and where its delivery stands. Notice is the rendered
// notice as JSON (headline, gates, link), kept so that a pending one is sent
// after a restart exactly as it was decided. ChangedAt is when the verdict
// was observed (UTC, ms); Attempts counts delivery attempts; Error is the
// last delivery error ("" when sent).
type VerdictNotice struct {
	Sink             string    `json:"sink"`
	Kind             string    `json:"kind"`
	Candidate        string    `json:"candidate"`
	CandidateVersion string    `json:"candidate_version"`
	SetName          string    `json:"set_name"`
	Verdict          string    `json:"verdict"`
	Previous         string    `json:"previous"`
	Status           string    `json:"status"` // NoticePending, NoticeSent, NoticeFailed or NoticeDropped
	Notice           string    `json:"notice"`
	ChangedAt        time.Time `json:"changed_at"`
	Attempts         int32     `json:"attempts"`
	Error            string    `json:"error"`
}

// VerdictNotices keeps the verdict notifications' state, so a restart
// neither sends a notified change again nor misses one. The SQL stores
// implement it.
type VerdictNotices interface {
	// InsertVerdictNotices stores notices keyed by (Sink, Kind, Candidate,
	// CandidateVersion, SetName); a later write of a key replaces the
	// earlier one (pending → sent).
	InsertVerdictNotices(ctx context.Context, notices []VerdictNotice) error
	// VerdictNotices returns the last write of every key, at most
	// MaxVerdictNotices, ordered by key.
	VerdictNotices(ctx context.Context) ([]VerdictNotice, error)
}

// MaxVerdictNotices caps the keys VerdictNotices reads: one per sink,
// candidate version and regression set, so far more than a deployment has.
const MaxVerdictNotices = 100_000

var _ VerdictNotices = (*sqlStore)(nil)

// InsertVerdictNotices implements VerdictNotices.
func (s *sqlStore) InsertVerdictNotices(ctx context.Context, notices []VerdictNotice) error {
	return insert(ctx, s, "verdict_notices", notices)
}

// VerdictNotices implements VerdictNotices: one read under FINAL.
func (s *sqlStore) VerdictNotices(ctx context.Context) ([]VerdictNotice, error) {
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("store: verdict notices: %w", err)
	}
	rows, err := queryRows[VerdictNotice](ctx, s.t, fmt.Sprintf(
		"SELECT %s FROM %s.verdict_notices FINAL ORDER BY sink, kind, candidate, candidate_version, set_name LIMIT %d",
		selectList[VerdictNotice](), s.db, MaxVerdictNotices))
	if err != nil {
		return nil, fmt.Errorf("store: verdict notices: %w", err)
	}
	return rows, nil
}
