package ingest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/ingest/guard"
	"github.com/conductor-shadow/conductor-shadow/ingest/incumbenttest"
)

// seenIncumbent is the fake incumbent, recording every request it got.
type seenIncumbent struct {
	fake incumbenttest.Handler
	mu   sync.Mutex
	got  []*http.Request // method, URI and headers of each request
}

func (s *seenIncumbent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.got = append(s.got, &http.Request{Method: r.Method, RequestURI: r.RequestURI, Header: r.Header.Clone(), URL: r.URL})
	s.mu.Unlock()
	s.fake.ServeHTTP(w, r)
}

func (s *seenIncumbent) requests() []*http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*http.Request(nil), s.got...)
}

const chatBody = `{"model":"gpt-4o","messages":[{"role":"user","content":"inject this into the shadow side"}]}`

// Every probe class against the proxy's routes is refused before anything is
// read, forwarded, copied or shadowed, on the mirrored routes and on the
// paths passed through alike, and counted by reason; clients without a
// browser's headers (the official SDKs, curl, a server) get through.
func TestProxyGuardRefusesBeforeForwarding(t *testing.T) {
	inc := &seenIncumbent{}
	tap := &recordingTap{}
	f := newProxyFixture(t, inc, tap, func(c *ProxyConfig) { c.TrustedNetworks = []string{"10.0.0.0/8"} })
	f.proxy.UseGuard(guard.NewHosts("127.0.0.1:8080", []string{"shadow.corp.example"}), "api-token-1")
	front := f.proxy.Front(f.proxy) // as serve mounts it: the proxy also catches what the router does not serve
	const loop = "127.0.0.1:40000"
	tests := []struct {
		name, method, path, host, remote string
		header                           map[string]string
		want                             int
		reason                           string // counted refusal; "" when forwarded
	}{
		{"cross-site text/plain chat", "POST", "/v1/chat/completions", "127.0.0.1:8080", loop, map[string]string{"Origin": "http://evil.example", "Content-Type": "text/plain"}, 403, RefusedCrossSite},
		{"cross-site text/plain responses", "POST", "/v1/responses", "127.0.0.1:8080", loop, map[string]string{"Origin": "http://evil.example", "Content-Type": "text/plain"}, 403, RefusedCrossSite},
		{"cross-site under a prefix", "POST", "/openai/v1/chat/completions", "127.0.0.1:8080", loop, map[string]string{"Origin": "http://evil.example"}, 403, RefusedCrossSite},
		{"cross-site to a route mirrored later", "POST", "/v1/messages", "127.0.0.1:8080", loop, map[string]string{"Origin": "http://evil.example"}, 403, RefusedCrossSite},
		{"cross-site pass-through", "POST", "/v1/embeddings", "127.0.0.1:8080", loop, map[string]string{"Origin": "http://evil.example"}, 403, RefusedCrossSite},
		{"fetch metadata cross-site", "POST", "/v1/chat/completions", "127.0.0.1:8080", loop, map[string]string{"Sec-Fetch-Site": "cross-site"}, 403, RefusedCrossSite},
		{"fetch metadata same-site", "POST", "/v1/responses", "127.0.0.1:8080", loop, map[string]string{"Sec-Fetch-Site": "same-site"}, 403, RefusedCrossSite},
		{"null origin", "POST", "/v1/chat/completions", "127.0.0.1:8080", loop, map[string]string{"Origin": "null"}, 403, RefusedCrossSite},
		{"another local port", "POST", "/v1/chat/completions", "127.0.0.1:8080", loop, map[string]string{"Origin": "http://127.0.0.1:3000"}, 403, RefusedCrossSite},
		{"cross-site get", "GET", "/v1/models", "127.0.0.1:8080", loop, map[string]string{"Sec-Fetch-Site": "cross-site"}, 403, RefusedCrossSite},
		{"foreign host", "POST", "/v1/chat/completions", "attacker.example", loop, nil, 421, RefusedForeignHost},
		{"dns rebinding, same-origin to the browser", "POST", "/v1/responses", "attacker.example:8080", loop, map[string]string{"Origin": "http://attacker.example:8080", "Sec-Fetch-Site": "same-origin"}, 421, RefusedForeignHost},
		{"foreign host pass-through", "GET", "/v1/models", "attacker.example", loop, nil, 421, RefusedForeignHost},
		{"beyond loopback, no token", "POST", "/v1/chat/completions", "127.0.0.1:8080", "203.0.113.7:5000", nil, 401, RefusedUntrusted},
		{"beyond loopback, wrong token", "POST", "/v1/chat/completions", "127.0.0.1:8080", "203.0.113.7:5000", map[string]string{guard.DefaultTokenHeader: "api-token-2"}, 401, RefusedUntrusted},
		{"beyond loopback, the token as Authorization", "POST", "/v1/chat/completions", "127.0.0.1:8080", "203.0.113.7:5000", map[string]string{"Authorization": "Bearer api-token-1"}, 401, RefusedUntrusted},
		{"beyond loopback pass-through", "GET", "/v1/models", "127.0.0.1:8080", "203.0.113.7:5000", nil, 401, RefusedUntrusted},
		{"forwarding header does not make a caller local", "POST", "/v1/chat/completions", "127.0.0.1:8080", "203.0.113.7:5000", map[string]string{"X-Forwarded-For": "127.0.0.1"}, 401, RefusedUntrusted},
		{"encoded slash", "POST", "/v1/chat%2Fcompletions", "127.0.0.1:8080", loop, nil, 400, RefusedBadPath},

		{"sdk on loopback", "POST", "/v1/chat/completions", "127.0.0.1:8080", loop, map[string]string{"Content-Type": "application/json", "Authorization": "Bearer sk-client"}, 200, ""},
		{"same-origin page", "POST", "/v1/chat/completions", "127.0.0.1:8080", loop, map[string]string{"Origin": "http://127.0.0.1:8080", "Sec-Fetch-Site": "same-origin"}, 200, ""},
		{"allowed name and origin", "POST", "/v1/responses", "shadow.corp.example", loop, map[string]string{"Origin": "https://shadow.corp.example"}, 200, ""},
		{"beyond loopback with the token", "POST", "/v1/chat/completions", "127.0.0.1:8080", "203.0.113.7:5000", map[string]string{guard.DefaultTokenHeader: "api-token-1", "Authorization": "Bearer sk-client"}, 200, ""},
		{"beyond loopback from a trusted network", "POST", "/v1/chat/completions", "shadow.corp.example", "10.9.8.7:5000", nil, 200, ""},
		{"pass-through with the token", "GET", "/v1/models", "127.0.0.1:8080", "203.0.113.7:5000", map[string]string{guard.DefaultTokenHeader: "api-token-1"}, 200, ""},
	}
	forwarded := 0
	for _, tc := range tests {
		before, offered := len(inc.requests()), len(tap.all())
		refusedBefore := f.stats.Snapshot(0).ProxyRefused[tc.reason]
		body := io.Reader(nil)
		if tc.method == "POST" {
			body = strings.NewReader(chatBody)
		}
		req := httptest.NewRequest(tc.method, tc.path, body)
		req.Host, req.RemoteAddr = tc.host, tc.remote
		for k, v := range tc.header {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		front.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("%s: %s %s answered %d %s; want %d", tc.name, tc.method, tc.path, rec.Code, rec.Body, tc.want)
			continue
		}
		if tc.reason == "" {
			forwarded++
			if got := len(inc.requests()); got != before+1 {
				t.Errorf("%s: the incumbent got %d requests; want it forwarded once", tc.name, got-before)
			}
			continue
		}
		if got := len(inc.requests()); got != before {
			t.Errorf("%s: refused, but the incumbent got %d requests", tc.name, got-before)
		}
		if !strings.Contains(rec.Body.String(), `"code":"`+tc.reason+`"`) {
			t.Errorf("%s: refusal body %s does not name %s", tc.name, rec.Body, tc.reason)
		}
		if got := f.stats.Snapshot(0).ProxyRefused[tc.reason]; got != refusedBefore+1 {
			t.Errorf("%s: ProxyRefused[%s] went %d → %d; want one more", tc.name, tc.reason, refusedBefore, got)
		}
		time.Sleep(5 * time.Millisecond)
		if got := len(tap.all()); got != offered {
			t.Errorf("%s: refused, but %d copies reached the tap", tc.name, got-offered)
		}
	}
	// What was forwarded kept the client's own key and never the server's token.
	for _, r := range inc.requests() {
		if r.Header.Get(guard.DefaultTokenHeader) != "" {
			t.Errorf("the server's token reached the incumbent on %s %s", r.Method, r.RequestURI)
		}
	}
	if got := inc.requests(); len(got) != forwarded {
		t.Fatalf("the incumbent got %d requests; want the %d allowed ones", len(got), forwarded)
	}
	if got := inc.requests()[0].Header.Get("Authorization"); got != "Bearer sk-client" {
		t.Errorf("the client's incumbent key arrived as %q", got)
	}
}

