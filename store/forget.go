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
	// hidden. They select rows by the erasure's keys in forget_keys (the ids
	// of the subject's requests and runs, listed by the hash as a bound
	// parameter), so the mutation log keeps no subject hash; the keys are
	// deleted at the end. It returns once the old part files the deletions
	// replaced are gone from disk (SYSTEM START CLEANUP, waited for at most a
	// minute): no file of the data folder holds the rows any more. The report
	// counts both passes. An empty hash is an error; a hash with no rows
	// deletes nothing and is still audited. forgotten_subjects and audit_log
	// keep the hash: the workers and the audit need it.
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
	// DiskCleanupMs is how long the engine took, after the deletions, to
	// remove the old part files that still held the rows, ms.
	DiskCleanupMs int64 `json:"disk_cleanup_ms"`
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

// Kinds of forget_keys rows (migration 0130): the ids one erasure deletes.
const (
	keyRequest = "request"
	keyRun     = "run"
)

// forgetTables are the tables an erasure deletes from, in order, each with
// the column its rows are selected by and the kind of key that column holds.
var forgetTables = []struct{ table, col, kind string }{
	{"scores", "request_id", keyRequest},
	{"judgments", "request_id", keyRequest},
	{"reviews", "request_id", keyRequest},
	{"steps", "run_id", keyRun},
	{"runs", "request_id", keyRequest},
	{"shadow_work", "request_id", keyRequest},
	{"requests", "request_id", keyRequest},
}

// forgetDiskTimeout bounds how long ForgetSubject waits for the engine to
// remove the parts its deletions replaced.
const forgetDiskTimeout = time.Minute

// oldPartsLifetime is the old_parts_lifetime (s) of the tables forget deletes
// from: how long the engine keeps a part's old files after a deletion
// rewrote it (8 min by default on a ClickHouse server, 0 on chDB). One
// second still covers a merge's own hand-over of parts.
const oldPartsLifetime = "old_parts_lifetime = 1"

// forgetSettingStatements set oldPartsLifetime on forget_keys and every table
// of forgetTables whose CREATE statement (current, by table name; a table
// missing from it is set too) lacks it.
func (s *sqlStore) forgetSettingStatements(current map[string]string) []string {
	var out []string
	for _, t := range append([]string{"forget_keys"}, forgetTableNames()...) {
		if c, ok := current[t]; ok && strings.Contains(c, oldPartsLifetime) {
			continue
		}
		out = append(out, fmt.Sprintf("ALTER TABLE %s MODIFY SETTING %s", s.mutationTarget(t), oldPartsLifetime))
	}
	return out
}

// forgetTableNames are the tables of forgetTables.
func forgetTableNames() []string {
	out := make([]string, len(forgetTables))
	for i, t := range forgetTables {
		out[i] = t.table
	}
	return out
}

// applyForgetSettings runs forgetSettingStatements at every open, after the
// migrations: a table that forget deletes from gets the setting whatever
// migration created it.
func (s *sqlStore) applyForgetSettings(ctx context.Context) error {
	type row struct {
		Name   string `json:"name"`
		Create string `json:"create_table_query"`
	}
	rows, err := queryRows[row](ctx, s.t, "SELECT name, create_table_query FROM system.tables WHERE database = {db:String}", Params{}.Str("db", s.dbName))
	if err != nil {
		return fmt.Errorf("store: forget settings: read tables: %w", err)
	}
	current := map[string]string{}
	for _, r := range rows {
		current[strings.TrimSuffix(r.Name, localSuffix)] = r.Create
	}
	for _, stmt := range s.forgetSettingStatements(current) {
		if err := s.t.exec(ctx, stmt, nil); err != nil {
			return fmt.Errorf("store: forget settings: %s: %w", stmt, err)
		}
	}
	return nil
}

// keysOf is the subquery of an erasure's ids of one kind. It names the
// erasure by its random id: the mutation log (system.mutations, the
// mutation_*.txt files of each table) keeps the statement's text, which thus
// holds no subject hash and no request id.
func (s *sqlStore) keysOf(erasure, kind string) string {
	return fmt.Sprintf("SELECT id FROM %s.forget_keys WHERE erasure_id = %s AND kind = %s", s.db, quoteString(erasure), quoteString(kind))
}

