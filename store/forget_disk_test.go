package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// filesHolding returns the files under dir whose bytes contain needle.
func filesHolding(t *testing.T, dir string, needle []byte) []string {
	t.Helper()
	var hits []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil // the engine removed it while we walked
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if bytes.Contains(b, needle) {
			hits = append(hits, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

// Once forget returns, no file of the data folder holds the subject's text
// (the old parts its deletions replaced are gone, not only hidden), and the
// mutation log names neither the subject's hash nor its request ids; only
// forgotten_subjects and audit_log keep the hash, by design.
func TestForgetLeavesNothingOnDisk(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	unique := func(prefix string) string {
		var b [16]byte
		_, _ = rand.Read(b[:])
		return prefix + hex.EncodeToString(b[:])
	}
	planted, hash, reqID := unique("PLANTED"), unique("subjecthash"), unique("req-")
	other := unique("KEPT")
	at := time.Now().UTC().Truncate(time.Millisecond)
	reqs := []Request{
		{RequestID: reqID, ReceivedAt: at, Source: SourceTap, App: "a", SubjectHash: hash,
			Input: `[{"role":"user","content":"` + planted + ` in the request"}]`},
		{RequestID: "req-other", ReceivedAt: at, Source: SourceTap, App: "a", SubjectHash: "another-subject",
			Input: `[{"role":"user","content":"` + other + `"}]`},
	}
	run := Run{RunID: reqID + "/cand", RequestID: reqID, Pipeline: "conductor", Mode: ModeCandidate, Status: StatusOK,
		StartedAt: at, FinalOutput: planted + " in the answer"}
	step := Step{RunID: run.RunID, Index: 0, Parent: -1, Role: "worker", Worker: "w0", Model: "m", StartedAt: at, Status: StatusOK,
		Messages: `[{"role":"user","content":"` + planted + ` in a step"}]`, Output: planted + " in a step's output"}
	score := Score{RunID: run.RunID, RequestID: reqID, Pipeline: "conductor", Grader: "judge", Explanation: planted + " in a grade", CreatedAt: at}
	if err := s.InsertRequests(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertRuns(ctx, []Run{run}); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertSteps(ctx, []Step{step}); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertScores(ctx, []Score{score}); err != nil {
		t.Fatal(err)
	}
	// Every table forget deletes from lets the replaced parts go 1 s after.
	for _, name := range append([]string{"forget_keys"}, forgetTableNames()...) {
		res, err := s.t.queryText(ctx, "SELECT create_table_query FROM system.tables WHERE database = "+quoteString(s.dbName)+" AND name = "+quoteString(name))
		if err != nil || len(res.Rows) != 1 || !strings.Contains(res.Rows[0][0], oldPartsLifetime) {
			t.Errorf("table %s lacks %s after open: %v %v", name, oldPartsLifetime, res.Rows, err)
		}
	}
	// The probe can fail: the text is on disk before.
	if hits := filesHolding(t, testEngine.dir, []byte(planted)); len(hits) < 4 {
		t.Fatalf("the planted text is in %d files before forget (%v); want the parts of requests, runs, steps and scores", len(hits), hits)
	}
	start := time.Now()
	rep, err := s.ForgetSubject(ctx, hash, "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("forget returned after %v, %d ms of it waiting for the old parts to leave the disk; report %+v", time.Since(start).Round(time.Millisecond), rep.DiskCleanupMs, rep)
	if rep.Requests != 1 || rep.Runs != 1 || rep.Steps != 1 || rep.Scores != 1 {
		t.Errorf("report %+v; want one row of each table", rep)
	}
	if hits := filesHolding(t, testEngine.dir, []byte(planted)); len(hits) != 0 {
		t.Errorf("after forget returned the subject's text is still on disk in %v", hits)
	}
	if hits := filesHolding(t, testEngine.dir, []byte(other)); len(hits) == 0 {
		t.Error("another subject's request left the disk too")
	}
	// The mutation log: its statements name the erasure, not the subject.
	res, err := s.t.queryText(ctx, "SELECT table, command FROM system.mutations WHERE database = "+quoteString(s.dbName))
	if err != nil {
		t.Fatal(err)
	}
	deletes := 0
	for _, r := range res.Rows {
		if strings.Contains(r[1], "DELETE") {
			deletes++
		}
		if strings.Contains(r[1], hash) || strings.Contains(r[1], reqID) {
			t.Errorf("system.mutations of %s keeps the subject: %s", r[0], r[1])
		}
	}
	if deletes < 5 {
		t.Errorf("system.mutations holds %d deletions; want those of forget (the check above must see them): %v", deletes, res.Rows)
	}
	// On disk, the hash is only in the two tables that keep it by design.
	keep := map[string]bool{}
	for _, name := range []string{"forgotten_subjects", "audit_log"} {
		res, err := s.t.queryText(ctx, "SELECT arrayJoin(data_paths) FROM system.tables WHERE database = "+quoteString(s.dbName)+" AND name = "+quoteString(name))
		if err != nil || len(res.Rows) == 0 {
			t.Fatalf("data path of %s: %v %v", name, res.Rows, err)
		}
		keep[filepath.Clean(res.Rows[0][0])] = true
	}
	for _, f := range filesHolding(t, testEngine.dir, []byte(hash)) {
		kept := false
		for dir := range keep {
			kept = kept || strings.HasPrefix(f, dir+string(filepath.Separator))
		}
		if !kept {
			t.Errorf("the subject's hash is on disk outside forgotten_subjects and audit_log: %s", f)
		}
	}
	var n []string
	if res, err := s.t.queryText(ctx, "SELECT count() FROM "+s.db+".forget_keys"); err != nil || len(res.Rows) == 0 {
		t.Fatal(err)
	} else {
		n = res.Rows[0]
	}
	if n[0] != "0" {
		t.Errorf("forget_keys keeps %s ids after the erasure", n[0])
	}
}
