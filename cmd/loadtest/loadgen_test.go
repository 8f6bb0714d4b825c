package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"
)

// TestOpenLoopBoundsOutstanding: with every answer held back, at most Outstanding
// requests are in flight per path; every other due request is counted unsent, and
// every due request is accounted for (answered, failed or unsent).
func TestOpenLoopBoundsOutstanding(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusBadGateway)
	}))
	defer failing.Close()

	tests := []struct {
		name        string
		outstanding int
		url         string
		wantOK      bool
	}{
		{"held answers", 3, srv.URL, true},
		{"failing target", 2, failing.URL, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := &pathResult{}
			target := loadTarget{result: res, request: func(ctx context.Context, i int) (*http.Request, error) {
				return http.NewRequestWithContext(ctx, http.MethodGet, tc.url, nil)
			}}
			loop := openLoop{Rate: 1000, Duration: 40 * time.Millisecond, Outstanding: tc.outstanding, Client: newLoadClient(tc.outstanding)}
			if tc.wantOK {
				go func() {
					// Hold every answer until the schedule is over.
					time.Sleep(200 * time.Millisecond)
					close(release)
				}()
			}
			due, _ := loop.run(context.Background(), []loadTarget{target})
			ok, errs, unsent := int64(len(res.latencies)), res.errors.Load(), res.unsent.Load()
			if ok+errs+unsent != int64(due) {
				t.Fatalf("answered %d + errors %d + unsent %d != due %d", ok, errs, unsent, due)
			}
			if tc.wantOK {
				if ok < 1 || ok > int64(tc.outstanding) || errs != 0 {
					t.Fatalf("answered %d, errors %d; want 1..%d answered (the outstanding cap) and no errors", ok, errs, tc.outstanding)
				}
				for _, d := range res.latencies {
					if d < 100*time.Millisecond {
						t.Fatalf("latency %s: want it measured from the intended send time to the held answer (≥ 100 ms)", d)
					}
				}
				return
			}
			if ok != 0 || errs < 1 || res.firstError() != "status 502" {
				t.Fatalf("answered %d, errors %d, first error %q; want only errors, the first \"status 502\"", ok, errs, res.firstError())
			}
		})
	}
}

func TestRaiseOpenFileLimit(t *testing.T) {
	got, err := raiseOpenFileLimit()
	if err != nil {
		t.Fatal(err)
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if got != lim.Cur || lim.Cur != lim.Max {
		t.Fatalf("limit %d, now soft %d hard %d: want soft raised to hard", got, lim.Cur, lim.Max)
	}
}
