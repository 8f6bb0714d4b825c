package ingest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestSaturationRule drives the rule with a clock of its own: each step
// notes refusals at an offset, then decides 64 exchanges at another, and the
// share captured must be what the rule says.
func TestSaturationRule(t *testing.T) {
	type step struct {
		refusals []time.Duration // Refused at these offsets
		taken    bool            // a copy taken before the exchanges
		at       time.Duration   // then 64 exchanges decided at this offset
		full     bool            // the mirrored buffer more than half full
		captured int             // of the 64
	}
	ms := time.Millisecond
	cases := []struct {
		name  string
		steps []step
	}{
		{"never refused: all captured", []step{{at: 0, captured: 64}}},
		{"one refusal halves the share", []step{{refusals: []time.Duration{0}, at: ms, captured: 32}}},
		{"a burst of refusals halves it once", []step{{refusals: []time.Duration{0, ms, 2 * ms, 50 * ms}, at: 60 * ms, captured: 32}}},
		{"refusals 100 ms apart halve it each time", []step{{refusals: []time.Duration{0, 100 * ms, 200 * ms}, at: 210 * ms, captured: 8}}},
		{"never below 1/64", []step{{refusals: []time.Duration{0, 100 * ms, 200 * ms, 300 * ms, 400 * ms, 500 * ms, 600 * ms, 700 * ms}, at: 710 * ms, captured: 1}}},
		{"calm with copies taken doubles it back, 250 ms a step", []step{
			{refusals: []time.Duration{0, 100 * ms}, at: 110 * ms, captured: 16},
			{taken: true, at: 360 * ms, captured: 32},
			{taken: true, at: 500 * ms, captured: 32},
			{taken: true, at: 620 * ms, captured: 64},
		}},
		{"calm without a copy taken: unchanged", []step{{refusals: []time.Duration{0}, at: 2 * time.Second, captured: 32}}},
		{"taken but not calm long enough: unchanged", []step{{refusals: []time.Duration{0}, taken: true, at: 240 * ms, captured: 32}}},
		{"calm but the buffer still full: unchanged", []step{{refusals: []time.Duration{0}, taken: true, at: 400 * ms, full: true, captured: 32}}},
		{"10 s without a refusal restore it at once", []step{
			{refusals: []time.Duration{0, 100 * ms, 200 * ms}, at: 210 * ms, captured: 8},
			{at: 10*time.Second + 200*ms, captured: 64},
		}},
		{"a refusal while recovering halves it again", []step{
			{refusals: []time.Duration{0, 100 * ms}, at: 110 * ms, captured: 16},
			{taken: true, at: 360 * ms, captured: 32},
			{refusals: []time.Duration{400 * ms}, at: 410 * ms, captured: 16},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var s Saturation
			t0 := time.Unix(1e9, 0)
			var shed int64
			for i, st := range tc.steps {
				for _, r := range st.refusals {
					s.Refused(t0.Add(r))
				}
				if st.taken {
					s.Taken()
				}
				drained := func() bool { return !st.full }
				got := 0
				for range 64 {
					if s.Capture(t0.Add(st.at), drained) {
						got++
					}
				}
				shed += int64(64 - got)
				if got != st.captured {
					t.Errorf("step %d: %d of 64 captured, want %d", i, got, st.captured)
				}
				snap := s.Snapshot(t0.Add(st.at), drained)
				if want := float64(st.captured) / 64; snap.Share != want || snap.Saturated != (st.captured < 64) {
					t.Errorf("step %d: snapshot %+v, want share %v", i, snap, want)
				}
				if snap.Shed != shed {
					t.Errorf("step %d: %d shed counted, want %d", i, snap.Shed, shed)
				}
			}
		})
	}
}

// refusingQueue is a shadow side's queue that answers queue_full while
// refuse is set and takes every copy otherwise.
type refusingQueue struct {
	MemoryQueue
	refuse atomic.Bool
	taken  atomic.Int64
}

func (q *refusingQueue) PublishDurable(_ Exchange, done func(error)) error {
	if q.refuse.Load() {
		return ErrQueueFull
	}
	q.taken.Add(1)
	go done(nil)
	return nil
}

