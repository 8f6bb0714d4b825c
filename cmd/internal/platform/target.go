package platform

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// StoreAccess is how a command reaches the store; every command of every
// binary declares one (the commands' table tests list them all).
type StoreAccess string

const (
	// AccessNone: the command reads no store (grade, plan parse, power,
	// validity).
	AccessNone StoreAccess = "none"
	// AccessOwn: the command owns the store and creates it when the folder
	// holds none (serve).
	AccessOwn StoreAccess = "owns, creates"
	// AccessServer: only through a running server (replay sends to its tap);
	// no server answering is an error.
	AccessServer StoreAccess = "through the server only"
	// AccessEither: through the server that holds the store, else opened
	// here (query, suite run, forget, shift).
	AccessEither StoreAccess = "through the server, else here"
	// AccessHere: opened here only (set build, export rewards); a server
	// holding the store is an error, as the embedded engine has one owner.
	AccessHere StoreAccess = "here only"
	// AccessNew: creates a store in a new folder only (loadtest generate).
	AccessNew StoreAccess = "here, a new folder only"
)

// Explicit says which of the flags that pick a store were given on the
// command line: --data, --addr (or --tap), --local. A configured or default
// value is not explicit.
type Explicit struct {
	Data, Addr, Local bool
}

// ServerHealth is the body of GET /healthz: the server's store, so a CLI can
// tell whether a running server holds the store it was pointed at. /healthz
// answers any caller under any Host without a token, so it names no folder:
// the embedded store is told by StoreID, a digest of its absolute path.
type ServerHealth struct {
	Status  string `json:"status"`
	Role    string `json:"role,omitempty"`     // server.role: all, tap or shadow
	Store   string `json:"store"`              // the store's kind: "embedded chDB", "ClickHouse server" or "none (tap role)"
	StoreID string `json:"store_id,omitempty"` // StoreID of the embedded store's folder; "" for a ClickHouse server
}

// StoreKind is ServerHealth.Store for cfg (its role aside): the kind of
// store without the folder or DSN.
func StoreKind(cfg Config) string {
	if cfg.Store.DSN != "" {
		return "ClickHouse server"
	}
	return "embedded chDB"
}

// StoreID identifies an embedded store's folder without naming it: the first
// 16 hex digits of SHA-256 of its absolute, cleaned path (symbolic links
// resolved when the folder exists), so the server and a CLI given the same
// folder under another spelling agree.
func StoreID(path string) string {
	p := AbsPath(path)
	if real, err := filepath.EvalSymlinks(p); err == nil {
		p = real
	}
	sum := sha256.Sum256([]byte(filepath.Clean(p)))
	return hex.EncodeToString(sum[:8])
}

// AbsPath makes a path absolute for messages and reports, so a user in
// another folder finds it; the path as given when that fails.
func AbsPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// ErrNoServer means nothing listens at the server address.
var ErrNoServer = errors.New("no server answering")

// BaseURL is the http:// URL of a host:port (kept when it already has a scheme).
func BaseURL(addr string) string {
	base := addr
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	return strings.TrimRight(base, "/")
}

// IsNoServer reports whether err from an HTTP call means nothing listens at
// the address (the dial failed).
func IsNoServer(err error) bool {
	var opErr *net.OpError
	return errors.As(err, &opErr) && opErr.Op == "dial"
}

// FetchHealth reads GET /healthz of the server at addr (host:port or a base
// URL) within 5 s: ErrNoServer when nothing listens, an error when what
// answers is not a conductor-shadow server.
func FetchHealth(ctx context.Context, addr string) (ServerHealth, error) {
	var h ServerHealth
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, BaseURL(addr)+"/healthz", nil)
	if err != nil {
		return h, fmt.Errorf("GET /healthz: %w", err)
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		if IsNoServer(err) {
			return h, ErrNoServer
		}
		return h, fmt.Errorf("GET /healthz: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return h, fmt.Errorf("GET /healthz: HTTP %d", resp.StatusCode)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&h); err != nil || h.Status == "" {
		return h, errors.New("GET /healthz: not a conductor-shadow server")
	}
	return h, nil
}

// StoreTarget is where a command's store is: through the server at Addr
// (Server true) or opened here. Line is the one line the command prints on
// stderr saying which store it reads ("store: embedded chDB in /srv/data
// (through the server at 127.0.0.1:8080)").
type StoreTarget struct {
	Server bool
	Addr   string
	Health ServerHealth // the server's /healthz when one answered
	Line   string
}

