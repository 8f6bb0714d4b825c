package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store/storetest"
)

// sseIncumbent streams a chat completion in chunks spaced by gap, for far
// longer than the server's read_timeout.
type sseIncumbent struct {
	chunks int
	gap    time.Duration
}

func (s sseIncumbent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "text/event-stream")
	for i := range s.chunks {
		fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-s\",\"model\":\"gpt-5\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"part%d \"}}]}\n\n", i)
		w.(http.Flusher).Flush()
		time.Sleep(s.gap)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// closedByServer reports whether the server ended conn (EOF or reset) before
// the client's own 10 s deadline.
func closedByServer(conn net.Conn) error {
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := io.ReadAll(conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("the connection was still open after 10 s")
	}
	return nil
}

// The server cuts a caller that sends its headers or body too slowly and
// closes idle connections, but a streamed answer lasting several times the
// read timeout reaches the client whole: there is no write timeout. Checked
// by what happens to each connection, not by timing it.
func TestServeHTTPTimeouts(t *testing.T) {
	storetest.RequireEngine(t)
	const chunks = 8
	base, _, _ := guardedServe(t, t.Context(), freeAddr(t),
		"  read_header_timeout: 300ms\n  read_timeout: 400ms\n  idle_timeout: 400ms\n", sseIncumbent{chunks: chunks, gap: 200 * time.Millisecond})
	addr := strings.TrimPrefix(base, "http://")

	// A streamed answer of 1.6 s, four times the read timeout.
	a := ask(t, "POST", base+"/v1/chat/completions", `{"model":"gpt-5","stream":true,"messages":[{"role":"user","content":"count"}]}`,
		map[string]string{"Content-Type": "application/json"})
	if a.status != http.StatusOK || strings.Count(a.body, "part") != chunks || !strings.Contains(a.body, "[DONE]") {
		t.Errorf("the streamed answer arrived as %d with %d of %d chunks: %q", a.status, strings.Count(a.body, "part"), chunks, a.body)
	}

	// Headers that never end.
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "POST /v1/tap HTTP/1.1\r\nHost: %s\r\n", addr)
	if err := closedByServer(conn); err != nil {
		t.Errorf("slow headers: %v", err)
	}
	conn.Close()

	// A body that never ends, on the tap and on a mirrored route.
	for _, path := range []string{"/v1/tap", "/v1/chat/completions"} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"request\":", path, addr)
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		switch {
		case err == nil && resp.StatusCode == http.StatusBadRequest:
		case err == nil:
			t.Errorf("slow body on %s answered %d; want 400", path, resp.StatusCode)
		default:
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Errorf("slow body on %s: no answer and still open after 10 s", path)
			}
		}
		conn.Close()
	}

	// An idle keep-alive connection.
	conn, err = net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz on a keep-alive connection: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := br.ReadByte(); err == nil || func() bool { var ne net.Error; return errors.As(err, &ne) && ne.Timeout() }() {
		t.Errorf("an idle keep-alive connection was not closed by the server: %v", err)
	}
}

// The data folder is private: a fresh one is created 0700 with every file
// 0600 by the command run as an OS process (umask 077 set in main before the engine starts),
// and a folder written before with looser modes is mended when it opens.
// Checked by walking the folder after the server stored a copy and stopped.
func TestServeDataFolderIsPrivate(t *testing.T) {
	t.Parallel() // its serve processes are its own: runs beside the other parallel tests
	storetest.RequireEngine(t)
	bin := commandBinary(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	// An older folder: world-readable, with a world-readable file inside.
	if err := os.MkdirAll(filepath.Join(data, "old"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(data, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(data, "old", "notes.txt"), "x")
	if err := os.Chmod(filepath.Join(data, "old", "notes.txt"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "CONDUCTOR_SHADOW_DATA="+data, "CONDUCTOR_SHADOW_POOL_URL=http://127.0.0.1:9/v1")
	p := startServe(t, bin, env, "serve")
	body := `{"request_id":"perm-1","request":{"model":"gpt-5","messages":[{"role":"user","content":"hello"}]},"response":{"model":"gpt-5","content":"hi","latency_ms":5,"usage":{"prompt_tokens":1,"completion_tokens":1}}}`
	// The shadow side runs at a lower priority: on a busy machine its first
	// commit may outlast accept_timeout (503, sending again is safe; 200
	// duplicate once the first landed).
	for try := 0; ; try++ {
		a := ask(t, "POST", "http://"+p.addr+"/v1/tap", body, map[string]string{"Content-Type": "application/json"})
		if a.status == http.StatusAccepted || a.status == http.StatusOK {
			break
		}
		if a.status != http.StatusServiceUnavailable || try == 30 {
			t.Fatalf("tap answered %d %s", a.status, a.body)
		}
		time.Sleep(time.Second)
	}
	if rows := p.query(t, "SELECT count() FROM requests WHERE request_id = 'perm-1'"); len(rows) != 1 || rows[0][0] != "1" {
		t.Fatalf("the copy is not stored: %v", rows)
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
	var dirs, files int
	err := filepath.WalkDir(data, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		want := fs.FileMode(0o600)
		if d.IsDir() {
			want, dirs = 0o700, dirs+1
		} else {
			files++
		}
		if got := info.Mode().Perm(); got&0o077 != 0 || (d.IsDir() && got != want) {
			t.Errorf("%s is %v; want %v", path, got, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if dirs < 10 || files < 20 {
		t.Fatalf("walked %d folders and %d files; the engine's data must be among them", dirs, files)
	}
	t.Logf("walked %d folders and %d files of a fresh data folder: all private", dirs, files)
}
