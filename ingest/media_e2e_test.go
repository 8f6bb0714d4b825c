package ingest

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/ingest/incumbenttest"
	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/shadow/simpool"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// TestAnthropicImageExchangeShadowed: an Anthropic Messages API request with
// an image goes through the proxy, the tap and the shadow workers to the
// simulated pool and the store: the stored request keeps the image, a
// candidate whose worker takes images got it (the simulated answer says so)
// and its step stores the image by type, size and hash only; a candidate on a
// text-only worker answered from the text, its run marked input_reduced with
// the reason.
func TestAnthropicImageExchangeShadowed(t *testing.T) {
	ctx := context.Background()
	scfg := simpool.NewDefaultConfig()
	scfg.LatencyScale = 0
	sim, err := simpool.New(scfg)
	if err != nil {
		t.Fatal(err)
	}
	simSrv := httptest.NewServer(sim)
	defer simSrv.Close()
	pcfg := shadow.NewDefaultConfig()
	for i := range pcfg.Workers {
		pcfg.Workers[i].BaseURL = simSrv.URL + "/v1"
	}
	pool, err := shadow.NewPool(pcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	vision, _ := shadow.NewSingle(pool, "claude-sonnet-4")
	text, _ := shadow.NewSingle(pool, "qwen3-32b")

	cfg := NewDefaultConfig()
	q := NewMemoryQueue(10)
	stats := NewStats()
	tap, err := NewTap(cfg, q, stats, WithPIISecret(testSecret))
	if err != nil {
		t.Fatal(err)
	}
	st := engine.Open(t)
	proc := NewProcessor(cfg, q, syncWriter{st}, []shadow.Pipeline{vision, text}, flatPricer(0), stats, nil)
	if err := proc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	// Loopback is trusted here: the copy keeps the caller's X-Request-Id.
	f := newProxyFixture(t, &incumbenttest.Handler{}, tap, func(c *ProxyConfig) { c.TrustedNetworks = []string{"127.0.0.0/8", "::1"} })
	const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
	a := f.do(t, f.front.URL, "POST", "/v1/messages",
		`{"model":"claude-sonnet-4-20250514","max_tokens":64,"messages":[{"role":"user","content":[`+
			`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"`+png+`"}},{"type":"text","text":"What is in this picture?"}]}]}`,
		map[string]string{"x-api-key": "k", "anthropic-version": "2023-06-01", "X-Request-Id": "img-1"})
	if a.status != 200 {
		t.Fatalf("proxy answered %d: %s", a.status, a.body)
	}
	waitFor(t, "the exchange shadowed", func() bool { return stats.Snapshot(0).Processed == 1 })
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := proc.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	tr, err := st.GetTrace(ctx, "img-1")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tr.Request.Input, `"image_url":{"url":"data:image/png;base64,`+png) {
		t.Errorf("stored request lacks the image: %s", tr.Request.Input)
	}
	runs := map[string]store.Run{}
	for _, r := range tr.Runs {
		runs[r.Pipeline] = r
	}
	inc, v, tx := runs["incumbent:claude-sonnet-4"], runs["single:claude-sonnet-4"], runs["single:qwen3-32b"]
	if inc.FinalOutput != "echo: What is in this picture? (saw 1 media)" || inc.InputReduced {
		t.Errorf("incumbent run %q reduced %v", inc.FinalOutput, inc.InputReduced)
	}
	if v.Status != store.StatusOK || v.InputReduced || !strings.HasPrefix(v.FinalOutput, "(SIMULATED: simllm saw 1 image.)") {
		t.Errorf("vision candidate: status %s reduced %v output %.60q", v.Status, v.InputReduced, v.FinalOutput)
	}
	if tx.Status != store.StatusOK || !tx.InputReduced || !strings.Contains(tx.InputReducedReason, "image image/png") ||
		strings.Contains(tx.FinalOutput, "saw 1 image") {
		t.Errorf("text-only candidate: status %s (%s) reduced %v %q", tx.Status, tx.Error, tx.InputReduced, tx.InputReducedReason)
	}
	for _, s := range tr.Steps {
		if strings.Contains(s.Messages, png) {
			t.Errorf("step of run %s stores the image's bytes: %s", s.RunID, s.Messages)
		}
	}
}
