package ingest

import (
	"context"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// outcomeQueue is the shadow side's queue as the hand-off sees it: it
// answers each copy by its request id's prefix (ok-, full-, dup-, closed-,
// fail-) and keeps what it took.
type outcomeQueue struct {
	MemoryQueue
	mu    sync.Mutex
	taken []Exchange
}

func (q *outcomeQueue) PublishDurable(ex Exchange, done func(error)) error {
	switch {
	case strings.HasPrefix(ex.RequestID, "full-"):
		return ErrQueueFull
	case strings.HasPrefix(ex.RequestID, "closed-"):
		return ErrQueueClosed
	}
	go func() {
		switch {
		case strings.HasPrefix(ex.RequestID, "dup-"):
			done(ErrDuplicate)
		case strings.HasPrefix(ex.RequestID, "fail-"):
			done(errors.New("engine said no"))
		default:
			q.mu.Lock()
			q.taken = append(q.taken, ex)
			q.mu.Unlock()
			done(nil)
		}
	}()
	return nil
}

type recordedSink struct {
	mu   sync.Mutex
	exs  []Exchange
	fail bool
}

func (s *recordedSink) WriteRecords(_ context.Context, exs []Exchange) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail {
		return errors.New("store down")
	}
	s.exs = append(s.exs, exs...)
	return nil
}

type offeredSink struct {
	mu     sync.Mutex
	counts []store.OfferedCount
}

func (s *offeredSink) InsertOffered(_ context.Context, c []store.OfferedCount) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts = append(s.counts, c...)
	return nil
}

// serveReceiver serves r on a unix socket in a new folder and returns its path
// and a stop function.
func serveReceiver(t *testing.T, r *HandoffReceiver) (string, func()) {
	t.Helper()
	gin.SetMode(gin.ReleaseMode)
	path := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	e := gin.New()
	r.Register(e)
	srv := &http.Server{Handler: e}
	go func() { _ = srv.Serve(ln) }()
	return path, func() { _ = srv.Close() }
}

