package ingest

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/gin-gonic/gin"
)

func TestBodyBudgetRead(t *testing.T) {
	b := NewBodyBudget(100)
	for _, tc := range []struct {
		name          string
		body          string
		length, limit int64
		wantData      string
		complete      bool
		err           error
	}{
		{"known length", "hello", 5, 50, "hello", true, nil},
		{"unknown length", "hello", -1, 50, "hello", true, nil},
		{"known length beyond the limit", strings.Repeat("x", 60), 60, 50, "", false, nil},
		{"unknown length beyond the limit", strings.Repeat("x", 60), -1, 50, strings.Repeat("x", 51), false, nil},
		{"known length beyond the budget", strings.Repeat("x", 101), 101, 200, "", false, ErrBodyBudget},
		{"unknown length beyond the budget", strings.Repeat("x", 150), -1, 200, "", false, ErrBodyBudget},
	} {
		data, complete, release, err := b.Read(strings.NewReader(tc.body), tc.length, tc.limit)
		if err != tc.err || complete != tc.complete || tc.err == nil && string(data) != tc.wantData {
			t.Errorf("%s: Read = %q, %v, %v; want %q, %v, %v", tc.name, data, complete, err, tc.wantData, tc.complete, tc.err)
		}
		release()
		release() // twice is harmless
		if b.Held() != 0 {
			t.Errorf("%s: %d bytes still held after release", tc.name, b.Held())
		}
	}
	// A body broken off mid-way is an error, not a short body.
	if _, _, release, err := b.Read(iotest.TimeoutReader(strings.NewReader("abc")), -1, 50); err == nil {
		t.Error("a failing body read as complete")
	} else {
		release()
	}
	// What one body holds, another cannot take.
	_, _, release, err := b.Read(strings.NewReader(strings.Repeat("x", 80)), 80, 100)
	if err != nil || b.Held() != 80 {
		t.Fatalf("first body: %v, held %d", err, b.Held())
	}
	if _, _, r2, err := b.Read(strings.NewReader(strings.Repeat("x", 30)), 30, 100); err != ErrBodyBudget {
		t.Errorf("second body: %v; want ErrBodyBudget while the first holds 80 of 100", err)
		r2()
	}
	release()
	if _, _, r3, err := b.Read(strings.NewReader(strings.Repeat("x", 30)), 30, 100); err != nil {
		t.Errorf("after the release: %v", err)
	} else {
		r3()
	}
}

// slowClients opens n connections that each announce a body of size bytes,
// send all of it but its last byte and stall; close ends them.
func slowClients(t testing.TB, addr, path string, n, size int) (close func()) {
	t.Helper()
	payload := bytes.Repeat([]byte("a"), size-1) // shared: the clients' own memory stays one body
	var conns []net.Conn
	var wg sync.WaitGroup
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		wg.Add(1)
		go func() {
			defer wg.Done()
			fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", path, addr, size)
			_, _ = c.Write(payload) // blocks while nobody reads; ends when closed
		}()
	}
	return func() {
		for _, c := range conns {
			_ = c.Close()
		}
		wg.Wait()
	}
}

// heapMiB is the live heap after a collection, MiB.
func heapMiB() float64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapAlloc) / (1 << 20)
}

const (
	slowClientCount = 40
	slowBodyBytes   = 4 << 20
)

