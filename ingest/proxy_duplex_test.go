package ingest

import (
	"strings"
	"testing"

	"github.com/conductor-shadow/conductor-shadow/ingest/incumbenttest"
)

// TestProxyStreamsWhileItForwardsTheBody: a streamed answer that starts while
// the request body is still being forwarded (a route that is not mirrored
// passes the client's body through) reaches the client whole, every time.
// Without full duplex (ForwardFullDuplex) the server closed the body at the
// first flush, and 4–10 of 200 answers broke off after their first line.
func TestProxyStreamsWhileItForwardsTheBody(t *testing.T) {
	const lines, tries = 5, 200
	f := newProxyFixture(t, incumbenttest.StreamAfterDecode(lines), &recordingTap{})
	body := `{"input":"` + strings.Repeat("x", 3000) + `"}`
	broken, err := incumbenttest.BrokenStreams(f.client, f.front.URL+"/v1/embeddings", body, lines, tries)
	if err != nil {
		t.Fatal(err)
	}
	if broken > 0 {
		t.Errorf("%d of %d streamed answers broke off", broken, tries)
	}
}
