package ingest

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// A copy whose incumbent did not answer 2xx (a 404 to a request with no valid
// key, say) is stored with the incumbent's failure but shadowed only with
// ingest.shadow_incumbent_errors, on the store-first queue and on the
// in-memory (Kafka-like) path alike; the skip is counted by reason.
func TestIncumbentFailuresAreStoredNotShadowed(t *testing.T) {
	failed := func(id string, status int) Exchange {
		ex := exchange(id, "question "+id)
		ex.Response.Status, ex.Response.Error = status, `{"error":{"message":"Invalid URL"}}`
		return ex
	}
	for _, shadowErrors := range []bool{false, true} {
		ctx := context.Background()
		st := engine.Open(t)
		cfg := storeFirstConfig()
		cfg.ShadowIncumbentErrors = shadowErrors
		cand := &echoPipeline{}
		sf := startStoreFirst(t, st, cfg, cand, nil)
		for _, ex := range []Exchange{failed("nf-404", http.StatusNotFound), failed("nf-401", http.StatusUnauthorized), exchange("ok-200", "fine")} {
			// A client's own store_only is replaced by the tap's decision.
			ex.StoreOnly = "client says so"
			if code, resp := sf.tap.Offer(ctx, ex); code != http.StatusAccepted {
				t.Fatalf("offer %s = %d %+v", ex.RequestID, code, resp)
			}
		}
		waitForD(t, 30*time.Second, "the copies handled", func() bool {
			s := sf.stats.Snapshot(0)
			return s.Processed+s.StoredOnly[SkipIncumbentNotOK] == 3
		})
		sf.stop(t, 5*time.Second)
		for _, id := range []string{"nf-404", "nf-401"} {
			tr, err := st.GetTrace(ctx, id)
			if err != nil {
				t.Fatalf("shadow_incumbent_errors=%v: %s not stored: %v", shadowErrors, id, err)
			}
			var inc, cands int
			for _, r := range tr.Runs {
				switch r.Mode {
				case store.ModeIncumbent:
					inc++
					if r.Status != store.StatusError {
						t.Errorf("%s: incumbent run status %q; want error", id, r.Status)
					}
				case store.ModeCandidate:
					cands++
				}
			}
			want := 0
			if shadowErrors {
				want = 1
			}
			if inc != 1 || cands != want {
				t.Errorf("shadow_incumbent_errors=%v: %s has %d incumbent and %d candidate runs; want 1 and %d", shadowErrors, id, inc, cands, want)
			}
		}
		if runs := candidateRuns(t, st, "ok-200"); len(runs) != 1 {
			t.Errorf("shadow_incumbent_errors=%v: a 2xx copy has %d candidate runs; want 1", shadowErrors, len(runs))
		}
		skipped := sf.stats.Snapshot(0).StoredOnly[SkipIncumbentNotOK]
		if want := map[bool]int64{false: 2, true: 0}[shadowErrors]; skipped != want {
			t.Errorf("shadow_incumbent_errors=%v: stored_only[incumbent_not_2xx] = %d; want %d", shadowErrors, skipped, want)
		}
		if pending := pendingWork(t, st); len(pending) != 0 {
			t.Errorf("shadow_incumbent_errors=%v: work left pending: %+v (a store-only copy owes nothing)", shadowErrors, pending)
		}
	}

	// Delivered without store-first bookkeeping (as from Kafka).
	ctx := context.Background()
	st := engine.Open(t)
	cfg := NewDefaultConfig()
	cfg.Workers = 2
	q := NewMemoryQueue(10)
	stats := NewStats()
	cand := &echoPipeline{}
	p := NewProcessor(cfg, q, syncWriter{st}, []shadow.Pipeline{cand}, flatPricer(0.001), stats, nil)
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	tap, err := NewTap(cfg, q, stats, WithPIISecret([]byte("k")))
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := tap.Offer(ctx, failed("k-429", http.StatusTooManyRequests)); code != http.StatusAccepted {
		t.Fatalf("offer answered %d", code)
	}
	waitFor(t, "the skip counted", func() bool { return stats.Snapshot(0).StoredOnly[SkipIncumbentNotOK] == 1 })
	_ = p.Shutdown(ctx)
	if tr, err := st.GetTrace(ctx, "k-429"); err != nil || len(tr.Runs) != 1 || tr.Runs[0].Mode != store.ModeIncumbent {
		t.Errorf("k-429: %+v, %v; want the request with its incumbent run only", tr, err)
	}
	if len(cand.seen) != 0 {
		t.Errorf("the candidate ran on %v", cand.seen)
	}
}
