package main

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/store/storetest"
)

// engine is the real embedded engine the intake tests store into, a
// database per test (engine.Open).
var engine *storetest.Engine

// generateChildEnv marks a child process of TestGenerateOnlyIntoANewFolder:
// generate opens an engine on a folder of its own, and the engine allows one
// data folder per process, so that test runs without the shared engine.
const generateChildEnv = "CONDUCTOR_SHADOW_TEST_GENERATE_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(generateChildEnv) != "" {
		os.Exit(m.Run())
	}
	engine = storetest.StartEngine()
	code := m.Run()
	engine.Close()
	os.Exit(code)
}

// TestIntakePaths runs the durable-intake load on each path into the real
// embedded engine: every copy is answered 202 and stored with its incumbent
// run, exactly one candidate run each, nothing lost, and the figures are
// the ones counted.
func TestIntakePaths(t *testing.T) {
	st := engine.Open(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const n = 300
	for _, path := range intakePaths {
		r, err := runIntake(ctx, st, store.NewDefaultWriterConfig(), intakeOptions{Path: path, Exchanges: n, Senders: 16, BatchSize: 50}, nil)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if r.Accepted != n || r.Stored != n || r.Processed != n || r.Lost != 0 || r.WriterRows != 3*n {
			t.Errorf("%s: %+v; want %d accepted, stored and shadowed, 0 lost, %d writer rows (run, step, work mark each)", path, r, n, 3*n)
		}
		if r.AcceptedPerSecond() <= 0 || r.CPUPer1000() <= 0 {
			t.Errorf("%s: figures %.0f/s, %.3f CPU s per 1,000; want both counted", path, r.AcceptedPerSecond(), r.CPUPer1000())
		}
	}
	res, err := st.Query(ctx, `SELECT
		(SELECT count() FROM requests FINAL WHERE startsWith(request_id, 'load-')),
		(SELECT count() FROM runs FINAL WHERE mode = 'incumbent' AND startsWith(request_id, 'load-')),
		(SELECT count() FROM runs FINAL WHERE mode = 'candidate' AND startsWith(request_id, 'load-')),
		(SELECT countIf(status = 'pending') FROM shadow_work FINAL WHERE startsWith(request_id, 'load-'))`)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprint(len(intakePaths) * n)
	if got := res.Rows[0]; got[0] != want || got[1] != want || got[2] != want || got[3] != "0" {
		t.Errorf("stored requests, incumbent runs, candidate runs, pending work = %v; want %s, %s, %s, 0", got, want, want, want)
	}
}