func TestHandoff(t *testing.T) {
	q := &outcomeQueue{}
	recs, offered := &recordedSink{}, &offeredSink{}
	path, stop := serveReceiver(t, &HandoffReceiver{Queue: q, Records: recs, Offered: offered})
	h, err := NewHandoff(HandoffConfig{Socket: path, Buffer: 64, Batch: 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.PublishDurable(Exchange{RequestID: "ok-early"}, func(error) {}); !errors.Is(err, ErrQueueClosed) {
		t.Fatalf("before Start: %v, want ErrQueueClosed", err)
	}
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}

	// Every copy is told the shadow side's outcome; text and the fields the
	// tap sets travel whole.
	cases := []struct {
		id   string
		want error // nil: taken
	}{
		{"ok-1", nil}, {"ok-2", nil}, {"full-1", ErrQueueFull}, {"dup-1", ErrDuplicate},
		{"closed-1", ErrQueueClosed}, {"fail-1", nil}, {"ok-3", nil},
	}
	res := make([]chan error, len(cases))
	for i, c := range cases {
		res[i] = make(chan error, 1)
		ch := res[i]
		ex := Exchange{RequestID: c.id, StoreOnly: "incumbent_not_2xx", BodyOmitted: "", SubjectHash: "h1",
			Request: ExchangeRequest{Model: "gpt-5"}, Metadata: map[string]string{"route": "/v1/chat/completions"}}
		if err := h.Publish(context.Background(), ex); c.want == nil && c.id != "fail-1" && err != nil {
			t.Fatalf("%s: %v", c.id, err)
		} else {
			ch <- err
		}
	}
	for i, c := range cases {
		err := <-res[i]
		switch {
		case c.id == "fail-1":
			if err == nil || errors.Is(err, ErrShadowUnavailable) || dropReason(err) != ReasonStoreUnavailable {
				t.Errorf("%s: %v, want a store failure", c.id, err)
			}
		case c.want == nil && err != nil, c.want != nil && !errors.Is(err, c.want):
			t.Errorf("%s: %v, want %v", c.id, err, c.want)
		}
	}
	q.mu.Lock()
	if len(q.taken) != 3 || q.taken[0].StoreOnly != "incumbent_not_2xx" || q.taken[0].SubjectHash != "h1" || q.taken[0].Metadata["route"] == "" {
		t.Errorf("taken: %+v", q.taken)
	}
	q.mu.Unlock()
	st := h.Stats()
	if st.HandedOver != 3 || st.Refused[ReasonQueueFull] != 1 || st.Refused["duplicate"] != 1 || st.Unavailable != 0 {
		t.Errorf("stats: %+v", st)
	}

	// Records and offered counts are stored before the answer.
	if err := h.WriteRecords(context.Background(), []Exchange{{RequestID: "rec-1", BodyOmitted: BodyTooLarge}}); err != nil {
		t.Fatal(err)
	}
	if len(recs.exs) != 1 || recs.exs[0].BodyOmitted != BodyTooLarge {
		t.Errorf("records: %+v", recs.exs)
	}
	recs.fail = true
	if err := h.WriteRecords(context.Background(), []Exchange{{RequestID: "rec-2"}}); err == nil {
		t.Error("a record the store refused was answered as stored")
	}
	recs.fail = false
	if err := h.InsertOffered(context.Background(), []store.OfferedCount{{TapID: "t", Offered: 5, WindowStart: time.Unix(60, 0).UTC()}}); err != nil || len(offered.counts) != 1 || offered.counts[0].Offered != 5 {
		t.Errorf("offered: %v %+v", err, offered.counts)
	}
	if err := h.Ready(); err != nil {
		t.Errorf("ready while the shadow side answers: %v", err)
	}

	// The shadow side gone: copies fail at once as not handed over, counted,
	// and Ready says so.
	stop()
	err = h.Publish(context.Background(), Exchange{RequestID: "ok-gone"})
	if !errors.Is(err, ErrShadowUnavailable) || dropReason(err) != ReasonShadowUnavailable {
		t.Fatalf("shadow side gone: %v", err)
	}
	if err := h.Ready(); !errors.Is(err, ErrShadowUnavailable) {
		t.Errorf("Ready with the shadow side gone: %v", err)
	}
	if h.Stats().Unavailable != 1 {
		t.Errorf("unavailable: %+v", h.Stats())
	}

	if err := h.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := h.Shutdown(context.Background()); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
	if err := h.PublishDurable(Exchange{RequestID: "ok-late"}, func(error) {}); !errors.Is(err, ErrQueueClosed) {
		t.Errorf("after Shutdown: %v", err)
	}
}

// TestHandoffBufferFullRefusesAtOnce: with no sender draining (not started
// would refuse; a shadow side that never answers holds the senders), a copy
// beyond the buffer is ErrQueueFull at once, never waited for.
func TestHandoffBufferFullRefusesAtOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	hold := make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-hold })}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	defer close(hold)

	h, err := NewHandoff(HandoffConfig{Socket: path, Buffer: 2, Batch: 1, Timeout: 2 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i := range 2 { // one held by each sender
		if err := h.PublishDurable(Exchange{RequestID: "ok-held" + string(rune('a'+i))}, func(error) {}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for h.Len() > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	var full int
	for i := range 8 {
		start := time.Now()
		err := h.PublishDurable(Exchange{RequestID: "ok-" + string(rune('a'+i))}, func(error) {})
		if time.Since(start) > 100*time.Millisecond {
			t.Fatalf("PublishDurable waited %s", time.Since(start))
		}
		if errors.Is(err, ErrQueueFull) {
			full++
		}
	}
	// 2 senders hold one copy each, the buffer takes 2: the other 6 are refused.
	if full != 6 {
		t.Errorf("%d of 8 refused as full, want 6", full)
	}
	if err := h.Ready(); !errors.Is(err, ErrQueueFull) {
		t.Errorf("Ready with a full buffer: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err) // the held POSTs time out; the rest fail as unavailable
	}
	if st := h.Stats(); st.Unavailable != 4 {
		t.Errorf("not handed over at the stop: %+v, want 4", st)
	}
}

func TestHandoffShutdownWithoutStart(t *testing.T) {
	h, err := NewHandoff(HandoffConfig{Socket: "/nonexistent.sock", Buffer: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := h.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := NewHandoff(HandoffConfig{Buffer: 1}, nil); err == nil {
		t.Error("no socket accepted")
	}
	if _, err := NewHandoff(HandoffConfig{Socket: "x", Buffer: 0}, nil); err == nil {
		t.Error("buffer 0 accepted")
	}
}
