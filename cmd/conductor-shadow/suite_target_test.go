package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/conductor-shadow/conductor-shadow/cmd/internal/platform"
)

// TestSuiteTarget: an explicit --data or --addr wins over whatever server answers
// on the configured address; without them a running server is asked first.
func TestSuiteTarget(t *testing.T) {
	dir := t.TempDir()
	serverData := filepath.Join(dir, "server-data")
	otherData := filepath.Join(dir, "other-data")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(serverHealth{Status: "ok", Store: "embedded chDB", StoreID: storeID(serverData)})
	}))
	defer srv.Close()
	running := strings.TrimPrefix(srv.URL, "http://")
	nobody := freeAddr(t)
	tests := []struct {
		name                     string
		addr, data, dsn          string
		local, explData, explAdr bool
		wantServer               bool
		wantErr, wantNote        string
	}{
		{name: "no flags, server answers", addr: running, data: otherData, wantServer: true},
		{name: "no flags, nobody answers", addr: nobody, data: otherData, wantNote: "no server answering"},
		{name: "--data of another folder than the server's", addr: running, data: otherData, explData: true, wantNote: "not the --data folder"},
		{name: "--data of the server's folder", addr: running, data: serverData, explData: true, wantServer: true},
		{name: "--data and --addr disagree", addr: running, data: otherData, explData: true, explAdr: true, wantErr: "holds another embedded chDB store, not the --data folder " + otherData},
		{name: "--data and --addr agree", addr: running, data: serverData, explData: true, explAdr: true, wantServer: true},
		{name: "--addr with nobody answering", addr: nobody, data: otherData, explAdr: true, wantErr: "no server answers at --addr"},
		{name: "--addr with a server", addr: running, data: otherData, explAdr: true, wantServer: true},
		{name: "--local", addr: running, data: serverData, local: true},
		{name: "ClickHouse server DSN", addr: running, data: serverData, dsn: "clickhouse://127.0.0.1:9000/db"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := platform.NewDefaultConfig()
			cfg.Server.Addr, cfg.Store.Path, cfg.Store.DSN = tt.addr, tt.data, tt.dsn
			useServer, note, err := suiteTarget(context.Background(), cfg, tt.local, tt.explData, tt.explAdr)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want it to say %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if useServer != tt.wantServer || !strings.Contains(note, tt.wantNote) {
				t.Fatalf("server %v note %q, want server %v note with %q", useServer, note, tt.wantServer, tt.wantNote)
			}
		})
	}
}
