package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/eval/gate"
	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/store/storetest"
)

// engine is the real embedded engine the tests keep the notified state in,
// a database per test.
var engine *storetest.Engine

func TestMain(m *testing.M) {
	engine = storetest.StartEngine()
	engine.VerifyTestMain(m)
}

// receiver is a webhook receiver: it records every request and answers
// with answer(i) for the i-th (nil: 200 "ok").
type receiver struct {
	srv    *httptest.Server
	answer func(i int, w http.ResponseWriter, r *http.Request)

	mu       sync.Mutex
	bodies   [][]byte
	times    []time.Time
	ctypes   []string
	requests atomic.Int64
}

func newReceiver(t *testing.T, answer func(i int, w http.ResponseWriter, r *http.Request)) *receiver {
	rc := &receiver{answer: answer}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		i := len(rc.bodies)
		rc.bodies = append(rc.bodies, body)
		rc.times = append(rc.times, time.Now())
		rc.ctypes = append(rc.ctypes, r.Header.Get("Content-Type"))
		rc.mu.Unlock()
		rc.requests.Add(1)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if rc.answer != nil {
			rc.answer(i, w, r)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

// url is the receiver's address with a secret path, as a Slack
// incoming-webhook URL carries its token.
func (rc *receiver) url() string { return rc.srv.URL + "/services/T0/B0/s3cr3t-token" }

// messages decodes the bodies received so far.
func (rc *receiver) messages(t *testing.T) []SlackMessage {
	t.Helper()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := make([]SlackMessage, len(rc.bodies))
	for i, b := range rc.bodies {
		if err := json.Unmarshal(b, &out[i]); err != nil {
			t.Fatalf("body %d is not JSON: %v\n%s", i, err, b)
		}
	}
	return out
}

// subjects are the first lines of the messages received so far.
func (rc *receiver) subjects(t *testing.T) []string {
	var out []string
	for _, m := range rc.messages(t) {
		first, _, _ := strings.Cut(m.Text, "\n")
		out = append(out, first)
	}
	return out
}

// testConfig sends to the webhook in $HOOK with fast retries and no live reads.
func testConfig() Config {
	c := NewDefaultConfig()
	c.BaseURL = "https://shadow.example.com/ui/"
	c.Webhook.URLEnv = "HOOK"
	c.LiveInterval = 0
	c.Timeout = 5 * time.Second
	c.Retry = RetryConfig{InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, MaxElapsed: 10 * time.Second}
	return c
}

func env(kv ...string) Option {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return WithEnv(func(k string) string { return m[k] })
}

// startNotifier builds and starts a notifier, shut down when t ends.
func startNotifier(t *testing.T, cfg Config, st store.VerdictNotices, opts ...Option) *Notifier {
	t.Helper()
	n, err := New(cfg, st, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Shutdown(context.Background()) })
	return n
}

func notices(t *testing.T, st store.Store) store.VerdictNotices {
	t.Helper()
	vn := store.NewRoles(st).VerdictNotices
	if vn == nil {
		t.Fatal("the store has no store.VerdictNotices")
	}
	return vn
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var at = time.Date(2026, 3, 2, 6, 0, 0, 0, time.UTC)

func suiteState(candidate, version, set string, v gate.Status) VerdictState {
	return VerdictState{Kind: KindSuite, Candidate: candidate, Version: version, Set: set, Verdict: v,
		Headline: set + ": " + string(v), Page: "/suite-runs/sr-" + set, At: at}
}

func liveState(candidate, version string, v gate.Status) VerdictState {
	return VerdictState{Kind: KindLive, Candidate: candidate, Version: version, Verdict: v,
		Headline: candidate + " on live traffic: " + string(v), Page: "/overview", At: at}
}

// A suite verdict's first notice is Slack-compatible JSON whose text holds
// the whole notice (for receivers that read only "text") and whose blocks
// carry the header, the change with the headline, the failing gates first
// and a button to the suite run page; mrkdwn text is escaped.
func TestSuiteVerdictSendsSlackPayload(t *testing.T) {
	rc := newReceiver(t, nil)
	n := startNotifier(t, testConfig(), notices(t, engine.Open(t)), env("HOOK", rc.url()))
	st := VerdictState{Kind: KindSuite, Candidate: "conductor", Version: "3f9a0b1c2d3e", Set: "gsm8k-150", Verdict: gate.Fail,
		Headline: "gsm8k-150 (150 cases): conductor 71.3% vs single:gpt-5 78.0% <worse> & slower",
		Gates: []Gate{
			{Name: "quality", Status: gate.Fail, Reason: "worse: upper bound -4.1 pts < -3.0 pts (Tango score interval, paired pass/fail)"},
			{Name: "latency", Status: gate.Inconclusive, Reason: "p95 latency ratio 1.300, interval [1.100, 1.500] straddles 1.250"},
		},
		Page: "/suite-runs/sr%2F1", At: at}
	n.Offer(st)
	waitFor(t, "the webhook", func() bool { return rc.requests.Load() == 1 })

	m := rc.messages(t)[0]
	link := "https://shadow.example.com/ui/suite-runs/sr%2F1"
	for _, want := range []string{
		"FAIL: conductor (version 3f9a0b1c2d3e) on gsm8k-150, first suite verdict",
		"The suite verdict of conductor (version 3f9a0b1c2d3e) on gsm8k-150 is FAIL (its first).",
		"78.0% &lt;worse&gt; &amp; slower",
		"Failing and undecided gates:\n• *quality* FAIL: worse: upper bound -4.1 pts &lt; -3.0 pts",
		"• *latency* INCONCLUSIVE: p95 latency ratio 1.300",
		link,
	} {
		if !strings.Contains(m.Text, want) {
			t.Errorf("text lacks %q:\n%s", want, m.Text)
		}
	}
	if strings.Index(m.Text, "*quality*") > strings.Index(m.Text, "*latency*") {
		t.Error("a failing gate is listed after an inconclusive one")
	}
	if got := rc.ctypes[0]; got != "application/json" {
		t.Errorf("Content-Type %q", got)
	}
	types := make([]string, len(m.Blocks))
	for i, b := range m.Blocks {
		types[i] = b.Type
	}
	if got := strings.Join(types, ","); got != "header,section,section,actions,context" {
		t.Fatalf("blocks %s", got)
	}
	if h := m.Blocks[0].Text; h.Type != "plain_text" || h.Text != "FAIL: conductor (version 3f9a0b1c2d3e) on gsm8k-150, first suite verdict" {
		t.Errorf("header %+v", h)
	}
	if g := m.Blocks[2].Text; g.Type != "mrkdwn" || !strings.HasPrefix(g.Text, "*Failing and undecided gates*\n• *quality* FAIL") {
		t.Errorf("gates section %+v", g)
	}
	button, _ := m.Blocks[3].Elements[0].(map[string]any)
	if button["type"] != "button" || button["url"] != link {
		t.Errorf("button %v, want a link to %s", button, link)
	}
	if text, _ := button["text"].(map[string]any); text["type"] != "plain_text" || text["text"] != "Open the suite run" {
		t.Errorf("button label %v", button["text"])
	}
}

// One notice per change and key: a repeated verdict sends nothing, a live
// sequence's INCONCLUSIVE start is no change, and keys (kind, candidate,
// version, set) are apart. Delivery is in order, so a last distinct change
// arriving means nothing else is coming.
func TestOneSendPerChange(t *testing.T) {
	rc := newReceiver(t, nil)
	n := startNotifier(t, testConfig(), notices(t, engine.Open(t)), env("HOOK", rc.url()))
	seq := []VerdictState{
		suiteState("conductor", "v1", "gsm8k-150", gate.Pass),
		liveState("conductor", "v1", gate.Inconclusive),
		suiteState("conductor", "v1", "gsm8k-150", gate.Pass),
		liveState("conductor", "v1", gate.Inconclusive),
		suiteState("conductor", "v1", "gsm8k-150", gate.Fail),
		liveState("conductor", "v1", gate.Pass),
		suiteState("conductor", "v1", "gsm8k-150", gate.Fail),
		liveState("conductor", "v1", gate.Pass),
		suiteState("conductor", "v1", "mmlu-100", gate.Fail),
		suiteState("conductor", "v2", "gsm8k-150", gate.Fail),
		liveState("conductor", "v1", gate.Inconclusive),
		suiteState("conductor", "v1", "gsm8k-150", gate.Pass),
	}
	n.Offer(seq[:3]...) // a batch, then one by one
	for _, s := range seq[3:] {
		n.Offer(s)
	}
	n.Offer(suiteState("sentinel", "v1", "gsm8k-150", gate.Pass))
	want := []string{
		"PASS: conductor (version v1) on gsm8k-150, first suite verdict",
		"FAIL: conductor (version v1) on gsm8k-150, was PASS",
		"PASS: conductor (version v1) on live traffic, first live verdict",
		"FAIL: conductor (version v1) on mmlu-100, first suite verdict",
		"FAIL: conductor (version v2) on gsm8k-150, first suite verdict",
		"INCONCLUSIVE: conductor (version v1) on live traffic, was PASS",
		"PASS: conductor (version v1) on gsm8k-150, was FAIL",
		"PASS: sentinel (version v1) on gsm8k-150, first suite verdict",
	}
	waitFor(t, "the sentinel", func() bool { return rc.requests.Load() >= int64(len(want)) })
	time.Sleep(50 * time.Millisecond) // a stray extra send would arrive now
	if got := rc.subjects(t); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("sent:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	s := n.Stats()
	if ws := s.Sinks[SinkWebhook]; ws.Decided != 8 || ws.Sent != 8 || ws.Failed != 0 || ws.Retries != 0 || s.Offered != int64(len(seq)+1) {
		t.Errorf("stats %+v", s)
	}
}

// The notified state survives a restart: a verdict already sent is not sent
// again, a change is, and a notice a stop left pending is sent by the next
// start without being offered again.
func TestRestartNeitherResendsNorMisses(t *testing.T) {
	db := fmt.Sprintf("notify_restart_%d", time.Now().UnixNano())
	open := func() store.Store { return engine.OpenConfig(t, func(c *store.Config) { c.Database = db }) }
	ctx := t.Context()

	// First process: gsm8k's FAIL is delivered; mmlu's receiver keeps
	// answering 500, so that notice is still being retried at the stop.
	rc1 := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		if body, _ := io.ReadAll(r.Body); bytes.Contains(body, []byte("mmlu")) {
			http.Error(w, "busy", http.StatusInternalServerError)
		}
	})
	cfg := testConfig()
	cfg.Retry = RetryConfig{InitialBackoff: 20 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, MaxElapsed: time.Hour}
	st1 := open()
	n1, err := New(cfg, notices(t, st1), env("HOOK", rc1.url()))
	if err != nil {
		t.Fatal(err)
	}
	if err := n1.Start(ctx); err != nil {
		t.Fatal(err)
	}
	n1.Offer(suiteState("conductor", "v1", "gsm8k-150", gate.Fail), suiteState("conductor", "v1", "mmlu-100", gate.Fail))
	waitFor(t, "gsm8k's notice and mmlu's retries", func() bool {
		s := n1.Stats().Sinks[SinkWebhook]
		return s.Sent == 1 && s.Retries >= 2
	})
	if err := n1.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if s := n1.Stats().Sinks[SinkWebhook]; s.LeftPending != 1 || s.Failed != 0 || s.Pending != 0 {
		t.Errorf("first process: %+v, want mmlu left pending (a stop is not a failure)", s)
	}
	_ = st1.Close()

	// Second process on the same database.
	rc2 := newReceiver(t, nil)
	st2 := open()
	n2 := startNotifier(t, cfg, notices(t, st2), env("HOOK", rc2.url()))
	waitFor(t, "the pending notice", func() bool { return rc2.requests.Load() == 1 })
	n2.Offer(suiteState("conductor", "v1", "gsm8k-150", gate.Fail)) // sent before the restart
	n2.Offer(suiteState("conductor", "v1", "mmlu-100", gate.Fail))  // sent just now
	n2.Offer(suiteState("conductor", "v1", "gsm8k-150", gate.Pass)) // a change
	waitFor(t, "the change", func() bool { return rc2.requests.Load() >= 2 })
	time.Sleep(50 * time.Millisecond)
	want := "FAIL: conductor (version v1) on mmlu-100, first suite verdict\nPASS: conductor (version v1) on gsm8k-150, was FAIL"
	if got := strings.Join(rc2.subjects(t), "\n"); got != want {
		t.Errorf("after the restart sent:\n%s\nwant:\n%s", got, want)
	}
	waitFor(t, "the sent marks", func() bool {
		rows, err := notices(t, st2).VerdictNotices(ctx)
		if err != nil {
			t.Fatal(err)
		}
		sent := 0
		for _, r := range rows {
			if r.Status == store.NoticeSent {
				sent++
			}
		}
		return len(rows) == 2 && sent == 2
	})
}

// 5xx and 429 are retried, and a 429's Retry-After sets the wait (the
// backoff alone would retry within milliseconds).
func TestRetriesHonourRetryAfter(t *testing.T) {
	rc := newReceiver(t, func(i int, w http.ResponseWriter, _ *http.Request) {
		switch i {
		case 0:
			http.Error(w, "upstream failed", http.StatusBadGateway)
		case 1:
			w.Header().Set("Retry-After", "1")
			http.Error(w, "rate_limited", http.StatusTooManyRequests)
		default:
			_, _ = io.WriteString(w, "ok")
		}
	})
	st := engine.Open(t)
	n := startNotifier(t, testConfig(), notices(t, st), env("HOOK", rc.url()))
	n.Offer(suiteState("conductor", "v1", "gsm8k-150", gate.Fail))
	waitFor(t, "delivery", func() bool { return n.Stats().Sinks[SinkWebhook].Sent == 1 })
	if got := rc.requests.Load(); got != 3 {
		t.Fatalf("%d requests, want 3 (502, 429, 200)", got)
	}
	if gap := rc.times[2].Sub(rc.times[1]); gap < 900*time.Millisecond {
		t.Errorf("retried %v after a 429 with Retry-After: 1", gap)
	}
	if s := n.Stats().Sinks[SinkWebhook]; s.Retries != 2 || s.Failed != 0 || !s.FailingSince.IsZero() {
		t.Errorf("stats %+v", s)
	}
	waitFor(t, "the sent mark", func() bool {
		rows, _ := notices(t, st).VerdictNotices(t.Context())
		return len(rows) == 1 && rows[0].Status == store.NoticeSent && rows[0].Attempts == 3
	})
}

// A refusal (404) is not retried; a receiver that stays down is given up
// after retry.max_elapsed. Both are counted, logged and stored failed, and
// neither the log nor the stored error names the webhook URL (its path is
// the receiver's secret).
func TestFailuresAreCountedAndNeverNameTheURL(t *testing.T) {
	var logs bytes.Buffer
	var logMu sync.Mutex
	log := slog.New(slog.NewJSONHandler(&lockedWriter{w: &logs, mu: &logMu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadURL := "http://" + dead.Addr().String() + "/services/T0/B0/s3cr3t-token"
	dead.Close()
	refusing := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) { http.Error(w, "no_service", http.StatusNotFound) })
	down := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "maintenance", http.StatusServiceUnavailable)
	})

	for _, tc := range []struct {
		name, url string
		wantErr   string
		once      bool
	}{
		{"refused", refusing.url(), "webhook: HTTP 404 no_service", true},
		{"down", down.url(), "webhook: HTTP 503 maintenance", false},
		{"dead", deadURL, "connection refused", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.Retry.MaxElapsed = 200 * time.Millisecond
			st := engine.Open(t)
			n := startNotifier(t, cfg, notices(t, st), env("HOOK", tc.url), WithLogger(log))
			n.Offer(suiteState("conductor", "v1", "gsm8k-150", gate.Fail))
			waitFor(t, "the failure", func() bool { return n.Stats().Sinks[SinkWebhook].Failed == 1 })
			s := n.Stats()
			if ws := s.Sinks[SinkWebhook]; (ws.Retries == 0) != tc.once || ws.Sent != 0 || ws.FailingSince.IsZero() {
				t.Errorf("stats %+v", ws)
			}
			if d := s.Detail()["notify_webhook"]; !strings.Contains(d, "failing since") || !strings.Contains(d, "1 failed") {
				t.Errorf("readiness detail %q", d)
			}
			var row store.VerdictNotice
			waitFor(t, "the failed mark", func() bool {
				rows, _ := notices(t, st).VerdictNotices(t.Context())
				if len(rows) == 1 {
					row = rows[0]
				}
				return row.Status == store.NoticeFailed
			})
			if !strings.Contains(row.Error, tc.wantErr) || strings.Contains(row.Error, "s3cr3t") {
				t.Errorf("stored error %q, want %q without the URL", row.Error, tc.wantErr)
			}
		})
	}
	logMu.Lock()
	defer logMu.Unlock()
	if strings.Contains(logs.String(), "s3cr3t") {
		t.Errorf("the log names the webhook URL:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "notice not delivered") {
		t.Errorf("failures not logged:\n%s", logs.String())
	}
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// A receiver that never answers never makes Offer wait: what does not fit
// the bounded outboxes is dropped and counted, every verdict offered is
// accounted for, and a stop leaves the notice in flight pending.
func TestDeadReceiverNeverBlocksTheCaller(t *testing.T) {
	release := make(chan struct{})
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	cfg := testConfig()
	cfg.OutboxSize = 2
	cfg.Timeout = time.Minute
	n := startNotifier(t, cfg, notices(t, engine.Open(t)), env("HOOK", rc.url()))
	const offered, wave = 100, 20
	for i := range offered {
		n.Offer(suiteState(fmt.Sprintf("candidate-%03d", i), "v1", "gsm8k-150", gate.Fail))
		if (i+1)%wave == 0 { // let the detector catch up, so the sink's queue fills too
			waitFor(t, "the outbox to drain", func() bool {
				s := n.Stats()
				return s.Dropped[DropOutboxFull]+s.Sinks[SinkWebhook].Decided == int64(i+1)
			})
		}
	}
	waitFor(t, "the first notice at the receiver", func() bool { return rc.requests.Load() == 1 })
	if err := n.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	s := n.Stats()
	ws := s.Sinks[SinkWebhook]
	if s.Offered != offered || s.Dropped[DropOutboxFull] == 0 || ws.Dropped == 0 {
		t.Errorf("stats %+v %+v: want drops at the outbox and at the sink's queue", s, ws)
	}
	if ws.Decided != ws.Sent+ws.Failed+ws.Dropped+ws.LeftPending || ws.Pending != 0 || ws.LeftPending < 1 {
		t.Errorf("notices unaccounted for: %+v", ws)
	}
	d := s.Detail()
	if !strings.Contains(d["notify_verdicts"], "outbox_full") || !strings.Contains(d["notify_webhook"], "dropped") {
		t.Errorf("readiness detail %v", d)
	}
	if got := rc.requests.Load(); got != 1 {
		t.Errorf("%d requests reached the hanging receiver, want 1 (one at a time)", got)
	}
}

// Live verdicts are read at Start and every live_interval; a failed read is
// counted and the next one still runs.
func TestLiveVerdictsArePolled(t *testing.T) {
	rc := newReceiver(t, nil)
	var calls atomic.Int64
	live := func(context.Context) ([]VerdictState, error) {
		switch calls.Add(1) {
		case 1:
			return []VerdictState{liveState("conductor", "v1", gate.Pass)}, nil
		case 2:
			return nil, fmt.Errorf("store: agreement sequence: engine busy")
		default:
			return []VerdictState{liveState("conductor", "v1", gate.Inconclusive)}, nil
		}
	}
	cfg := testConfig()
	cfg.LiveInterval = time.Second
	n := startNotifier(t, cfg, notices(t, engine.Open(t)), env("HOOK", rc.url()), WithLive(live))
	waitFor(t, "two live notices", func() bool { return rc.requests.Load() == 2 })
	want := "PASS: conductor (version v1) on live traffic, first live verdict\nINCONCLUSIVE: conductor (version v1) on live traffic, was PASS"
	if got := strings.Join(rc.subjects(t), "\n"); got != want {
		t.Errorf("sent:\n%s\nwant:\n%s", got, want)
	}
	if m := rc.messages(t)[0]; !strings.Contains(m.Text, "https://shadow.example.com/ui/overview") {
		t.Errorf("live notice without the overview link:\n%s", m.Text)
	}
	if s := n.Stats(); s.LiveReadFailures != 1 {
		t.Errorf("live read failures %d, want 1", s.LiveReadFailures)
	}
}

// Without a sink nothing is built or sent, and the lifecycle is still safe.
func TestNotifierWithoutSinks(t *testing.T) {
	n, err := New(NewDefaultConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if n.Enabled() {
		t.Error("enabled without a sink")
	}
	n.Offer(suiteState("conductor", "v1", "gsm8k-150", gate.Fail))
	if err := n.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := n.Shutdown(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if s := n.Stats(); s.Offered != 0 || s.Detail() != nil {
		t.Errorf("stats %+v", s)
	}
	// Shutdown without Start, twice; verdicts offered before count as dropped.
	rc := newReceiver(t, nil)
	n2, err := New(testConfig(), notices(t, engine.Open(t)), env("HOOK", rc.url()))
	if err != nil {
		t.Fatal(err)
	}
	n2.Offer(suiteState("conductor", "v1", "gsm8k-150", gate.Fail))
	for range 2 {
		if err := n2.Shutdown(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	n2.Offer(suiteState("conductor", "v1", "gsm8k-150", gate.Pass))
	if s := n2.Stats(); s.Dropped[DropStopped] != 2 {
		t.Errorf("dropped %v, want 2 stopped", s.Dropped)
	}
}

// New names the variable, never the secret, when a secret is missing or bad.
func TestNewNamesTheVariable(t *testing.T) {
	st := notices(t, engine.Open(t))
	for _, tc := range []struct {
		env  Option
		want string
	}{
		{env(), "$HOOK is empty"},
		{env("HOOK", "ftp://hooks.example.com/s3cr3t"), "$HOOK: not an http:// or https:// URL"},
	} {
		_, err := New(testConfig(), st, tc.env)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("error %v, want %q without the value", err, tc.want)
		}
	}
	cfg := testConfig()
	cfg.Webhook.URLEnv = ""
	cfg.Email = EmailConfig{SMTPHost: "smtp.example.com", SMTPPort: 587, TLS: TLSStartTLS, Username: "shadow", PasswordEnv: "SMTP_PW",
		Auth: "auto", From: "shadow@example.com", To: []string{"team@example.com"}}
	if _, err := New(cfg, st, env()); err == nil || !strings.Contains(err.Error(), "$SMTP_PW is empty") {
		t.Errorf("error %v", err)
	}
}

// A verdict that cannot be keyed is dropped and counted, not sent.
func TestInvalidVerdictIsCounted(t *testing.T) {
	rc := newReceiver(t, nil)
	n := startNotifier(t, testConfig(), notices(t, engine.Open(t)), env("HOOK", rc.url()))
	bad := suiteState("conductor", "v1", "gsm8k-150", "MAYBE")
	n.Offer(bad, suiteState("conductor", "v1", "gsm8k-150", gate.Pass))
	waitFor(t, "the valid one", func() bool { return rc.requests.Load() == 1 })
	if s := n.Stats(); s.Dropped[DropInvalid] != 1 {
		t.Errorf("dropped %v", s.Dropped)
	}
}
