package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/conductor-shadow/conductor-shadow/cmd/internal/platform"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// apiClient talks to a running `conductor-shadow serve`.
type apiClient struct {
	base  string // e.g. http://127.0.0.1:8080
	token string
	http  *http.Client
}

// newAPIClient talks to the server at addr (host:port or a base URL) with the
// bearer token (needed beyond loopback); timeout 0 waits as long as ctx.
func newAPIClient(addr, token string, timeout time.Duration) *apiClient {
	return &apiClient{base: platform.BaseURL(addr), token: token, http: &http.Client{Timeout: timeout}}
}

// serverAPI is the client of the server a command's store resolved to.
func serverAPI(cfg platform.Config, t platform.StoreTarget, timeout time.Duration) *apiClient {
	return newAPIClient(t.Addr, os.Getenv(cfg.Server.APITokenEnv), timeout)
}

// post sends body as JSON to path and decodes a 200 answer into out. A refused
// connection wraps platform.ErrNoServer; any other status is an error carrying
// the server's message.
func (c *apiClient) post(ctx context.Context, path string, body, out any) error {
	resp, err := c.do(ctx, http.MethodPost, path, body, "application/json")
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

// postStream sends body as JSON to path asking for NDJSON and hands every
// line of the 200 answer to line, until the answer ends or line fails.
func (c *apiClient) postStream(ctx context.Context, path string, body any, line func([]byte) error) error {
	resp, err := c.do(ctx, http.MethodPost, path, body, ndjson)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 256<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		if err := line(sc.Bytes()); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("api %s: read answer: %w", path, err)
	}
	return nil
}

// ndjson is the media type of a streamed answer: one JSON object a line.
const ndjson = "application/x-ndjson"

// do sends one request (body as JSON, nil for none) and returns a 200 answer
// for the caller to read and close; any other status is an error carrying
// the server's message.
func (c *apiClient) do(ctx context.Context, method, path string, body any, accept string) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("api %s: %w", path, err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, fmt.Errorf("api %s: %w", path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", accept)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if platform.IsNoServer(err) {
			return nil, fmt.Errorf("api %s: %w", c.base, platform.ErrNoServer)
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
