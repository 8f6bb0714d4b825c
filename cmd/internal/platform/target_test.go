package platform

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// healthServer answers GET /healthz with h, as `serve` does.
func healthServer(t *testing.T, h ServerHealth) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(h)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestResolveStore: the one rule every command follows. An explicit --data or
// --addr wins over whatever server answers on the configured address; a
// server holding the folder is used (or, for the commands that open the store
// themselves, refused); nothing is opened here that the flags did not name.
func TestResolveStore(t *testing.T) {
	dir := t.TempDir()
	serverData := filepath.Join(dir, "server-data")
	otherData := filepath.Join(dir, "other-data")
	holding := healthServer(t, ServerHealth{Status: "ok", Store: "embedded chDB", StoreID: StoreID(serverData)})
	tapRole := healthServer(t, ServerHealth{Status: "ok", Role: "tap", Store: "none (tap role)"})
	strangerSrv := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(strangerSrv.Close)
	stranger := strings.TrimPrefix(strangerSrv.URL, "http://")
	nobody := freeAddr(t)
	const (
		here   = "here"
		server = "server"
	)
	tests := []struct {
		name      string
		access    StoreAccess
		addr      string
		data, dsn string
		ex        Explicit
		want      string // here, server, or "" with wantErr
		wantErr   string
		wantLine  string
	}{
		{name: "none: no store, no line", access: AccessNone, addr: holding, data: serverData},
		{name: "serve owns its store", access: AccessOwn, addr: holding, data: otherData, want: here, wantLine: "store: embedded chDB in " + otherData},

		{name: "either, no flags, the server answers", access: AccessEither, addr: holding, data: otherData, want: server,
			wantLine: "through the server at " + holding + "; not embedded chDB in " + otherData},
		{name: "either, no flags, the server holds the configured folder", access: AccessEither, addr: holding, data: serverData, want: server,
			wantLine: "store: embedded chDB in " + serverData + " (through the server at " + holding + ")"},
		{name: "either, no flags, nobody answers", access: AccessEither, addr: nobody, data: otherData, want: here,
			wantLine: "store: embedded chDB in " + otherData + " (opened here; no server answering at " + nobody + ")"},
		{name: "either, no flags, not a conductor-shadow server", access: AccessEither, addr: stranger, data: otherData, want: here, wantLine: "did not answer as expected"},
		{name: "either, --data of another folder than the server's", access: AccessEither, addr: holding, data: otherData, ex: Explicit{Data: true}, want: here,
			wantLine: "not the --data folder"},
		{name: "either, --data of the server's folder", access: AccessEither, addr: holding, data: serverData, ex: Explicit{Data: true}, want: server},
		{name: "either, --data and --addr disagree", access: AccessEither, addr: holding, data: otherData, ex: Explicit{Data: true, Addr: true},
			wantErr: "holds an embedded chDB store (store_id " + StoreID(serverData) + "), not the --data folder " + otherData},
		{name: "either, --data and --addr agree", access: AccessEither, addr: holding, data: serverData, ex: Explicit{Data: true, Addr: true}, want: server},
		{name: "either, --addr with nobody answering", access: AccessEither, addr: nobody, data: otherData, ex: Explicit{Addr: true}, wantErr: "no server answering at " + nobody + " (--addr"},
		{name: "either, --addr of a stranger", access: AccessEither, addr: stranger, data: otherData, ex: Explicit{Addr: true}, wantErr: "GET /healthz: HTTP 404) (--addr"},
		{name: "either, --addr with a server", access: AccessEither, addr: holding, data: otherData, ex: Explicit{Addr: true}, want: server},
		{name: "either, --local while the server holds the folder", access: AccessEither, addr: holding, data: serverData, ex: Explicit{Local: true}, wantErr: "stop `serve` first"},
		{name: "either, --local on another folder", access: AccessEither, addr: holding, data: otherData, ex: Explicit{Local: true}, want: here},
		{name: "either, a ClickHouse server DSN", access: AccessEither, addr: holding, data: serverData, dsn: "clickhouse://u:secret@127.0.0.1:9000/db", want: here,
			wantLine: "store: ClickHouse server clickhouse://u:***@127.0.0.1:9000/db"},

		{name: "server only, nobody answers", access: AccessServer, addr: nobody, data: serverData, wantErr: "no server answering at " + nobody + ": start `conductor-shadow serve` first"},
		{name: "server only, --addr where nobody answers", access: AccessServer, addr: nobody, data: serverData, ex: Explicit{Addr: true}, wantErr: "no server answering at " + nobody + ": start `conductor-shadow serve` there, or give the address of a running server"},
		{name: "server only, no flags", access: AccessServer, addr: holding, data: otherData, want: server},
		{name: "server only, --data of another folder", access: AccessServer, addr: holding, data: otherData, ex: Explicit{Data: true}, wantErr: "not the --data folder " + otherData},
		{name: "server only, --data of the server's folder", access: AccessServer, addr: holding, data: serverData, ex: Explicit{Data: true}, want: server},
		{name: "server only, a tap-role server", access: AccessServer, addr: tapRole, data: serverData, want: server, wantLine: "no store (tap role)"},
		{name: "server only, a DSN", access: AccessServer, addr: holding, dsn: "clickhouse://127.0.0.1:9000/db", want: server},

		{name: "here only, the server holds the folder", access: AccessHere, addr: holding, data: serverData, wantErr: "stop `serve` first"},
		{name: "here only, the server holds another", access: AccessHere, addr: holding, data: otherData, want: here, wantLine: "(opened here; the server at " + holding + " holds"},
		{name: "here only, nobody answers", access: AccessHere, addr: nobody, data: otherData, want: here},
		{name: "new folder, the server holds it", access: AccessNew, addr: holding, data: serverData, ex: Explicit{Data: true}, wantErr: "stop `serve` first"},
		{name: "new folder, nobody answers", access: AccessNew, addr: nobody, data: otherData, ex: Explicit{Data: true}, want: here},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := NewDefaultConfig()
			cfg.Server.Addr, cfg.Store.Path, cfg.Store.DSN = tt.addr, tt.data, tt.dsn
			got, err := ResolveStore(context.Background(), cfg, tt.access, tt.ex)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want it to say %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			where := here
			if got.Server {
				where = server
				if got.Addr != tt.addr {
					t.Errorf("server at %q, want %q", got.Addr, tt.addr)
				}
			}
			if tt.want == "" {
				if got != (StoreTarget{}) {
					t.Fatalf("got %+v, want no store", got)
				}
				return
			}
			if where != tt.want || !strings.Contains(got.Line, tt.wantLine) || !strings.HasPrefix(got.Line, "store: ") {
				t.Fatalf("%s with line %q, want %s with a line holding %q", where, got.Line, tt.want, tt.wantLine)
			}
		})
	}
}