// discardingIncumbent reads each body without keeping it (it shares the
// test's heap), then answers a chat completion.
var discardingIncumbent = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"id":"chatcmpl-1","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"}}]}`)
})

// 40 clients sending 4 MiB bodies slowly cannot pin more than the budget
// (16 MiB): 4 bodies are read, the other 36 are refused at once and counted —
// the tap answers 503 body_budget, the proxy forwards them without copying.
// The heap figure is logged; the assertion is on the counters.
func TestSlowBodiesCannotPinMemory(t *testing.T) {
	const budget = 16 << 20
	admitted := int64(budget / slowBodyBytes)
	refused := int64(slowClientCount) - admitted

	t.Run("tap", func(t *testing.T) {
		cfg := NewDefaultConfig()
		cfg.MaxBatchBytes = cfg.MaxBodyBytes
		cfg.MaxUnfinishedBodyBytes = budget
		b := NewBodyBudget(cfg.MaxUnfinishedBodyBytes)
		stats := NewStats()
		tap, err := NewTap(cfg, NewMemoryQueue(10), stats, WithPIISecret([]byte("k")), WithBodyBudget(b))
		if err != nil {
			t.Fatal(err)
		}
		gin.SetMode(gin.TestMode)
		r := gin.New()
		tap.Register(r)
		srv := httptest.NewServer(r)
		defer srv.Close()
		base := heapMiB()
		done := slowClients(t, strings.TrimPrefix(srv.URL, "http://"), "/v1/tap", slowClientCount, slowBodyBytes)
		defer done()
		waitFor(t, "the refusals counted", func() bool { return stats.Snapshot(0).Dropped[ReasonBodyBudget] == refused })
		waitFor(t, "the admitted bodies read", func() bool { return b.Held() == admitted*slowBodyBytes })
		t.Logf("tap: %d slow 4 MiB bodies: %.1f MiB of heap above the start (budget %d MiB), %d bytes held, %d refused",
			slowClientCount, heapMiB()-base, budget>>20, b.Held(), stats.Snapshot(0).Dropped[ReasonBodyBudget])
		if b.Held() > b.Max() {
			t.Errorf("held %d bytes; the budget is %d", b.Held(), b.Max())
		}
	})

	t.Run("proxy", func(t *testing.T) {
		tap := &recordingTap{}
		f := newProxyFixture(t, discardingIncumbent, tap)
		b := NewBodyBudget(budget)
		f.proxy.UseBodyBudget(b)
		base := heapMiB()
		done := slowClients(t, strings.TrimPrefix(f.front.URL, "http://"), "/v1/chat/completions", slowClientCount, slowBodyBytes)
		defer done()
		waitFor(t, "the refusals counted", func() bool { return f.stats.Snapshot(0).Mirrored[ReasonBodyBudget] == refused })
		waitFor(t, "the admitted bodies read", func() bool { return b.Held() == admitted*slowBodyBytes })
		t.Logf("proxy: %d slow 4 MiB bodies: %.1f MiB of heap above the start (budget %d MiB), %d bytes held, %d forwarded without a copy",
			slowClientCount, heapMiB()-base, budget>>20, b.Held(), f.stats.Snapshot(0).Mirrored[ReasonBodyBudget])
		if got := f.stats.Snapshot(0).Dropped[ReasonBodyBudget]; got != refused {
			t.Errorf("dropped[body_budget] = %d; want %d", got, refused)
		}
		if b.Held() > b.Max() {
			t.Errorf("held %d bytes; the budget is %d", b.Held(), b.Max())
		}
	})
}

// BenchmarkSlowBodies reports the heap that 40 slow 4 MiB proxy bodies hold
// with the default budget (64 MiB) and with one large enough for all (1 GiB,
// as good as none): go test -run XXX -bench SlowBodies -benchtime 1x ./ingest/
func BenchmarkSlowBodies(b *testing.B) {
	for _, budget := range []int64{DefaultMaxUnfinishedBodyBytes, 1 << 30} {
		b.Run(fmt.Sprintf("budget=%dMiB", budget>>20), func(b *testing.B) {
			for range b.N {
				f := newProxyFixture(b, discardingIncumbent, &recordingTap{})
				bb := NewBodyBudget(budget)
				f.proxy.UseBodyBudget(bb)
				base := heapMiB()
				done := slowClients(b, strings.TrimPrefix(f.front.URL, "http://"), "/v1/chat/completions", slowClientCount, slowBodyBytes)
				want := min(int64(slowClientCount), budget/slowBodyBytes) * slowBodyBytes
				for bb.Held() < want {
					runtime.Gosched()
				}
				b.ReportMetric(heapMiB()-base, "heap-MiB")
				b.ReportMetric(float64(bb.Held())/(1<<20), "held-MiB")
				done()
			}
		})
	}
}