// ResolveStore decides, for every command, which store it reaches — the one
// rule, from what the flags name (ex) and what the server at
// cfg.Server.Addr says it holds (its /healthz store_id against the folder's
// StoreID):
//
//   - AccessNone and AccessOwn: the store here (serve creates it).
//   - A ClickHouse DSN: the store here (any process may open it); AccessServer
//     still goes to the server.
//   - AccessNew: the store here; a server holding that folder is an error.
//   - Otherwise /healthz is asked. Nothing answering: with --addr, or
//     AccessServer, an error; else the store here.
//   - A server answering: it is used when it holds the folder, or when
//     --data was not given (AccessEither, AccessServer; --local turns
//     AccessEither into AccessHere). A server holding another store than an
//     explicit --data is an error with --addr or AccessServer, else the folder
//     is opened here. AccessHere refuses a server that holds the folder (stop
//     it first).
//
// Opening here never creates a store (OpenExistingStore), except for
// AccessOwn and AccessNew.
func ResolveStore(ctx context.Context, cfg Config, access StoreAccess, ex Explicit) (StoreTarget, error) {
	addr := cfg.Server.Addr
	here := StoreTarget{Line: "store: " + describeStore(cfg)}
	switch {
	case access == AccessNone:
		return StoreTarget{}, nil
	case access == AccessOwn:
		return here, nil
	case cfg.Store.DSN != "" && access != AccessServer:
		return here, nil
	}
	if access == AccessEither && ex.Local {
		access = AccessHere
	}
	h, err := FetchHealth(ctx, addr)
	if err != nil {
		why := fmt.Sprintf("the server at %s did not answer as expected (%v)", addr, err)
		if errors.Is(err, ErrNoServer) {
			why = "no server answering at " + addr
		}
		switch {
		case access == AccessServer && ex.Addr: // nothing to open here instead
			return StoreTarget{}, fmt.Errorf("%s: start `conductor-shadow serve` there, or give the address of a running server", why)
		case access == AccessServer:
			return StoreTarget{}, fmt.Errorf("%s: start `conductor-shadow serve` first, or give --addr of a running server", why)
		case ex.Addr:
			return StoreTarget{}, fmt.Errorf("%s (--addr %s): start `conductor-shadow serve` there, or drop --addr to open %s here", why, addr, describeStore(cfg))
		}
		here.Line += " (opened here; " + why + ")"
		return here, nil
	}
	server := StoreTarget{Server: true, Addr: addr, Health: h}
	if cfg.Store.DSN != "" { // AccessServer: the server's store is the one it was started with
		server.Line = "store: " + heldStore(h) + " (through the server at " + addr + ")"
		return server, nil
	}
	holds := h.StoreID != "" && h.StoreID == StoreID(cfg.Store.Path)
	server.Line = "store: " + describeStore(cfg) + " (through the server at " + addr + ")"
	if !holds {
		server.Line = fmt.Sprintf("store: %s (through the server at %s; not %s: without --data the running server's store is used)",
			heldStore(h), addr, describeStore(cfg))
	}
	switch access {
	case AccessHere, AccessNew:
		if holds {
			return StoreTarget{}, fmt.Errorf("the server at %s holds %s, which this command opens itself (the embedded engine has one owner): stop `serve` first, or use a ClickHouse server", addr, describeStore(cfg))
		}
		here.Line += " (opened here; the server at " + addr + " holds " + heldStore(h) + ")"
		return here, nil
	}
	if holds || !ex.Data {
		return server, nil
	}
	if ex.Addr || access == AccessServer {
		return StoreTarget{}, fmt.Errorf("the server at %s holds %s, not the --data folder %s", addr, heldStore(h), AbsPath(cfg.Store.Path))
	}
	here.Line += " (opened here; the server at " + addr + " holds " + heldStore(h) + ", not the --data folder)"
	return here, nil
}

// heldStore names what a server says it holds: "another embedded chDB store
// (store_id …)", "a ClickHouse server" or "no store (tap role)".
func heldStore(h ServerHealth) string {
	switch {
	case h.StoreID != "":
		return fmt.Sprintf("an %s store (store_id %s)", h.Store, h.StoreID)
	case strings.HasPrefix(h.Store, "none"):
		return "no store " + strings.TrimSpace(strings.TrimPrefix(h.Store, "none"))
	case h.Store != "":
		return "a " + h.Store
	}
	return "a store it does not name"
}