// TestCheckStoreFolder: a mistyped --data is an error naming the folder and
// how to create a store, never a new empty store; checking creates nothing.
func TestCheckStoreFolder(t *testing.T) {
	dir := t.TempDir()
	withStore := filepath.Join(dir, "data")
	if err := os.MkdirAll(filepath.Join(withStore, "metadata"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The engine's mark of a database (store.EmbeddedStoreIn, checked against
	// the real engine in the store package).
	if err := os.WriteFile(filepath.Join(withStore, "metadata", "shadow.sql"), []byte("ATTACH DATABASE shadow\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	typo := filepath.Join(dir, "dta")
	for _, tt := range []struct {
		name, path, dsn, wantErr string
	}{
		{name: "a folder with a store", path: withStore},
		{name: "a ClickHouse server", path: typo, dsn: "clickhouse://127.0.0.1:9000/db"},
		{name: "an empty folder", path: empty, wantErr: "no store in " + empty + ": the folder holds no store; check --data (or store.path), or create a store there with `conductor-shadow serve --data " + empty + "`"},
		{name: "a mistyped folder", path: typo, wantErr: "no store in " + typo + ": the folder does not exist"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := NewDefaultConfig()
			cfg.Store.Path, cfg.Store.DSN = tt.path, tt.dsn
			err := CheckStoreFolder(cfg)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrNoStore) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err %v, want ErrNoStore saying %q", err, tt.wantErr)
			}
		})
	}
	if _, err := os.Stat(typo); !os.IsNotExist(err) {
		t.Fatalf("checking created %s: %v", typo, err)
	}
}