// Only a trusted caller (a trusted network, or the token) chooses the stored
// request id and app; for any other the id is the answer's and the app the
// configured one, with what it sent kept in the metadata.
func TestProxyTakesIDsFromTrustedCallersOnly(t *testing.T) {
	tap := &recordingTap{}
	f := newProxyFixture(t, &incumbenttest.Handler{}, tap, func(c *ProxyConfig) { c.TrustedNetworks = []string{"10.0.0.0/8"}; c.App = "prod" })
	f.proxy.UseGuard(guard.NewHosts("127.0.0.1:8080", nil), "api-token-1")
	long := strings.Repeat("x", 1000) + "\tend"
	for _, tc := range []struct {
		name, remote, token, id, app string
		trusted                      bool
	}{
		{"loopback alone is not trusted", "127.0.0.1:4000", "", "chosen-1", "tutor", false},
		{"a long id with a tab", "127.0.0.1:4000", "", long, "tutor", false},
		{"trusted network", "10.1.1.1:4000", "", "chosen-2", "tutor", true},
		{"the token", "203.0.113.9:4000", "api-token-1", "chosen-3", "tutor", true},
	} {
		before := len(tap.all())
		req := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(chatBody))
		req.Host, req.RemoteAddr = "127.0.0.1:8080", tc.remote
		req.Header.Set("X-Request-Id", tc.id)
		req.Header.Set("X-Conductor-App", tc.app)
		if tc.token != "" {
			req.Header.Set(guard.DefaultTokenHeader, tc.token)
		}
		rec := httptest.NewRecorder()
		f.proxy.ServeHTTP(rec, req)
		if rec.Code != 200 {
			t.Fatalf("%s: answered %d %s", tc.name, rec.Code, rec.Body)
		}
		waitFor(t, tc.name+": the copy", func() bool { return len(tap.all()) == before+1 })
		ex := tap.all()[before]
		switch {
		case tc.trusted && (ex.RequestID != tc.id || ex.App != tc.app || ex.Metadata[MetaCallerRequestID] != ""):
			t.Errorf("%s: stored id %q app %q metadata %v; want the caller's", tc.name, ex.RequestID, ex.App, ex.Metadata)
		case !tc.trusted && (ex.RequestID == tc.id || !strings.HasPrefix(ex.RequestID, "proxy-") || ex.App != "prod"):
			t.Errorf("%s: stored id %q app %q; want a copy id of the proxy's and the configured app", tc.name, ex.RequestID, ex.App)
		case ex.Response == nil || !strings.HasPrefix(ex.Response.ID, "chatcmpl-"):
			t.Errorf("%s: the answer's id is not kept: %+v", tc.name, ex.Response)
		case !tc.trusted && (ex.Metadata[MetaCallerApp] != tc.app || ex.Metadata[MetaCallerRequestID] != callerValue(tc.id)):
			t.Errorf("%s: metadata %v; want the caller's values beside", tc.name, ex.Metadata)
		}
		if v := ex.Metadata[MetaCallerRequestID]; len(v) > maxCallerValue || strings.ContainsRune(v, '\t') {
			t.Errorf("%s: kept caller id %q is not bounded and clean", tc.name, v)
		}
		if err := ex.Validate(256, true); err != nil {
			t.Errorf("%s: the copy does not validate: %v", tc.name, err)
		}
	}
}

