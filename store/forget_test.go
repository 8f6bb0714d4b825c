package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/store/storetest"
)

// forget removes every row of one subject's requests in every table, keeps
// the other subjects' rows, and writes an audit entry without the value.
func TestForgetSubject(t *testing.T) {
	st := store.OpenTestStore(t)
	s := st.(store.SubjectEraser)
	ctx := context.Background()
	subjects := map[string]string{"req-alice-1": "hash-alice", "req-alice-2": "hash-alice", "req-bob-1": "hash-bob", "req-none": ""}
	for id, h := range subjects {
		f := storetest.NewFixture(id, storetest.T0())
		f.Request.SubjectHash = h
		for i := range f.Scores {
			f.Scores[i].RequestID = id
		}
		if err := f.Insert(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	counts := func() map[string]int64 {
		out := map[string]int64{}
		for _, q := range []struct{ table, sql string }{
			{"requests", "SELECT count() FROM requests WHERE request_id LIKE 'req-alice%'"},
			{"runs", "SELECT count() FROM runs WHERE request_id LIKE 'req-alice%'"},
			{"steps", "SELECT count() FROM steps WHERE run_id IN (SELECT run_id FROM runs WHERE request_id LIKE 'req-alice%')"},
			{"scores", "SELECT count() FROM scores WHERE request_id LIKE 'req-alice%'"},
			{"others", "SELECT (SELECT count() FROM requests WHERE request_id NOT LIKE 'req-alice%') + (SELECT count() FROM runs WHERE request_id NOT LIKE 'req-alice%') + (SELECT count() FROM scores WHERE request_id NOT LIKE 'req-alice%')"},
		} {
			res, err := st.Query(ctx, q.sql)
			if err != nil {
				t.Fatal(err)
			}
			var n int64
			fmt.Sscan(res.Rows[0][0], &n)
			out[q.table] = n
		}
		return out
	}
	before := counts()
	if before["requests"] != 2 || before["runs"] == 0 || before["steps"] == 0 || before["scores"] == 0 {
		t.Fatalf("fixture rows %v", before)
	}
	rep, err := s.ForgetSubject(ctx, "hash-alice", "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Requests != before["requests"] || rep.Runs != before["runs"] || rep.Steps != before["steps"] || rep.Scores != before["scores"] {
		t.Errorf("report %+v; rows were %v", rep, before)
	}
	after := counts()
	if after["requests"]+after["runs"]+after["steps"]+after["scores"] != 0 {
		t.Errorf("subject rows left: %v", after)
	}
	if after["others"] != before["others"] || before["others"] == 0 {
		t.Errorf("other subjects' rows %d before, %d after", before["others"], after["others"])
	}
	if _, err := st.GetTrace(ctx, "req-bob-1"); err != nil {
		t.Errorf("bob's trace: %v", err)
	}
	log, err := s.AuditLog(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 1 || log[0].Action != store.ActionForget || log[0].SubjectHash != "hash-alice" || log[0].Requests != 2 || log[0].AuditID != rep.AuditID {
		t.Errorf("audit log %+v", log)
	}
	again, err := s.ForgetSubject(ctx, "hash-alice", "test", 0)
	if err != nil || again.Requests+again.Runs+again.Steps+again.Scores != 0 {
		t.Errorf("second forget %+v, %v", again, err)
	}
	if _, err := s.ForgetSubject(ctx, "", "test", 0); err == nil {
		t.Error("empty hash accepted")
	}
}

// A candidate run written after forget's first pass (by shadow work already
// under way, after its request row is gone) is removed by the second sweep;
// ForgottenAt tells the erasure's time from then on, and another subject's
// rows stay.
func TestForgetSweepsRunsWrittenDuringTheErasure(t *testing.T) {
	st := store.OpenTestStore(t)
	s := st.(store.SubjectEraser)
	look := st.(store.ForgetLookup)
	ctx := context.Background()
	for id, h := range map[string]string{"req-ada": "hash-ada", "req-bob": "hash-bob"} {
		f := storetest.NewFixture(id, storetest.T0())
		f.Request.SubjectHash = h
		f.Runs, f.Steps = f.Runs[:1], nil // the incumbent run only: the candidates are still running
		if err := f.Insert(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	if at, err := look.ForgottenAt(ctx, "hash-ada"); err != nil || !at.IsZero() {
		t.Fatalf("ForgottenAt before any forget = %v, %v; want the zero time", at, err)
	}
	count := func(sql string) int64 {
		t.Helper()
		res, err := st.Query(ctx, sql)
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		fmt.Sscan(res.Rows[0][0], &n)
		return n
	}
	type result struct {
		rep store.ForgetReport
		err error
	}
	count("SELECT 1") // the console's worker starts now, not within the sweep's 3 s
	done := make(chan result, 1)
	go func() {
		rep, err := s.ForgetSubject(ctx, "hash-ada", "test", 3*time.Second)
		done <- result{rep, err}
	}()
	// Wait for the first pass: the subject is recorded and its request gone.
	deadline := time.Now().Add(30 * time.Second)
	for {
		at, err := look.ForgottenAt(ctx, "hash-ada")
		if err != nil {
			t.Fatal(err)
		}
		if !at.IsZero() && count("SELECT count() FROM requests WHERE request_id = 'req-ada'") == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("forget's first pass did not finish in 30 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The candidate run that was in flight lands now, with its steps.
	late := storetest.NewFixture("req-ada", storetest.T0())
	if err := st.InsertRuns(ctx, late.Runs[1:]); err != nil {
		t.Fatal(err)
	}
	if err := st.InsertSteps(ctx, late.Steps); err != nil {
		t.Fatal(err)
	}
	// Every late row goes, the steps of the run the first pass deleted too
	// (the writer inserts runs before steps: a pass can fall between them).
	lateRows := int64(len(late.Runs)-1) + int64(len(late.Steps))
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if got := count("SELECT (SELECT count() FROM runs WHERE request_id = 'req-ada') + (SELECT count() FROM steps WHERE run_id LIKE 'req-ada/%')"); got != 0 {
		t.Errorf("%d runs and steps of the forgotten request left after the sweep", got)
	}
	if r.rep.Swept != lateRows || r.rep.Requests != 1 {
		t.Errorf("report %+v; want 1 request and %d rows swept", r.rep, lateRows)
	}
	if got := count("SELECT (SELECT count() FROM requests WHERE request_id = 'req-bob') + (SELECT count() FROM runs WHERE request_id = 'req-bob')"); got != 2 {
		t.Errorf("another subject's request and run: %d rows, want 2", got)
	}
	if at, err := look.ForgottenAt(ctx, "hash-ada"); err != nil || !at.Equal(r.rep.At) {
		t.Errorf("ForgottenAt = %v, %v; want the erasure's time %v", at, err, r.rep.At)
	}
	if at, err := look.ForgottenAt(ctx, "hash-bob"); err != nil || !at.IsZero() {
		t.Errorf("ForgottenAt of a subject never forgotten = %v, %v", at, err)
	}
}
