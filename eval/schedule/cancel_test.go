package schedule

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A scheduled suite run stopped by Shutdown is logged as cancelled, not as a
// failure, and is not recorded as run; a failed one is logged as a failure and
// recorded.
func TestFireCancelledIsNotAFailure(t *testing.T) {
	for _, tc := range []struct {
		name     string
		stop     bool
		log      string
		recorded bool
	}{
		{"stopped", true, "scheduled suite run cancelled", false},
		{"failed", false, "scheduled suite run failed", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "state.json")
			cfg := Config{StateFile: state, Suites: []Suite{{Name: "nightly", Set: "s.jsonl"}}}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			run := func(ctx context.Context, s Suite) (string, error) {
				if tc.stop {
					cancel()
					return "suite-1", ctx.Err()
				}
				return "suite-1", errors.New("store unreachable")
			}
			var logs bytes.Buffer
			s, err := New(cfg, run, slog.New(slog.NewTextHandler(&logs, nil)))
			if err != nil {
				t.Fatal(err)
			}
			s.state = map[string]time.Time{}
			s.fire(ctx, cfg.Suites[0])
			if !strings.Contains(logs.String(), tc.log) {
				t.Errorf("log %q, want %q", logs.String(), tc.log)
			}
			st, err := readState(state)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := st["nightly"]; ok != tc.recorded {
				t.Errorf("recorded as run: %v, want %v", ok, tc.recorded)
			}
		})
	}
}
