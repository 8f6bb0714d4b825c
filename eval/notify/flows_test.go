package notify

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/conductor-shadow/conductor-shadow/eval/gate"
	"github.com/conductor-shadow/conductor-shadow/store/dataflow"
)

// The flow meter counts what the receiver got: every attempt as a request
// with its body bytes, a delivered notice as an item, under the webhook's
// host only (its path is the receiver's secret).
func TestWebhookDeliveriesAreCountedForTheRecordOfDataFlows(t *testing.T) {
	rc := newReceiver(t, func(i int, w http.ResponseWriter, _ *http.Request) {
		if i == 0 {
			http.Error(w, "upstream failed", http.StatusBadGateway)
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
	meter := dataflow.NewMeter(nil)
	n := startNotifier(t, testConfig(), notices(t, engine.Open(t)), env("HOOK", rc.url()), WithFlowMeter(meter))
	n.Offer(suiteState("conductor", "v1", "gsm8k-150", gate.Fail), suiteState("conductor", "v1", "mmlu-100", gate.Pass))
	waitFor(t, "two deliveries", func() bool { return n.Stats().Sinks[SinkWebhook].Sent == 2 })
	rc.mu.Lock()
	var bytes int64
	for _, b := range rc.bodies {
		bytes += int64(len(b))
	}
	requests := int64(len(rc.bodies))
	rc.mu.Unlock()
	got := meter.Totals(dataflow.KindWebhook)
	if got.Items != 2 || got.Requests != requests || got.SentBytes != bytes || got.ContentItems != 0 {
		t.Errorf("meter %+v; the receiver got %d requests, %d bytes, 2 notices", got, requests, bytes)
	}
	if requests != 3 {
		t.Errorf("%d requests, want 3 (one 502 retried)", requests)
	}
	if host := n.boxes[0].sink.host(); host != strings.TrimPrefix(rc.srv.URL, "http://") || strings.Contains(host, "s3cr3t") {
		t.Errorf("webhook host %q", host)
	}
}
