package store_test

import (
	"context"
	"fmt"
	"testing"

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
