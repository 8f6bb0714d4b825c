package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLoadtestUsers runs `loadtest --users --json` on the shipped replay file
// against the in-process simulated pool with a tight per-model rate limit: one
// level per concurrency, 429s at the limit, and the table prints one row per
// level. Speeds are printed, not asserted.
func TestLoadtestUsers(t *testing.T) {
	cfg := NewDefaultConfig()
	o := usersOptions{
		Replay: filepath.Join("..", "..", "regression-sets", "replay", "production-350.jsonl"), Users: "1,2,4,8",
		Level: 300 * time.Millisecond, SimPool: true, SimSets: filepath.Join("..", "..", "regression-sets"),
		SimLatencyScale: 0.005, SimRPM: 120,
	}
	o.JSON = true
	var out bytes.Buffer
	if err := runUsersLoad(context.Background(), &out, cfg, o); err != nil {
		t.Fatal(err)
	}
	var rep UsersReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Levels) != 4 || rep.Candidate != "conductor" || !rep.Simulated {
		t.Fatalf("JSON report %+v", rep)
	}
	var table bytes.Buffer
	printUsersHeader(&table, rep)
	for _, l := range rep.Levels {
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
	var limited int64
	for _, l := range rep.Levels {
		if l.Requests == 0 || l.RateLimited < 0 {
			t.Errorf("level %d: %d requests, %d 429s", l.Users, l.Requests, l.RateLimited)
		}
		limited += l.RateLimited
	}
	if limited == 0 {
		t.Error("120 requests/min per model never answered 429 at 8 users")
	}
	for _, bad := range []usersOptions{{Users: "1,x", Replay: o.Replay, Level: time.Second}, {Users: "1", Level: time.Second}, {Users: "0", Replay: o.Replay, Level: time.Second}} {
		if err := runUsersLoad(context.Background(), &out, cfg, bad); err == nil {
			t.Errorf("%+v: want an error", bad)
		}
	}
}