// describeStore is StoreWhere with the folder absolute: "embedded chDB in
// /abs/data" or "ClickHouse server clickhouse://user:***@host:9000/db".
func describeStore(cfg Config) string {
	cfg.Store.Path = AbsPath(cfg.Store.Path)
	return StoreWhere(cfg)
}

// ErrNoStore: the data folder holds no store, and the command may not create one.
var ErrNoStore = errors.New("no store")

// CheckStoreFolder returns nil when cfg names a ClickHouse server or a folder
// that holds an embedded store (store.EmbeddedStoreIn), else ErrNoStore
// naming the folder and how to create a store there — so a mistyped --data is
// an error, not a new empty store.
func CheckStoreFolder(cfg Config) error {
	if cfg.Store.DSN != "" {
		return nil
	}
	abs := AbsPath(cfg.Store.Path)
	ok, err := store.EmbeddedStoreIn(abs, cfg.Store.Database)
	if err != nil {
		return err
	}
	if ok {
		return nil
	}
	what := "holds no store"
	if _, err := os.Stat(abs); errors.Is(err, os.ErrNotExist) {
		what = "does not exist"
	}
	return fmt.Errorf("%w in %s: the folder %s; check --data (or store.path), or create a store there with `conductor-shadow serve --data %s`", ErrNoStore, abs, what, abs)
}

// OpenExistingStore is OpenStore for every command but serve and generate:
// a folder that holds no store is refused (CheckStoreFolder), never created.
func OpenExistingStore(ctx context.Context, cfg Config) (store.Store, string, error) {
	if err := CheckStoreFolder(cfg); err != nil {
		return nil, "", err
	}
	return OpenStore(ctx, cfg)
}

// CheckNewFolder is the rule of the commands that fill a store with
// generated load-test data (AccessNew): the embedded store's folder must be
// new — missing, or an empty folder — so generated rows never mix with
// recorded traffic. Without an explicit --data the configured folder
// (default ./data) is refused too unless defaultOK, the command's flag
// (named flag) saying the default folder is for load testing. A ClickHouse
// DSN is checked once opened (CheckEmptyStore).
func CheckNewFolder(cfg Config, explicitData, defaultOK bool, flag string) error {
	if cfg.Store.DSN != "" {
		return nil
	}
	abs := AbsPath(cfg.Store.Path)
	if !explicitData && !defaultOK {
		return fmt.Errorf("generated load-test data goes into a new folder: give --data NEW_FOLDER, or --%s to fill the configured folder %s (it must be new or empty too)", flag, abs)
	}
	entries, err := os.ReadDir(abs)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("data folder %s: %w", abs, err)
	case len(entries) > 0:
		return fmt.Errorf("data folder %s is not empty (%d entries): generated load-test data goes into a new folder only, never beside recorded traffic; give --data NEW_FOLDER", abs, len(entries))
	}
	return nil
}

// CheckEmptyStore refuses a store that already holds requests (the
// ClickHouse-server side of CheckNewFolder): generated load-test data never
// goes beside recorded traffic.
func CheckEmptyStore(ctx context.Context, st store.Store, where string) error {
	res, err := st.Query(ctx, "SELECT count() FROM requests")
	if err != nil {
		return fmt.Errorf("count the requests of %s: %w", where, err)
	}
	if len(res.Rows) != 1 || len(res.Rows[0]) != 1 || res.Rows[0][0] != "0" {
		return fmt.Errorf("%s already holds requests: generated load-test data goes into an empty database only", where)
	}
	return nil
}

// storeAnnotation is the cobra annotation holding a command's StoreAccess.
const storeAnnotation = "store"

// WithStore declares how c reaches the store (StoreOf reads it back); the
// binaries' table tests list every command's.
func WithStore(c *cobra.Command, a StoreAccess) *cobra.Command {
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[storeAnnotation] = string(a)
	return c
}

// StoreOf is the StoreAccess c declared with WithStore, "" for none.
func StoreOf(c *cobra.Command) StoreAccess {
	return StoreAccess(c.Annotations[storeAnnotation])
}

// DeclaredStores walks root's command tree: every runnable command by its
// CommandPath ("conductor-shadow suite run") with the StoreAccess it
// declared ("" for none), for the binaries' table tests.
func DeclaredStores(root *cobra.Command) map[string]StoreAccess {
	got := map[string]StoreAccess{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Runnable() {
			got[c.CommandPath()] = StoreOf(c)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return got
}
