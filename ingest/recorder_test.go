package ingest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// sameIDIncumbent answers every chat completion with one id, as a gateway
// answers its cache hits: streamed when the request asks, else one JSON body.
type sameIDIncumbent struct{ served atomic.Int64 }

func (h *sameIDIncumbent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	n := h.served.Add(1)
	if bytes.Contains(body, []byte(`"stream":true`)) {
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		for _, d := range []string{
			`{"id":"chatcmpl-same","model":"gpt-4o","choices":[{"index":0,"delta":{"content":"Hello"}}]}`,
			`{"id":"chatcmpl-same","model":"gpt-4o","choices":[{"index":0,"delta":{"content":" there"},"finish_reason":"stop"}]}`,
			`{"id":"chatcmpl-same","model":"gpt-4o","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`,
			`[DONE]`,
		} {
			fmt.Fprintf(w, "data: %s\n\n", d)
			f.Flush()
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"chatcmpl-same","object":"chat.completion","model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"answer %d"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`, n)
}

// recordFixture is the all-in-one tap side on the real engine: a store-first
// queue with its shadow workers, a recorder into the same store, the
// admission in front of the tap (shedding when shed is set), and a proxy.
type recordFixture struct {
	st    store.Store
	sf    *storeFirst
	rec   *Recorder
	adm   *Admission
	proxy *Proxy
	front *httptest.Server
	inc   *httptest.Server
}

func newRecordFixture(t *testing.T, incumbent http.Handler, maxCapture int64) *recordFixture {
	t.Helper()
	ctx := context.Background()
	f := &recordFixture{st: engine.Open(t)}
	f.sf = startStoreFirst(t, f.st, storeFirstConfig(), &echoPipeline{}, nil)
	rcfg := NewDefaultRecordConfig()
	rcfg.Linger, rcfg.OfferedFlush = 10*time.Millisecond, 100*time.Millisecond
	rec, err := NewRecorder(rcfg, StoreRecords{Store: f.st, Pricer: flatPricer(0.001), Stats: f.sf.stats}, f.st.(store.CoverageWriter), f.sf.stats, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.sf.tap.UseRecorder(rec)
	if err := rec.Start(ctx); err != nil {
		t.Fatal(err)
	}
	f.rec = rec
	if f.adm, err = NewAdmission(NewDefaultAdmissionConfig(), f.sf.stats, nil); err != nil {
		t.Fatal(err)
	}
	f.inc = httptest.NewServer(incumbent)
	pcfg := NewDefaultProxyConfig()
	pcfg.IncumbentURL, pcfg.App = f.inc.URL, "bot"
	if maxCapture > 0 {
		pcfg.MaxCaptureBytes = maxCapture
	}
	p, err := NewProxy(pcfg, f.adm.Offerer(f.sf.tap, func() int { return 1 << 20 }), f.sf.stats, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.UseRecorder(rec)
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	f.proxy = p
	f.front = httptest.NewServer(p)
	t.Cleanup(func() {
		f.front.Close()
		f.inc.Close()
		_ = p.Shutdown(ctx)
		_ = rec.Shutdown(ctx)
		f.sf.stop(t, 5*time.Second)
	})
	return f
}

func (f *recordFixture) post(t *testing.T, body string) {
	t.Helper()
	resp, err := http.Post(f.front.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("production answer %d", resp.StatusCode)
	}
}

// shed sets the admission's last reading: shedding under latency pressure,
// or healthy.
func (f *recordFixture) shed(on bool) {
	p := Pressure{CPU: -1, OwnCPU: -1}
	if on {
		p.Reason = ShedLatency
	}
	f.adm.adjust(p)
}

// TestProxyRecordsEveryForwardedExchange: shedding takes the shadow run, never
// the record. Ten exchanges shadowed, ten shed under pressure, one too large
// to copy: all 21 leave a request row (the too-large one as metadata, with
// its sizes and a copy id), the shed ones say why they were not shadowed, the
// offered count is 21, and the coverage the store reads says so. Every answer
// carries the same provider id, as a gateway's cache hits do: 21 rows, each
// with that id in response_id.
func TestProxyRecordsEveryForwardedExchange(t *testing.T) {
	ctx := context.Background()
	f := newRecordFixture(t, &sameIDIncumbent{}, 16<<10)
	start := time.Now().UTC().Add(-time.Minute)
	for i := range 10 {
		f.post(t, fmt.Sprintf(`{"model":"gpt-4o","messages":[{"role":"user","content":"shadowed %d"}]}`, i))
	}
	offered := func(n int64) func() bool {
		return func() bool { return f.sf.stats.Snapshot(0).Mirrored[ProxyOutcomeOffered] == n }
	}
	waitFor(t, "ten copies handed over", offered(10)) // copies are handed over after the answer
	f.shed(true)
	for i := range 10 {
		f.post(t, fmt.Sprintf(`{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"shed %d"}]}`, i))
	}
	waitFor(t, "ten more handed over", offered(20))
	f.shed(false)
	big := `{"model":"gpt-4o","messages":[{"role":"user","content":"` + strings.Repeat("x", 20<<10) + `"}]}`
	f.post(t, big)
	deadline := time.Now().Add(60 * time.Second)
	for s := f.sf.stats.Snapshot(0); !(s.Processed == 10 && s.Recorded[ShedLatency] == 10 && s.Recorded[BodyTooLarge] == 1); s = f.sf.stats.Snapshot(0) {
		if time.Now().After(deadline) {
			t.Fatalf("not every exchange handled: %+v", s)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := f.rec.Shutdown(ctx); err != nil { // writes the offered counts
		t.Fatal(err)
	}
	cov, err := f.st.(store.CoverageReader).TapCoverage(ctx, store.CoverageQuery{From: start, To: time.Now().UTC().Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	want := store.CoverageStage{Offered: 21, Recorded: 21, NotShadowed: 11, BodyOmitted: 1, Shadowed: 10}
	if cov.Total != want {
		t.Errorf("coverage %+v; want %+v", cov.Total, want)
	}
	reasons := map[string]int64{}
	for _, r := range cov.NotShadowed {
		reasons[r.Reason] = r.Count
	}
	if reasons[ShedLatency] != 10 || reasons[BodyTooLarge] != 1 {
		t.Errorf("not shadowed by reason %v; want shed_latency 10, too_large 1", reasons)
	}
	if len(cov.Windows) == 0 || cov.Windows[0].Route != "/v1/chat/completions" || cov.Windows[0].App != "bot" {
		t.Errorf("windows %+v; want the route and app of the exchanges", cov.Windows)
	}
	res, err := f.st.Query(ctx, `SELECT request_id, input, body_omitted, route, response_id, request_bytes, response_bytes
		FROM requests FINAL ORDER BY request_id`)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, r := range res.Rows {
		id, input, omitted, route, respID := r[0], r[1], r[2], r[3], r[4]
		ids[id] = true
		switch {
		case omitted == BodyTooLarge:
			if input != "[]" || r[5] != strconv.Itoa(len(big)) || r[6] == "0" || route != "/v1/chat/completions" || !strings.HasPrefix(id, "proxy-") {
				t.Errorf("too-large metadata row %v; want no text, its sizes, route and a copy id", r)
			}
		case respID != "chatcmpl-same":
			t.Errorf("row %s keeps response id %q; want the provider's chatcmpl-same", id, respID)
		}
	}
	if len(ids) != 21 {
		t.Errorf("%d distinct stored requests; want 21 (exchanges answered with one provider id must not merge)", len(ids))
	}
}

// TestProxyClientClosingAfterLastByteIsComplete: a client that closes its
// connection right after reading the answer's last byte (the JSON body's
// last byte, or a stream's [DONE] event before the final chunk) got the whole
// answer: 0 of 200 copies may be partial or cancelled by the client.
func TestProxyClientClosingAfterLastByteIsComplete(t *testing.T) {
	tap := &recordingTap{}
	f := newProxyFixture(t, &sameIDIncumbent{}, tap)
	addr := strings.TrimPrefix(f.front.URL, "http://")
	const n = 200
	for i := range n {
		stream := i%2 == 1
		body := fmt.Sprintf(`{"model":"gpt-4o","stream":%v,"messages":[{"role":"user","content":"q %d"}]}`, stream, i)
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", addr, len(body), body)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		var got []byte
		buf := make([]byte, 4096)
		for {
			k, err := resp.Body.Read(buf)
			got = append(got, buf[:k]...)
			if stream && bytes.HasSuffix(got, []byte("data: [DONE]\n\n")) || !stream && resp.ContentLength > 0 && int64(len(got)) == resp.ContentLength {
				break // the last byte: close at once
			}
			if err != nil {
				t.Fatalf("exchange %d: read %q: %v", i, got, err)
			}
		}
		conn.Close()
	}
	waitFor(t, "every copy", func() bool { return len(tap.all()) == n })
	bad := 0
	for _, ex := range tap.all() {
		if ex.Response.Partial || ex.Response.CancelledByClient {
			bad++
		}
	}
	if bad != 0 {
		t.Errorf("%d of %d complete answers stored as partial or cancelled by the client", bad, n)
	}
}

// recordSink keeps what it is given, or fails every write while fail is set.
type recordSink struct {
	fail atomic.Bool
	mu   chan struct{} // a one-slot lock
	got  []Exchange
}

func newRecordSink() *recordSink { return &recordSink{mu: make(chan struct{}, 1)} }

func (s *recordSink) WriteRecords(_ context.Context, exs []Exchange) error {
	if s.fail.Load() {
		return fmt.Errorf("disk full")
	}
	s.mu <- struct{}{}
	s.got = append(s.got, exs...)
	<-s.mu
	return nil
}

func (s *recordSink) all() []Exchange {
	s.mu <- struct{}{}
	defer func() { <-s.mu }()
	return append([]Exchange(nil), s.got...)
}

// TestRecorderLosesNothingQuietly: records beyond the text budget are kept
// as metadata, beyond the metadata buffer dropped; records a failing store
// never took are dropped at Shutdown; each loss counted by reason and in the
// offered counts. Raw records are pseudonymized once, before the sink.
func TestRecorderLosesNothingQuietly(t *testing.T) {
	ctx := context.Background()
	cfg := NewDefaultRecordConfig()
	cfg.MetadataSlots, cfg.BodySlots = 2, 1
	stats := NewStats()
	sink := newRecordSink()
	sink.fail.Store(true)
	rec, err := NewRecorder(cfg, sink, nil, stats, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 { // before Start: they wait in the buffers
		ex := exchange(fmt.Sprintf("r%d", i), "text")
		ex.Metadata["source"] = "proxy"
		rec.Record(ex, ShedLatency)
	}
	if got := stats.Snapshot(0).RecordDropped[ShedLatency]; got != 1 {
		t.Errorf("record_dropped = %d; want 1 (one text slot, two metadata slots, four records)", got)
	}
	if got := rec.Buffered(); got != 3 {
		t.Errorf("%d buffered; want 3", got)
	}
	if err := rec.Ready(); !errors.Is(err, ErrRecordBufferFull) {
		t.Errorf("Ready with the metadata buffer full = %v; want ErrRecordBufferFull", err)
	}
	if err := rec.Shutdown(ctx); err == nil {
		t.Error("Shutdown with a failing store: want an error")
	}
	if err := rec.Shutdown(ctx); err != nil {
		t.Errorf("second Shutdown: %v", err)
	}
	if got := stats.Snapshot(0).RecordDropped[ShedLatency]; got != 4 {
		t.Errorf("record_dropped = %d after a stop the store refused; want 4", got)
	}
	var dropped int64
	for _, c := range rec.Offered().changed(time.Now(), true) {
		dropped += c.RecordDropped
	}
	if dropped != 4 {
		t.Errorf("offered counts hold %d dropped records; want 4", dropped)
	}

	// A store that fails, then recovers: readiness says so, and the record
	// waits and is stored.
	sink = newRecordSink()
	sink.fail.Store(true)
	rec, err = NewRecorder(cfg, sink, nil, stats, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Start(ctx); err != nil {
		t.Fatal(err)
	}
	rec.Record(exchange("w", "waits"), ShedCPU)
	waitFor(t, "readiness to name the failing store", func() bool {
		err := rec.Ready()
		return err != nil && strings.Contains(err.Error(), "disk full")
	})
	sink.fail.Store(false)
	waitFor(t, "the record stored once the store is back", func() bool { return len(sink.all()) == 1 && rec.Ready() == nil })
	if err := rec.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	// A working store: text kept while it fits, metadata past it, each
	// pseudonymized once.
	sink = newRecordSink()
	rec, err = NewRecorder(cfg, sink, nil, stats, nil)
	if err != nil {
		t.Fatal(err)
	}
	var cleaned atomic.Int64
	rec.clean = func(ex *Exchange) { cleaned.Add(1); ex.App = "clean-" + ex.App }
	rec.Record(exchange("a", "first"), ReasonSampledOut)
	rec.Record(exchange("b", "second"), ReasonSampledOut)
	if err := rec.Start(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "two records stored", func() bool { return len(sink.all()) == 2 })
	if err := rec.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	got := sink.all()
	slices.SortFunc(got, func(a, b Exchange) int { return strings.Compare(a.RequestID, b.RequestID) })
	if got[0].BodyOmitted != "" || len(got[0].Request.Messages) != 1 || got[1].BodyOmitted != BodyRecordBudget || len(got[1].Request.Messages) != 0 {
		t.Errorf("records %+v; want the first with its text, the second as metadata (record_budget)", got)
	}
	for _, ex := range got {
		if ex.StoreOnly != ReasonSampledOut || ex.App != "clean-test-app" || ex.Response == nil || ex.Response.LatencyMs != 250 {
			t.Errorf("record %s: store_only %q app %q response %+v", ex.RequestID, ex.StoreOnly, ex.App, ex.Response)
		}
	}
	if cleaned.Load() != 2 || stats.Snapshot(0).Recorded[ReasonSampledOut] != 2 || stats.Snapshot(0).Recorded[ShedCPU] != 1 {
		t.Errorf("cleaned %d, recorded %v; want 2 and 2", cleaned.Load(), stats.Snapshot(0).Recorded)
	}
}

// TestRecordedCopiesArePseudonymized: a copy sampled out is recorded raw and
// pseudonymized by the recorder's writer, with the tap's rules and secret;
// the offered counts' app and route too. No planted value reaches requests,
// runs, steps or tap_offered.
func TestRecordedCopiesArePseudonymized(t *testing.T) {
	ctx := context.Background()
	st := engine.Open(t)
	cfg := storeFirstConfig()
	cfg.Sampling.Rate = 0 // every copy sampled out: recorded, not shadowed
	cfg.PII = NewDefaultPIIConfig()
	sf := startStoreFirst(t, st, cfg, nil, nil)
	defer sf.stop(t, 5*time.Second)
	rcfg := NewDefaultRecordConfig()
	rcfg.Linger = 10 * time.Millisecond
	rec, err := NewRecorder(rcfg, StoreRecords{Store: st, Pricer: flatPricer(0.001)}, st.(store.CoverageWriter), sf.stats, nil)
	if err != nil {
		t.Fatal(err)
	}
	sf.tap.UseRecorder(rec)
	if err := rec.Start(ctx); err != nil {
		t.Fatal(err)
	}
	ex, err := DecodeExchange([]byte(plantedExchange("planted-rec")), 100, true)
	if err != nil {
		t.Fatal(err)
	}
	ex.App = "support " + plantedPII[PIIEmail]
	ex.Metadata["route"] = "/v1/" + plantedPII[PIIEmail] + "/chat/completions"
	ex.ReceivedAt = time.Now().UTC()
	if code, resp := sf.tap.Offer(ctx, ex); code != http.StatusOK || resp.Status != "unsampled" {
		t.Fatalf("offer = %d %+v; want 200 unsampled", code, resp)
	}
	waitFor(t, "the record stored", func() bool { return sf.stats.Snapshot(0).Recorded[ReasonSampledOut] == 1 })
	if err := rec.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	quoted := make([]string, 0)
	for _, n := range rawNeedles() {
		quoted = append(quoted, "'"+n+"'")
	}
	list := "[" + strings.Join(quoted, ",") + "]"
	for tbl, cols := range map[string][]string{
		"requests":    {"request_id", "app", "input", "metadata", "route", "response_id", "not_shadowed"},
		"runs":        {"final_output", "reasoning", "choices", "tool_calls", "error", "pipeline"},
		"steps":       {"messages", "output", "model"},
		"tap_offered": {"app", "route"},
	} {
		var sel []string
		for _, c := range cols {
			sel = append(sel, fmt.Sprintf("countIf(multiSearchAnyCaseInsensitive(toString(`%s`), %s))", c, list))
		}
		res, err := st.Query(ctx, "SELECT count(), "+strings.Join(sel, ", ")+" FROM `"+tbl+"`")
		if err != nil {
			t.Fatalf("scan %s: %v", tbl, err)
		}
		if res.Rows[0][0] == "0" {
			t.Errorf("%s holds no row: the record did not reach it", tbl)
		}
		for i, c := range cols {
			if res.Rows[0][i+1] != "0" {
				t.Errorf("%s.%s holds a raw planted value", tbl, c)
			}
		}
	}
	res, err := st.Query(ctx, "SELECT not_shadowed, input != '[]' FROM requests")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 1 || res.Rows[0][0] != ReasonSampledOut || res.Rows[0][1] != "1" {
		t.Errorf("request rows %v; want one, sampled_out, with its (pseudonymized) text", res.Rows)
	}
}

// TestTapCountsTheCopiesItTakes: POST /v1/tap and /v1/tap/batch count every
// copy they take (queued) as offered, once: a duplicate or a rejected item
// is not counted.
func TestTapCountsTheCopiesItTakes(t *testing.T) {
	tap, _, stats, h := newTestTap(t, NewDefaultConfig())
	rec, err := NewRecorder(NewDefaultRecordConfig(), newRecordSink(), nil, stats, nil)
	if err != nil {
		t.Fatal(err)
	}
	tap.UseRecorder(rec)
	items := []string{string(readFile(t, "good_minimal.json")), string(readFile(t, "good_full.json")),
		string(readFile(t, "good_minimal.json")), string(readFile(t, "bad_empty_messages.json"))}
	if code, resp := postBatch(h, []byte(`{"exchanges":[`+strings.Join(items, ",")+`]}`)); code.Code != http.StatusOK || resp.Counts["queued"] != 2 {
		t.Fatalf("batch: %d %+v", code.Code, resp)
	}
	if code, _ := post(h, readFile(t, "good_full.json")); code.Code != http.StatusOK { // a duplicate
		t.Fatalf("single: %d", code.Code)
	}
	var offered int64
	for _, c := range rec.Offered().changed(time.Now(), true) {
		if c.Source != store.OfferedTap {
			t.Errorf("count %+v; want source tap", c)
		}
		offered += c.Offered
	}
	if offered != 2 {
		t.Errorf("offered %d; want 2 (two copies taken; a duplicate twice, a rejected item once)", offered)
	}
}