// rawRequest sends one request line as written (no client normalises it) and
// returns the answer's status.
func rawRequest(t *testing.T, addr, method, uri, body string) int {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", method, uri, addr, len(body), body)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%s %s: %v", method, uri, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// Paths are normalised before forwarding and never leave the incumbent URL's
// prefix; what cannot be normalised safely is refused. The normalised path is
// also what decides whether the exchange is mirrored.
func TestProxyNormalisesPaths(t *testing.T) {
	inc := &seenIncumbent{}
	tap := &recordingTap{}
	f := newProxyFixture(t, inc, tap)
	// The incumbent lives under a prefix.
	p, err := NewProxy(func() ProxyConfig {
		c := NewDefaultProxyConfig()
		c.IncumbentURL = f.incumbent.URL + "/openai"
		return c
	}(), tap, f.stats, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(p.Front(p))
	t.Cleanup(func() { front.Close(); _ = p.Shutdown(t.Context()) })
	addr := strings.TrimPrefix(front.URL, "http://")
	for _, tc := range []struct {
		uri, want string // want: the URI the incumbent got; "" when refused (400)
		mirrored  bool
	}{
		{"/v1/chat/completions", "/openai/v1/chat/completions", true},
		{"/v1//chat/completions", "/openai/v1/chat/completions", true},
		{"/v1/./chat/completions", "/openai/v1/chat/completions", true},
		{"/v1/models/../chat/completions", "/openai/v1/chat/completions", true},
		{"/v1/%2e%2e/v1/responses", "/openai/v1/responses", true},
		{"/v1/chat/completions/..%2f..%2fadmin", "", false},
		{"/v1/%2e%2e/admin", "/openai/admin", false},
		{"/v1/%2e%2e/%2e%2e/admin", "", false},
		{"/../../etc/passwd", "", false},
		{"/v1/%2E%2E/%2E%2E/%2E%2E/x", "", false},
		{"/v1/models%2F..%2F..%2Fadmin", "", false},
		{"/v1/%5c..%5cadmin", "", false},
		{"/v1/..\\admin", "", false},
		{"/v1/%252e%252e/admin", "", false},
		{"/v1/%00/models", "", false},
		{"/v1/models/", "/openai/v1/models/", false},
		{"/v1/files/a%20b?x=%2e%2e", "/openai/v1/files/a%20b?x=%2e%2e", false},
	} {
		before, offered := len(inc.requests()), len(tap.all())
		body := chatBody
		if strings.HasSuffix(tc.want, "/responses") {
			body = `{"model":"gpt-4o","input":"inject this"}`
		}
		status := rawRequest(t, addr, "POST", tc.uri, body)
		got := inc.requests()[before:]
		if tc.want == "" {
			if status != http.StatusBadRequest || len(got) != 0 {
				t.Errorf("%s: answered %d and forwarded %d; want 400 and nothing forwarded", tc.uri, status, len(got))
			}
			continue
		}
		if len(got) != 1 || got[0].RequestURI != tc.want {
			var uris []string
			for _, r := range got {
				uris = append(uris, r.RequestURI)
			}
			t.Errorf("%s: the incumbent got %v (answer %d); want %s", tc.uri, uris, status, tc.want)
			continue
		}
		if tc.mirrored {
			waitFor(t, tc.uri+" mirrored", func() bool { return len(tap.all()) == offered+1 })
		} else {
			time.Sleep(10 * time.Millisecond)
			if len(tap.all()) != offered {
				t.Errorf("%s: a pass-through path was mirrored", tc.uri)
			}
		}
	}
	if n := f.stats.Snapshot(0).ProxyRefused[RefusedBadPath]; n != 9 {
		t.Errorf("ProxyRefused[bad_path] = %d; want the 9 refused paths", n)
	}
}

// HTML the incumbent answers (an error page, a login page) is passed through
// with a sandboxing CSP and nosniff, so it cannot run under the server's
// origin; so is the proxy's own 502.
func TestProxyAnswerIsSandboxed(t *testing.T) {
	html := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<html><script>fetch("/api/query",{method:"POST"})</script></html>`)
	})
	f := newProxyFixture(t, html, &recordingTap{})
	for _, path := range []string{"/login", "/v1/chat/completions"} {
		a := f.do(t, f.front.URL, "GET", path, "", nil)
		if a.header.Get("Content-Security-Policy") != "sandbox" || a.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: headers %v; want CSP sandbox and nosniff", path, a.header)
		}
	}
	f.incumbent.Close() // unreachable: the proxy answers 502 itself
	a := f.do(t, f.front.URL, "GET", "/login", "", nil)
	if a.status != http.StatusBadGateway || a.header.Get("Content-Security-Policy") != "sandbox" || a.header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("502: %d %v; want the guards too", a.status, a.header)
	}
}
