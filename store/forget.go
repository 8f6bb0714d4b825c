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
	// subjectHash, in every table (scores, judgments, reviews, steps, runs,
	// shadow_work, then requests), and records an audit_log entry (the hash, the counts and
	// actor; never the subject's value). In order:
	//
	//  1. a forgotten_subjects row (the hash, the time) is written first, so
	//     a shadow worker that looks the subject up from then on (ForgetLookup)
	//     drops the runs, steps and scores of the subject's requests instead
	//     of writing them;
	//  2. the first pass deletes the rows and keeps the forgotten request ids;
	//  3. after sweepAfter (the longest a record a worker handed to the writer
	//     before step 1 can take to reach the store: WriterConfig.MaxWriteDelay
	//     plus a margin; 0 sweeps at once) a second pass deletes what arrived
	//     meanwhile: rows of the subject's hash, of the request ids the first
	//     pass deleted, and steps of the run ids it deleted.
	//
	// Deletions are ALTER … DELETE mutations waited for on every replica
	// (mutations_sync = 2): the rows are rewritten out of the parts, not only
	// hidden. The report counts both passes. An empty hash is an error; a hash
	// with no rows deletes nothing and is still audited.
	ForgetSubject(ctx context.Context, subjectHash, actor string, sweepAfter time.Duration) (ForgetReport, error)
	// AuditLog returns the audit entries, newest first, at most
	// ClampLimit(limit).
	AuditLog(ctx context.Context, limit int) ([]AuditEntry, error)
}

// ForgetLookup tells the shadow workers whether a data subject was forgotten.
type ForgetLookup interface {
	// ForgottenAt returns the last time subjectHash was forgotten (UTC, ms),
	// or the zero time when it never was. Records of a request received at or
	// before that time must not be written.
	ForgottenAt(ctx context.Context, subjectHash string) (time.Time, error)
}

// ForgetReport says what ForgetSubject removed: rows per table (counted just
// before each deletion, both passes summed) and the audit entry's id and time.
type ForgetReport struct {
	AuditID  string    `json:"audit_id"`
	At       time.Time `json:"at"`
	Requests int64     `json:"requests"`
	Runs     int64     `json:"runs"`
	Steps    int64     `json:"steps"`
	Scores   int64     `json:"scores"`
	Work     int64     `json:"shadow_work"` // the store-first queue's work rows
	// Judgments counts the pairwise judgments of the subject's requests.
	Judgments int64 `json:"judgments"`
	// Reviews counts the human reviews of the subject's judged pairs.
	Reviews int64 `json:"reviews"`
	// Swept counts the rows (all tables) only the second pass found: written
	// by shadow work that was already under way when the erasure began.
	Swept int64 `json:"swept"`
}

// AuditEntry is one row of audit_log.
type AuditEntry struct {
	AuditID     string    `json:"audit_id"`
	At          time.Time `json:"at"`
	Action      string    `json:"action"`
	Actor       string    `json:"actor"`
	SubjectHash string    `json:"subject_hash"`
	Requests    int64     `json:"requests"`
	Runs        int64     `json:"runs"`
	Steps       int64     `json:"steps"`
	Scores      int64     `json:"scores"`
	Detail      string    `json:"detail"`
}

// ForgottenSubject is one row of forgotten_subjects (migration 0100).
type ForgottenSubject struct {
	SubjectHash string    `json:"subject_hash"`
	ForgottenAt time.Time `json:"forgotten_at"`
}

var (
	_ SubjectEraser = (*sqlStore)(nil)
	_ ForgetLookup  = (*sqlStore)(nil)
)

// subjectRequests is the subquery naming a subject's requests; {subject:String} is bound.
const subjectRequests = "SELECT request_id FROM %[1]s.requests WHERE subject_hash = {subject:String}"

// forgotten holds the ids a first pass deleted: its sweep deletes what
// arrives for them later (a run whose request row is gone, steps whose run
// row is gone).
type forgotten struct {
	requests, runs []string
}

// quoteList renders ids as a comma-separated list of string literals.
func quoteList(ids []string) string {
	quoted := make([]string, len(ids))
	for i, id := range ids {
		quoted[i] = quoteString(id)
	}
	return strings.Join(quoted, ", ")
}

