package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestServeAndShutdown(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- runArgs(ctx, []string{"--addr", "127.0.0.1:0", "--latency-scale", "0", "--sets", "../../regression-sets"}, ready)
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatal(err)
	case <-time.After(5 * time.Second):
		t.Fatal("server did not start")
	}
	hc := &http.Client{Transport: &http.Transport{}}
	resp, err := hc.Post("http://"+addr+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"gpt-5","messages":[{"role":"user","content":"hello"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		SystemFingerprint string `json:"system_fingerprint"`
	}
	err = json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	hc.CloseIdleConnections()
	if err != nil || resp.StatusCode != http.StatusOK || out.SystemFingerprint != "simllm" {
		t.Fatalf("status %d fingerprint %q err %v", resp.StatusCode, out.SystemFingerprint, err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("shutdown: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("server did not stop")
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--latency-scale", "-1", "--sets", "../../regression-sets"},
		{"--sets", t.TempDir()},
		{"--no-such-flag"},
	} {
		if err := runArgs(context.Background(), args, nil); err == nil {
			t.Errorf("%v: want an error", args)
		}
	}
}