// forgetStatement is the mutation deleting table's rows whose col is among the
// erasure's keys of kind, waited for on every replica. On a cluster it runs ON
// CLUSTER on the local tables, whose mutations may read the Distributed
// forget_keys only with allow_nondeterministic_mutations.
func (s *sqlStore) forgetStatement(table, col, kind, erasure string) string {
	settings := "mutations_sync = 2"
	if s.cluster != "" {
		settings += ", allow_nondeterministic_mutations = 1"
	}
	return fmt.Sprintf("ALTER TABLE %s DELETE WHERE %s IN (%s) SETTINGS %s", s.mutationTarget(table), col, s.keysOf(erasure, kind), settings)
}

// keyStatements record the erasure's keys: the requests carrying the
// subject's hash ({subject:String}, {erasure:String} bound), then the runs of
// every request keyed so far, which also finds a run that arrived after its
// request row was deleted. On a cluster the INSERT into the Distributed table
// waits for the shards.
func (s *sqlStore) keyStatements() []string {
	ins := "INSERT INTO " + s.db + ".forget_keys (erasure_id, kind, id)"
	if s.cluster != "" {
		ins += " SETTINGS insert_distributed_sync = 1"
	}
	return []string{
		fmt.Sprintf("%s SELECT {erasure:String}, '%s', request_id FROM %s.requests WHERE subject_hash = {subject:String}", ins, keyRequest, s.db),
		fmt.Sprintf("%s SELECT {erasure:String}, '%s', run_id FROM %s.runs WHERE request_id IN (SELECT id FROM %s.forget_keys WHERE erasure_id = {erasure:String} AND kind = '%s')",
			ins, keyRun, s.db, s.db, keyRequest),
	}
}

// forgetPass adds the subject's current requests and their runs to the
// erasure's keys, counts the rows they select per table, then deletes them.
// The parts active before the deletions are added to replaced: the deletions
// rewrite them, and their old files hold the rows until the engine removes
// them.
func (s *sqlStore) forgetPass(ctx context.Context, subjectHash, erasure string, replaced map[string]bool) (map[string]int64, error) {
	p := Params{}.Str("subject", subjectHash).Str("erasure", erasure)
	for _, st := range s.keyStatements() {
		if err := s.t.exec(ctx, st, p); err != nil {
			return nil, fmt.Errorf("store: forget: list the subject's requests and runs: %w", err)
		}
	}
	type count struct {
		N int64 `json:"n"`
	}
	counts := map[string]int64{}
	for _, t := range forgetTables {
		rows, err := queryRows[count](ctx, s.t, fmt.Sprintf("SELECT count() AS n FROM (SELECT 1 FROM %s.%s FINAL WHERE %s IN (%s))", s.db, t.table, t.col, s.keysOf(erasure, t.kind)))
		if err != nil {
			return nil, fmt.Errorf("store: forget: count %s: %w", t.table, err)
		}
		if len(rows) > 0 {
			counts[t.table] = rows[0].N
		}
	}
	var tables []string
	for _, t := range forgetTables {
		if counts[t.table] > 0 {
			tables = append(tables, t.table)
		}
	}
	if err := s.activeParts(ctx, tables, replaced); err != nil {
		return nil, err
	}
	for _, t := range forgetTables {
		if counts[t.table] == 0 {
			continue
		}
		if err := s.t.exec(ctx, s.forgetStatement(t.table, t.col, t.kind, erasure), nil); err != nil {
			return nil, fmt.Errorf("store: forget: delete from %s: %w", t.table, err)
		}
	}
	return counts, nil
}

// partsSource is system.parts of every node of the store.
func (s *sqlStore) partsSource() string {
	if s.cluster != "" {
		return "clusterAllReplicas(" + quoteString(s.cluster) + ", system.parts)"
	}
	return "system.parts"
}

// partKey names one part of one table (on a cluster, of one node's local table).
func partKey(table, name string) string { return table + "/" + name }

// localTable is the table holding table's parts: table itself, or its local
// table on a cluster.
func (s *sqlStore) localTable(table string) string {
	if s.cluster != "" {
		return table + localSuffix
	}
	return table
}