// TestSaturatedFrontRecordsMetadata is the front of an isolated server (the
// proxy, the tap and the recorder over a hand-off) whose shadow side refuses
// every copy with queue_full: after the first refusals the front stops
// capturing and forwards exchanges with a metadata row (reason
// shadow_saturated, no text, sizes and status kept); every exchange leaves
// exactly one row or one taken copy, and the counts add up on every reader.
// Once the shadow side takes copies again every exchange is captured.
func TestSaturatedFrontRecordsMetadata(t *testing.T) {
	ctx := context.Background()
	q := &refusingQueue{}
	q.refuse.Store(true)
	recs := &recordedSink{}
	path, stop := serveReceiver(t, &HandoffReceiver{Queue: q, Records: recs, Offered: &offeredSink{}})
	defer stop()
	ho, err := NewHandoff(HandoffConfig{Socket: path, Buffer: 64, Batch: 8}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ho.Start(ctx); err != nil {
		t.Fatal(err)
	}
	stats := NewStats()
	tap, err := NewTap(NewDefaultConfig(), ho, stats, WithPIISecret([]byte("k")))
	if err != nil {
		t.Fatal(err)
	}
	rcfg := NewDefaultRecordConfig()
	rcfg.Linger, rcfg.OfferedFlush = 5*time.Millisecond, 100*time.Millisecond
	rec, err := NewRecorder(rcfg, ho, ho, stats, nil)
	if err != nil {
		t.Fatal(err)
	}
	tap.UseRecorder(rec)
	if err := rec.Start(ctx); err != nil {
		t.Fatal(err)
	}
	inc := httptest.NewServer(&sameIDIncumbent{})
	defer inc.Close()
	pcfg := NewDefaultProxyConfig()
	pcfg.IncumbentURL = inc.URL
	p, err := NewProxy(pcfg, tap, stats, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.UseRecorder(rec)
	p.UseCaptureGate(ho)
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(p)
	defer front.Close()

	post := func(i int) {
		t.Helper()
		body := fmt.Sprintf(`{"model":"gpt-4o","messages":[{"role":"user","content":"secret text %d"}]}`, i)
		resp, err := http.Post(front.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte("chatcmpl-same")) {
			t.Fatalf("production answer %d %s", resp.StatusCode, b)
		}
	}
	const n = 300
	for i := range n {
		post(i)
		if i%50 == 49 {
			time.Sleep(120 * time.Millisecond) // refusals come back: the share halves again
		}
	}
	rows := func() int {
		recs.mu.Lock()
		defer recs.mu.Unlock()
		return len(recs.exs)
	}
	waitFor(t, "a row for every exchange", func() bool { return rows() == n })

	s := stats.Snapshot(0)
	shed := ho.Stats().Saturation.Shed
	if shed == 0 || s.Recorded[ReasonShadowSaturated] != shed || s.Mirrored[ProxyOutcomeShadowSaturated] != shed {
		t.Fatalf("shed %d; recorded %v, mirrored %v: want the same count, above 0", shed, s.Recorded, s.Mirrored)
	}
	if got := s.Recorded[ReasonShadowSaturated] + s.Recorded[ReasonQueueFull]; got != n || s.Mirrored[ProxyOutcomeOffered] != n-shed {
		t.Errorf("recorded %v, mirrored %v: want %d rows, %d offered", s.Recorded, s.Mirrored, n, n-shed)
	}
	if ho.Stats().Refused[ReasonQueueFull] != n-shed {
		t.Errorf("hand-off refusals %v; want %d", ho.Stats().Refused, n-shed)
	}
	recs.mu.Lock()
	for _, ex := range recs.exs {
		if ex.BodyOmitted != ReasonShadowSaturated {
			continue
		}
		if len(ex.Request.Messages) != 0 || ex.Response == nil || ex.Response.Status != http.StatusOK || ex.Response.Content != "" ||
			ex.RequestBytes == 0 || ex.ResponseBytes == 0 || ex.StoreOnly != ReasonShadowSaturated || ex.Metadata["route"] != "/v1/chat/completions" {
			t.Errorf("saturated row %+v; want metadata only: status, sizes, route, the reason", ex)
			break
		}
	}
	recs.mu.Unlock()

	// A lull restores nothing: the shadow side may still hold its backlog.
	time.Sleep(2 * saturationCalm)
	if ho.Saturated() == nil {
		t.Error("no longer saturated after a lull, with no copy taken")
	}
	// The shadow side takes copies again: the copies still captured are
	// taken, the share doubles back, then every exchange is captured.
	q.refuse.Store(false)
	waitForD(t, 10*time.Second, "every exchange captured again", func() bool {
		post(n)
		return ho.Saturated() == nil
	})
	taken, shed := q.taken.Load(), ho.Stats().Saturation.Shed
	for range 10 {
		post(n)
	}
	waitFor(t, "ten more copies taken", func() bool { return q.taken.Load() >= taken+10 }) // copies posted while waiting above may land too
	if got := ho.Stats().Saturation.Shed; got != shed {
		t.Errorf("%d more shed once the shadow side took copies again", got-shed)
	}
	_ = p.Shutdown(ctx)
	_ = rec.Shutdown(ctx)
	_ = ho.Shutdown(ctx)
}
