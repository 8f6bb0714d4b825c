package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/conductor-shadow/conductor-shadow/cmd/internal/platform"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// errNoServer means nothing answered at the server URL: the caller may open the
// store itself.
var errNoServer = errors.New("no server answering")

// askServer posts req to a running server's API and decodes its answer into res,
// unless local is set or the store is a ClickHouse server (which any process may
// open). answered is false when nothing answers at the server address, so the
// caller opens the store itself.
func askServer(ctx context.Context, cfg platform.Config, local bool, path string, timeout time.Duration, req, res any) (answered bool, err error) {
	if local || cfg.Store.DSN != "" {
		return false, nil
	}
	err = newAPIClient(cfg.Server.Addr, os.Getenv(cfg.Server.APITokenEnv), timeout).post(ctx, path, req, res)
	if errors.Is(err, errNoServer) {
		return false, nil
	}
	return true, err
}

// apiClient talks to a running `conductor-shadow serve`.
type apiClient struct {
	base  string // e.g. http://127.0.0.1:8080
	token string
	http  *http.Client
}

func newAPIClient(addr, token string, timeout time.Duration) *apiClient {
	base := addr
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	return &apiClient{base: strings.TrimRight(base, "/"), token: token, http: &http.Client{Timeout: timeout}}
}

// post sends body as JSON to path and decodes a 200 answer into out. A refused
// connection is errNoServer; any other status is an error carrying the server's
// message.
func (c *apiClient) post(ctx context.Context, path string, body, out any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("api %s: %w", path, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("api %s: %w", path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.send(req, path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return fmt.Errorf("api %s: read answer: %w", path, err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("api %s: decode answer: %w", path, err)
	}
	return nil
}

// send sends req (for path) with the bearer token and returns a 200 answer
// for the caller to read and close. A refused connection is errNoServer; any
// other status is an error carrying the server's message.
func (c *apiClient) send(req *http.Request, path string) (*http.Response, error) {
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		var opErr *net.OpError
		if errors.As(err, &opErr) && opErr.Op == "dial" {
			return nil, fmt.Errorf("api %s: %w", c.base, errNoServer)
		}
		return nil, fmt.Errorf("api %s: %w", path, err)
	}
	if resp.StatusCode == http.StatusOK {
		return resp, nil
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(raw, &e) == nil && e.Error != "" {
		return nil, fmt.Errorf("server: %s", e.Error)
	}
	return nil, fmt.Errorf("api %s: HTTP %d: %s", path, resp.StatusCode, bytes.TrimSpace(raw))
}

// writeTSV prints a query result: a header line of column names, then one line
// per row, values tab-separated (tabs and newlines inside values escaped as \t, \n).
func writeTSV(w io.Writer, res store.QueryResult) error {
	esc := strings.NewReplacer("\\", "\\\\", "\t", "\\t", "\n", "\\n")
	var b strings.Builder
	line := func(vals []string) {
		for i, v := range vals {
			if i > 0 {
				b.WriteByte('\t')
			}
			b.WriteString(esc.Replace(v))
		}
		b.WriteByte('\n')
	}
	line(res.Columns)
	for _, r := range res.Rows {
		line(r)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeQueryResult writes res as TSV to out and, when it was read from the
// embedded engine's snapshot, when that snapshot was taken to info (stderr,
// so the rows stay machine-readable).
func writeQueryResult(out, info io.Writer, res store.QueryResult) error {
	if err := writeTSV(out, res); err != nil {
		return err
	}
	if !res.SnapshotAt.IsZero() {
		fmt.Fprintf(info, "-- read from a snapshot of the store taken at %s (%d ms ago); rows written since are not in it\n",
			res.SnapshotAt.UTC().Format(time.RFC3339Nano), time.Since(res.SnapshotAt).Milliseconds())
	}
	return nil
}
