package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/eval/notify"
	"github.com/conductor-shadow/conductor-shadow/store/storetest"
)

// On a running serve, a suite run's verdict reaches the webhook with a link to
// its suite run page, and a receiver that does not answer never holds the
// suite run up: the suite's answer comes back while the receiver still holds
// the notice (the attempt's timeout is an hour). The second suite run sends
// only when its verdict differs from the first. /metrics and /readyz show the
// notifier's counters, and the live verdicts are read from the real store.
func TestServeNotifiesVerdictChanges(t *testing.T) {
	storetest.RequireEngine(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pool := simulatedPool(t, 0)

	release := make(chan struct{})
	var mu sync.Mutex
	var bodies [][]byte
	var answered atomic.Int64
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, b)
		mu.Unlock()
		select { // hold the notice until the test lets go
		case <-release:
		case <-r.Context().Done():
			return
		}
		answered.Add(1)
	}))
	defer hook.Close()
	released := sync.OnceFunc(func() { close(release) })
	defer released()
	received := func() [][]byte {
		mu.Lock()
		defer mu.Unlock()
		return append([][]byte(nil), bodies...)
	}

	addr := freeAddr(t)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.yaml")
	writeFile(t, cfgPath, "suite:\n  set: ../../regression-sets/gsm8k-150.jsonl\n  report_dir: "+filepath.Join(dir, "reports")+
		"\n  concurrency: 4\nwriter:\n  flush_interval: 50ms\nnotify:\n  base_url: https://shadow.example.com/\n  webhook:\n    url_env: NOTIFY_HOOK\n"+
		"  timeout: 1h\n  live_interval: 1s\n")
	t.Setenv("CONDUCTOR_SHADOW_ADDR", addr)
	t.Setenv("CONDUCTOR_SHADOW_DATA", filepath.Join(dir, "data"))
	t.Setenv("CONDUCTOR_SHADOW_POOL_URL", pool.URL+"/v1")
	t.Setenv("NOTIFY_HOOK", hook.URL+"/services/T0/B0/s3cr3t")

	serveDone := make(chan error, 1)
	go func() { serveDone <- run(ctx, []string{"--config", cfgPath, "serve"}, io.Discard, io.Discard) }()
	waitHTTP(t, "http://"+addr+"/healthz", serveDone)

	cli(t, ctx, cfgPath, "suite", "run", "--limit", "3") // returns although the receiver answers nothing
	deadline := time.Now().Add(30 * time.Second)
	for len(received()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no notice reached the webhook")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if answered.Load() != 0 {
		t.Fatal("the receiver answered before it was released")
	}
	rows := strings.Split(strings.TrimSpace(cli(t, ctx, cfgPath, "query", "SELECT suite_run_id, verdict FROM suite_runs FINAL ORDER BY started_at")), "\n")
	first := strings.Split(rows[len(rows)-1], "\t")
	var m notify.SlackMessage
	if err := json.Unmarshal(received()[0], &m); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{first[1] + ": conductor (version ", "on gsm8k-150, first suite verdict", "https://shadow.example.com/suite-runs/" + first[0]} {
		if !strings.Contains(m.Text, want) {
			t.Errorf("notice lacks %q:\n%s", want, m.Text)
		}
	}
	released()

	waitMetric := func(line string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(get(t, "http://"+addr+"/metrics"), line) {
			if time.Now().After(deadline) {
				t.Fatalf("/metrics never showed %q", line)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitMetric(`conductor_shadow_notify_notices_total{outcome="sent",sink="webhook"} 1`)

	cli(t, ctx, cfgPath, "suite", "run", "--limit", "3")
	rows = strings.Split(strings.TrimSpace(cli(t, ctx, cfgPath, "query", "SELECT suite_run_id, verdict FROM suite_runs FINAL ORDER BY started_at")), "\n")
	second := strings.Split(rows[len(rows)-1], "\t")
	// The verdict is offered before the suite run answers; deciding it takes
	// a moment more.
	waitMetric("conductor_shadow_notify_verdicts_offered_total 2\n")
	wantSent := "1"
	if second[1] != first[1] {
		wantSent = "2"
		waitMetric(`conductor_shadow_notify_notices_total{outcome="sent",sink="webhook"} 2`)
	} else {
		time.Sleep(time.Second) // a wrong second notice would be sent by now
	}
	metrics := get(t, "http://"+addr+"/metrics")
	for _, want := range []string{
		`conductor_shadow_notify_notices_total{outcome="decided",sink="webhook"} ` + wantSent,
		`conductor_shadow_notify_notices_total{outcome="failed",sink="webhook"} 0`,
		`conductor_shadow_notify_verdicts_dropped_total{reason="outbox_full"} 0`,
		`conductor_shadow_notify_live_read_failures_total 0`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if got := len(received()); got != map[string]int{"1": 1, "2": 2}[wantSent] {
		t.Errorf("%d notices for verdicts %s then %s", got, first[1], second[1])
	}
	if body := get(t, "http://"+addr+"/readyz"); !strings.Contains(body, `"status":"ready"`) || strings.Contains(body, "notify") {
		t.Errorf("/readyz with healthy notifications = %s", body)
	}

	cancel()
	select {
	case err := <-serveDone:
		if err != nil {
			t.Fatalf("serve stopped with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop after its context ended")
	}
}