// parts returns the parts of tables (partKey), the active ones only with active set.
func (s *sqlStore) parts(ctx context.Context, tables []string, active bool) ([]string, error) {
	if len(tables) == 0 {
		return nil, nil
	}
	names := make([]string, len(tables))
	for i, t := range tables {
		names[i] = quoteString(s.localTable(t))
	}
	q := fmt.Sprintf("SELECT table, name FROM %s WHERE database = {db:String} AND table IN (%s)", s.partsSource(), strings.Join(names, ", "))
	if active {
		q += " AND active"
	}
	type part struct {
		Table string `json:"table"`
		Name  string `json:"name"`
	}
	rows, err := queryRows[part](ctx, s.t, q, Params{}.Str("db", s.dbName))
	if err != nil {
		return nil, fmt.Errorf("store: forget: list parts: %w", err)
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = partKey(r.Table, r.Name)
	}
	return out, nil
}

// activeParts adds the active parts of tables to into.
func (s *sqlStore) activeParts(ctx context.Context, tables []string, into map[string]bool) error {
	ps, err := s.parts(ctx, tables, true)
	for _, p := range ps {
		into[p] = true
	}
	return err
}

// dropReplacedParts waits until no part of replaced is on disk any more:
// after a deletion the engine keeps a rewritten part's old files, rows
// included, until its cleanup runs (every cleanup_delay_period, 30 s or more
// by default) and the part is older than old_parts_lifetime (8 min on a
// ClickHouse server by default). Opening the store sets old_parts_lifetime to
// 1 s on the tables forget deletes from (applyForgetSettings), and SYSTEM START CLEANUP, sent at
// every poll, wakes the cleanup at once; a part still read by a running
// query stays until that query ends. It polls every 50 ms for at most
// forgetDiskTimeout.
func (s *sqlStore) dropReplacedParts(ctx context.Context, tables []string, replaced map[string]bool) error {
	if len(replaced) == 0 {
		return nil
	}
	on := ""
	if s.cluster != "" {
		on = " ON CLUSTER " + quoteIdent(s.cluster)
	}
	deadline := time.Now().Add(forgetDiskTimeout)
	for {
		for _, t := range tables {
			// An engine that does not know the statement still cleans up every
			// cleanup_delay_period, within forgetDiskTimeout.
			_ = s.t.exec(ctx, "SYSTEM START CLEANUP"+on+" "+s.db+"."+quoteIdent(s.localTable(t)), nil)
		}
		ps, err := s.parts(ctx, tables, false)
		if err != nil {
			return err
		}
		left := 0
		for _, p := range ps {
			if replaced[p] {
				left++
			}
		}
		if left == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("store: forget: the rows are deleted, but %d replaced part(s) are still on disk after %s (a long query may hold them); forget again to wait again", left, forgetDiskTimeout)
		}
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("store: forget: waiting for the replaced parts to leave the disk (the rows are deleted): %w", ctx.Err())
		}
	}
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
	var id [16]byte
	_, _ = rand.Read(id[:])
	erasure := hex.EncodeToString(id[:])
	replaced := map[string]bool{}
	first, err := s.forgetPass(ctx, subjectHash, erasure, replaced)
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
	second, err := s.forgetPass(ctx, subjectHash, erasure, replaced)
	if err != nil {
		return ForgetReport{}, fmt.Errorf("store: forget: second sweep (the first pass is done; forget again to sweep): %w", err)
	}
	// The keys go too; then every part the deletions replaced leaves the disk.
	if err := s.activeParts(ctx, []string{"forget_keys"}, replaced); err != nil {
		return ForgetReport{}, err
	}
	if err := s.t.exec(ctx, fmt.Sprintf("ALTER TABLE %s DELETE WHERE erasure_id = %s SETTINGS mutations_sync = 2", s.mutationTarget("forget_keys"), quoteString(erasure)), nil); err != nil {
		return ForgetReport{}, fmt.Errorf("store: forget: drop the erasure's keys (the rows are deleted): %w", err)
	}
	tables := append([]string{"forget_keys"}, forgetTableNames()...)
	cleanupStart := time.Now()
	if err := s.dropReplacedParts(ctx, tables, replaced); err != nil {
		return ForgetReport{}, err
	}
	sum := func(t string) int64 { return first[t] + second[t] }
	_, _ = rand.Read(id[:])
	rep := ForgetReport{AuditID: hex.EncodeToString(id[:]), At: at,
		Requests: sum("requests"), Runs: sum("runs"), Steps: sum("steps"), Scores: sum("scores"), Work: sum("shadow_work"), Judgments: sum("judgments"),
		Reviews: sum("reviews"), DiskCleanupMs: time.Since(cleanupStart).Milliseconds()}
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