// forgetConditions returns, per table in deletion order, the condition
// selecting the subject's rows (without FINAL: every copy of a re-delivered
// row goes too): the requests carrying the hash, and also the ids in kept (a
// sweep's: requests and runs deleted by the first pass, whose late runs or
// steps no longer have a row naming the subject).
func (s *sqlStore) forgetConditions(kept forgotten) []struct{ table, cond string } {
	reqs := fmt.Sprintf("request_id IN ("+subjectRequests+")", s.db)
	own := "subject_hash = {subject:String}"
	if len(kept.requests) > 0 {
		list := "request_id IN (" + quoteList(kept.requests) + ")"
		reqs = "(" + reqs + " OR " + list + ")"
		own = "(" + own + " OR " + list + ")"
	}
	steps := fmt.Sprintf("run_id IN (SELECT run_id FROM %s.runs WHERE %s)", s.db, reqs)
	if len(kept.runs) > 0 {
		steps = "(" + steps + " OR run_id IN (" + quoteList(kept.runs) + "))"
	}
	return []struct{ table, cond string }{
		{"scores", reqs},
		{"judgments", reqs},
		{"reviews", reqs},
		{"steps", steps},
		{"runs", reqs},
		{"shadow_work", reqs},
		{"requests", own},
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

// forgetPass counts, then deletes, the rows forgetConditions(kept) selects;
// it returns the counts per table and the ids of the requests and runs it
// deleted.
func (s *sqlStore) forgetPass(ctx context.Context, subjectHash string, kept forgotten) (map[string]int64, forgotten, error) {
	p := Params{}.Str("subject", subjectHash)
	type count struct {
		N int64 `json:"n"`
	}
	type idRow struct {
		ID string `json:"id"`
	}
	counts := map[string]int64{}
	conds := s.forgetConditions(kept)
	var gone forgotten
	for _, c := range conds {
		ids := map[string]*[]string{"requests": &gone.requests, "runs": &gone.runs}[c.table]
		if ids != nil {
			col := map[string]string{"requests": "request_id", "runs": "run_id"}[c.table]
			rows, err := queryRows[idRow](ctx, s.t, fmt.Sprintf("SELECT DISTINCT %s AS id FROM %s.%s WHERE %s", col, s.db, c.table, c.cond), p)
			if err != nil {
				return nil, forgotten{}, fmt.Errorf("store: forget: list %s: %w", c.table, err)
			}
			for _, r := range rows {
				*ids = append(*ids, r.ID)
			}
		}
		rows, err := queryRows[count](ctx, s.t, fmt.Sprintf("SELECT count() AS n FROM (SELECT 1 FROM %s.%s FINAL WHERE %s)", s.db, c.table, c.cond), p)
		if err != nil {
			return nil, forgotten{}, fmt.Errorf("store: forget: count %s: %w", c.table, err)
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
			return nil, forgotten{}, fmt.Errorf("store: forget: delete from %s: %w", c.table, err)
		}
	}
	return counts, gone, nil
}

// ForgetSubject implements SubjectEraser.
func (s *sqlStore) ForgetSubject(ctx context.Context, subjectHash, actor string, sweepAfter time.Duration) (ForgetReport, error) {
	if err := s.check(ctx); err != nil {
		return ForgetReport{}, fmt.Errorf("store: forget: %w", err)
	}
	if subjectHash == "" {
		return ForgetReport{}, errors.New("store: forget: empty subject hash")
	}
	at := time.Now().UTC().Truncate(time.Millisecond)
	if err := insert(ctx, s, "forgotten_subjects", []ForgottenSubject{{SubjectHash: subjectHash, ForgottenAt: at}}); err != nil {
		return ForgetReport{}, fmt.Errorf("store: forget: record the subject as forgotten: %w", err)
	}
	first, gone, err := s.forgetPass(ctx, subjectHash, forgotten{})
	if err != nil {
		return ForgetReport{}, err
	}
	if sweepAfter > 0 {
		t := time.NewTimer(sweepAfter)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ForgetReport{}, fmt.Errorf("store: forget: waiting for the second sweep (the first pass is done; forget again to sweep): %w", ctx.Err())
		}
	}
	second, _, err := s.forgetPass(ctx, subjectHash, gone)
	if err != nil {
		return ForgetReport{}, fmt.Errorf("store: forget: second sweep (the first pass is done; forget again to sweep): %w", err)
	}
	sum := func(t string) int64 { return first[t] + second[t] }
	var id [16]byte
	_, _ = rand.Read(id[:])
	rep := ForgetReport{AuditID: hex.EncodeToString(id[:]), At: at,
		Requests: sum("requests"), Runs: sum("runs"), Steps: sum("steps"), Scores: sum("scores"), Work: sum("shadow_work"), Judgments: sum("judgments"), Reviews: sum("reviews")}
	for _, n := range second {
		rep.Swept += n
	}
	entry := AuditEntry{AuditID: rep.AuditID, At: rep.At, Action: ActionForget, Actor: actor, SubjectHash: subjectHash,
		Requests: rep.Requests, Runs: rep.Runs, Steps: rep.Steps, Scores: rep.Scores,
		Detail: fmt.Sprintf("shadow_work=%d judgments=%d reviews=%d swept=%d", rep.Work, rep.Judgments, rep.Reviews, rep.Swept)}
	if err := insert(ctx, s, "audit_log", []AuditEntry{entry}); err != nil {
		return rep, fmt.Errorf("store: forget: rows deleted but the audit entry failed: %w", err)
	}
	return rep, nil
}

// ForgottenAt implements ForgetLookup: one read of forgotten_subjects by its
// sort key.
func (s *sqlStore) ForgottenAt(ctx context.Context, subjectHash string) (time.Time, error) {
	if err := s.check(ctx); err != nil {
		return time.Time{}, fmt.Errorf("store: forgotten at: %w", err)
	}
	type row struct {
		N  int64 `json:"n"`
		Ms int64 `json:"ms"`
	}
	rows, err := queryRows[row](ctx, s.t, fmt.Sprintf("SELECT count() AS n, toUnixTimestamp64Milli(max(forgotten_at)) AS ms FROM %s.forgotten_subjects WHERE subject_hash = {subject:String}", s.db),
		Params{}.Str("subject", subjectHash))
	if err != nil {
		return time.Time{}, fmt.Errorf("store: forgotten at: %w", err)
	}
	if len(rows) == 0 || rows[0].N == 0 {
		return time.Time{}, nil
	}
	return time.UnixMilli(rows[0].Ms).UTC(), nil
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
