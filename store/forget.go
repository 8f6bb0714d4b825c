package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ActionForget is the audit_log action of an erasure by data subject.
const ActionForget = "forget"

// SubjectEraser deletes a data subject's rows. The SQL store implements it.
type SubjectEraser interface {
	// ForgetSubject deletes every row of the requests whose subject_hash is
	// subjectHash, in every table (scores, steps, runs, shadow_work, then
	// requests), and
	// records an audit_log entry (the hash, the counts and actor; never the
	// subject's value). Deletions are ALTER … DELETE mutations waited for on
	// every replica (mutations_sync = 2): the rows are rewritten out of the
	// parts, not only hidden. An empty hash is an error; a hash with no rows
	// deletes nothing and is still audited.
	ForgetSubject(ctx context.Context, subjectHash, actor string) (ForgetReport, error)
	// AuditLog returns the audit entries, newest first, at most
	// ClampLimit(limit).
	AuditLog(ctx context.Context, limit int) ([]AuditEntry, error)
}

// ForgetReport says what ForgetSubject removed: rows per table (counted just
// before the deletion) and the audit entry's id and time.
type ForgetReport struct {
	AuditID  string    `json:"audit_id"`
	At       time.Time `json:"at"`
	Requests int64     `json:"requests"`
	Runs     int64     `json:"runs"`
	Steps    int64     `json:"steps"`
	Scores   int64     `json:"scores"`
	Work     int64     `json:"shadow_work"` // the store-first queue's work rows
}

// AuditEntry is one row of audit_log.
type AuditEntry struct {
	AuditID     string    `json:"audit_id" ch:"audit_id"`
	At          time.Time `json:"at" ch:"at"`
	Action      string    `json:"action" ch:"action"`
	Actor       string    `json:"actor" ch:"actor"`
	SubjectHash string    `json:"subject_hash" ch:"subject_hash"`
	Requests    int64     `json:"requests" ch:"requests"`
	Runs        int64     `json:"runs" ch:"runs"`
	Steps       int64     `json:"steps" ch:"steps"`
	Scores      int64     `json:"scores" ch:"scores"`
	Detail      string    `json:"detail" ch:"detail"`
}

var _ SubjectEraser = (*sqlStore)(nil)

// Subqueries naming a subject's rows; {subject:String} is bound.
const (
	subjectRequests = "SELECT request_id FROM %[1]s.requests WHERE subject_hash = {subject:String}"
	subjectRuns     = "SELECT run_id FROM %[1]s.runs WHERE request_id IN (" + subjectRequests + ")"
)

// forgetSQL returns, per table in deletion order, the condition selecting the
// subject's rows (without FINAL: every copy of a re-delivered row goes too).
func (s *sqlStore) forgetConditions() []struct{ table, cond string } {
	return []struct{ table, cond string }{
		{"scores", fmt.Sprintf("request_id IN ("+subjectRequests+")", s.db)},
		{"steps", fmt.Sprintf("run_id IN ("+subjectRuns+")", s.db)},
		{"runs", fmt.Sprintf("request_id IN ("+subjectRequests+")", s.db)},
		{"shadow_work", fmt.Sprintf("request_id IN ("+subjectRequests+")", s.db)},
		{"requests", "subject_hash = {subject:String}"},
	}
}

// forgetStatement is the mutation deleting the rows cond selects from table,
// waited for on every replica. On one node the hash is a bound parameter; ON
// CLUSTER it is written as a quoted literal, because the statement travels to
// the other nodes as text through the distributed DDL queue.
func (s *sqlStore) forgetStatement(table, cond, subjectHash string) (string, Params) {
	stmt := fmt.Sprintf("ALTER TABLE %s DELETE WHERE %s SETTINGS mutations_sync = 2", s.mutationTarget(table), cond)
	if s.cluster != "" {
		return strings.ReplaceAll(stmt, "{subject:String}", quoteString(subjectHash)), nil
	}
	return stmt, Params{}.Str("subject", subjectHash)
}

// ForgetSubject implements SubjectEraser.
func (s *sqlStore) ForgetSubject(ctx context.Context, subjectHash, actor string) (ForgetReport, error) {
	if err := s.check(ctx); err != nil {
		return ForgetReport{}, fmt.Errorf("store: forget: %w", err)
	}
	if subjectHash == "" {
		return ForgetReport{}, errors.New("store: forget: empty subject hash")
	}
	p := Params{}.Str("subject", subjectHash)
	type count struct {
		N int64 `json:"n"`
	}
	counts := map[string]int64{}
	conds := s.forgetConditions()
	for _, c := range conds {
		rows, err := queryRows[count](ctx, s.t, fmt.Sprintf("SELECT count() AS n FROM (SELECT 1 FROM %s.%s FINAL WHERE %s)", s.db, c.table, c.cond), p)
		if err != nil {
			return ForgetReport{}, fmt.Errorf("store: forget: count %s: %w", c.table, err)
		}
		if len(rows) > 0 {
			counts[c.table] = rows[0].N
		}
	}
	for _, c := range conds {
		if counts[c.table] == 0 {
			continue
		}
		stmt, sp := s.forgetStatement(c.table, c.cond, subjectHash)
		if err := s.t.exec(ctx, stmt, sp); err != nil {
			return ForgetReport{}, fmt.Errorf("store: forget: delete from %s: %w", c.table, err)
		}
	}
	var id [16]byte
	_, _ = rand.Read(id[:])
	rep := ForgetReport{AuditID: hex.EncodeToString(id[:]), At: time.Now().UTC().Truncate(time.Millisecond),
		Requests: counts["requests"], Runs: counts["runs"], Steps: counts["steps"], Scores: counts["scores"], Work: counts["shadow_work"]}
	entry := AuditEntry{AuditID: rep.AuditID, At: rep.At, Action: ActionForget, Actor: actor, SubjectHash: subjectHash,
		Requests: rep.Requests, Runs: rep.Runs, Steps: rep.Steps, Scores: rep.Scores, Detail: fmt.Sprintf("shadow_work=%d", rep.Work)}
	if err := insert(ctx, s, "audit_log", []AuditEntry{entry}); err != nil {
		return rep, fmt.Errorf("store: forget: rows deleted but the audit entry failed: %w", err)
	}
	return rep, nil
}

// AuditLog returns the audit entries, newest first, at most ClampLimit(limit).
func (s *sqlStore) AuditLog(ctx context.Context, limit int) ([]AuditEntry, error) {
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("store: audit log: %w", err)
	}
	rows, err := queryRows[AuditEntry](ctx, s.t, fmt.Sprintf("SELECT %s FROM %s.audit_log FINAL ORDER BY at DESC, audit_id DESC LIMIT {limit:UInt32}",
		selectList[AuditEntry](), s.db), Params{}.Int("limit", int64(ClampLimit(limit))))
	if err != nil {
		return nil, fmt.Errorf("store: audit log: %w", err)
	}
	return rows, nil
}
