package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/cmd/internal/platform"
)

// usersRun runs `loadtest --users --json` against the in-process simulated
// pool and decodes the report.
func usersRun(t *testing.T, o usersOptions) UsersReport {
	t.Helper()
	o.Replay = filepath.Join("..", "..", "regression-sets", "replay", "production-350.jsonl")
	o.SimPool, o.SimSets, o.JSON = true, filepath.Join("..", "..", "regression-sets"), true
	var out bytes.Buffer
	if err := runUsersLoad(context.Background(), &out, platform.NewDefaultConfig(), o); err != nil {
		t.Fatal(err)
	}
	var rep UsersReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestLoadtestUsers runs `loadtest --users` on the shipped replay file against
// the in-process simulated pool. Without a rate limit the pool's simulated
// latency bounds each closed-loop user, so the requests completed in a fixed
// window rise from 1 to 2 to 4 users (counts, not timings of our own code);
// with a tight per-model limit the pool answers 429 and the pipeline retries.
// The table prints one row per level.
func TestLoadtestUsers(t *testing.T) {
	rep := usersRun(t, usersOptions{Users: "1,2,4", Level: 1500 * time.Millisecond, SimLatencyScale: 0.001})
	if len(rep.Levels) != 3 || rep.Candidate != "conductor" || !rep.Simulated {
		t.Fatalf("JSON report %+v", rep)
	}
	for i, l := range rep.Levels {
		t.Logf("%d users: %d completed of %d in the window, %d 429s", l.Users, l.Completed, l.Requests, l.RateLimited)
		if l.RateLimited != 0 {
			t.Errorf("%d users: %d 429s from a pool without a rate limit", l.Users, l.RateLimited)
		}
		if i > 0 && l.Completed <= rep.Levels[i-1].Completed {
			t.Errorf("throughput does not grow with users: %d completed at %d users, %d at %d",
				rep.Levels[i-1].Completed, rep.Levels[i-1].Users, l.Completed, l.Users)
		}
	}

	limited := usersRun(t, usersOptions{Users: "8", Level: time.Second, SimLatencyScale: 0.001, SimRPM: 60})
	if len(limited.Levels) != 1 || limited.SimRPM != 60 {
		t.Fatalf("rate-limited report %+v", limited)
	}
	l := limited.Levels[0]
	t.Logf("8 users at 60 requests/min per model: %d completed, %d 429s, %d retries", l.Completed, l.RateLimited, l.Retries)
	if l.RateLimited == 0 || l.Retries == 0 {
		t.Errorf("60 requests/min per model at 8 users: %d 429s, %d retries; want both", l.RateLimited, l.Retries)
	}

	var table bytes.Buffer
	printUsersHeader(&table, rep)
	for _, l := range append(rep.Levels, l) {
		printUsersLevel(&table, l)
	}
	t.Log("\n" + table.String())
	lines := strings.Split(strings.TrimSpace(table.String()), "\n")
	if len(lines) != 2+4 || !strings.Contains(lines[0], "SIMULATED") || !strings.Contains(lines[1], "req/s") {
		t.Fatalf("want a header, a column line and 4 level rows:\n%s", table.String())
	}
	for i, want := range []string{"1", "2", "4", "8"} {
		if f := strings.Fields(lines[2+i]); len(f) != 12 || f[0] != want {
			t.Errorf("row %d = %q", i, lines[2+i])
		}
	}
	cfg := platform.NewDefaultConfig()
	for _, bad := range []usersOptions{{Users: "1,x", Replay: "r", Level: time.Second}, {Users: "1", Level: time.Second}, {Users: "0", Replay: "r", Level: time.Second}} {
		if err := runUsersLoad(context.Background(), &table, cfg, bad); err == nil {
			t.Errorf("%+v: want an error", bad)
		}
	}
}
