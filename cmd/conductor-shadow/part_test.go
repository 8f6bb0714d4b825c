package main

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/cmd/internal/platform"
)

// recordingPart notes its Start and Shutdown calls in a shared log; it fails
// Start when failStart is set.
type recordingPart struct {
	name      string
	log       *[]string
	failStart bool
	deadline  *time.Duration // remaining time at Shutdown, when set
}

func (p recordingPart) Start(context.Context, *host) error {
	*p.log = append(*p.log, "start "+p.name)
	if p.failStart {
		return errors.New("boom")
	}
	return nil
}

func (p recordingPart) Shutdown(ctx context.Context) error {
	*p.log = append(*p.log, "stop "+p.name)
	if d, ok := ctx.Deadline(); ok && p.deadline != nil {
		*p.deadline = time.Until(d)
	}
	return nil
}

// The composition root starts the parts in order and stops them in reverse,
// once, even when Shutdown is called twice; a part failing Start stops the
// parts built so far (started or not) in reverse.
func TestPartsStartInOrderStopInReverse(t *testing.T) {
	for _, tc := range []struct {
		name     string
		failAt   int // index of the part whose Start fails; -1: none
		wantLog  []string
		wantFail bool
	}{
		{"all start", -1, []string{"start a", "start b", "start c", "stop c", "stop b", "stop a"}, false},
		{"b fails", 1, []string{"start a", "start b", "stop c", "stop b", "stop a"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log []string
			s := newServer(platform.NewDefaultConfig(), slog.New(slog.DiscardHandler))
			for i, n := range []string{"a", "b", "c"} {
				s.add(n, recordingPart{name: n, log: &log, failStart: i == tc.failAt})
			}
			err := s.startParts(context.Background(), &host{})
			if (err != nil) != tc.wantFail || (err != nil && !strings.Contains(err.Error(), "start b")) {
				t.Fatalf("start: %v", err)
			}
			if err == nil {
				if err := s.Shutdown(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(log, tc.wantLog) {
				t.Errorf("calls %q, want %q", log, tc.wantLog)
			}
		})
	}
}

// funcs parts stop once however often Shutdown is called, and without Start.
func TestPartFuncsStopOnce(t *testing.T) {
	n := 0
	p := funcs(nil, func(context.Context) error { n++; return nil })
	for range 2 {
		if err := p.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if n != 1 {
		t.Errorf("stopped %d times, want 1", n)
	}
}
