package ingest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"unicode"

	"github.com/conductor-shadow/conductor-shadow/ingest/guard"
)

// Reasons the mirroring proxy refuses a request before reading or forwarding
// it, counted in StatsSnapshot.ProxyRefused.
const (
	RefusedForeignHost = "foreign_host" // 421: the Host is no name of the server (DNS rebinding)
	RefusedCrossSite   = "cross_site"   // 403: a browser marks it cross-site (Origin, Sec-Fetch-Site)
	RefusedUntrusted   = "untrusted"    // 401: beyond loopback, neither in proxy.trusted_networks nor carrying the token header
	RefusedBadPath     = "bad_path"     // 400: the path cannot be normalised safely
)

// Metadata keys keeping what an untrusted caller asked for (see Proxy.UseGuard).
const (
	MetaCallerRequestID = "caller_request_id" // its X-Request-Id: the stored id was generated
	MetaCallerApp       = "caller_app"        // its app header: the stored app is proxy.app
)

// maxCallerValue caps a caller's value kept in metadata, bytes.
const maxCallerValue = 256

// UseGuard sets who may use the proxy: hosts are the names it answers under
// and the origins whose browser requests count as its own
// (server.allowed_hosts), token is the server's API token, which a caller
// beyond loopback may present in cfg.TokenHeader. Without it the proxy answers
// "localhost" and IP addresses only and accepts no token. Call before serving.
//
// Every request the proxy serves, on every route (mirrored or passed
// through), is checked first, before its body is read or anything forwarded:
//
//   - a Host that is not one of hosts: 421;
//   - a browser request marked cross-site (Sec-Fetch-Site cross-site or
//     same-site, or an Origin other than the request's own host or an
//     allowed name), whatever its method: 403;
//   - a caller beyond loopback whose address is not in cfg.TrustedNetworks
//     and that does not send the token in cfg.TokenHeader: 401;
//   - a path that cannot be normalised safely (cleanProxyPath): 400.
//
// Each refusal is counted by reason (StatsSnapshot.ProxyRefused) and logged at
// most every 5 s per reason. The token header is removed before forwarding.
// Only a trusted caller (in cfg.TrustedNetworks, or with the token; loopback
// alone is not enough) chooses the stored request id (X-Request-Id) and app
// (cfg.AppHeader); for any other the id is the answer's id or generated, the
// app is cfg.App, and what it sent is kept in the metadata
// (MetaCallerRequestID, MetaCallerApp).
func (p *Proxy) UseGuard(hosts guard.Hosts, token string) {
	p.hosts = hosts
	p.callers = guard.NewCallers(p.networks, p.cfg.TokenHeader, token)
}

// UseBodyBudget makes the proxy hold the bodies it copies within b, the
// budget it shares with the tap (see BodyBudget). A body that does not fit is
// forwarded without being copied and counted (ReasonBodyBudget): a production
// request is never refused for the shadow side's sake. Call before serving.
func (p *Proxy) UseBodyBudget(b *BodyBudget) {
	if b != nil {
		p.budget = b
	}
}

// admit applies the guard (UseGuard) to r. It writes the refusal and returns
// ok false, or reports whether the caller is trusted.
func (p *Proxy) admit(w http.ResponseWriter, r *http.Request) (trusted, ok bool) {
	switch {
	case !p.hosts.Allows(r.Host):
		p.refuse(w, r, http.StatusMisdirectedRequest, RefusedForeignHost,
			fmt.Sprintf("host %q is not a name of this server; add it to server.allowed_hosts", r.Host))
		return false, false
	case !p.hosts.SameSite(r):
		p.refuse(w, r, http.StatusForbidden, RefusedCrossSite, "cross-site requests are refused")
		return false, false
	}
	trusted = p.callers.Trusted(r)
	if !trusted && !guard.IsLoopback(r.RemoteAddr) {
		p.refuse(w, r, http.StatusUnauthorized, RefusedUntrusted,
			"callers beyond loopback send the server's token in "+p.cfg.TokenHeader+" (Authorization keeps the incumbent's key) or call from ingest.proxy.trusted_networks")
		return false, false
	}
	return trusted, true
}

// refuse answers an OpenAI-style error (SDKs show its message), counts it and
// logs it, rate-limited by reason.
func (p *Proxy) refuse(w http.ResponseWriter, r *http.Request, status int, reason, msg string) {
	p.stats.proxyRefuse(reason)
	p.loss.log("proxy: request refused", reason, fmt.Errorf("%s %s from %s (host %q, origin %q): %s",
		r.Method, r.URL.Path, r.RemoteAddr, r.Host, r.Header.Get("Origin"), msg), 1)
	setAnswerGuards(w.Header())
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"message": msg, "type": "conductor_shadow_refused", "code": reason}})
}

// setAnswerGuards adds to an answer passed through the proxy what keeps the
// incumbent's content inert under the server's origin: a sandboxing CSP (a
// page, e.g. an HTML error page, runs in a unique origin with no scripts)
// and nosniff (the browser keeps the declared type). API clients ignore both.
func setAnswerGuards(h http.Header) {
	h.Add("Content-Security-Policy", "sandbox")
	h.Set("X-Content-Type-Options", "nosniff")
}

// errBadPath marks a path the proxy refuses to forward.
var errBadPath = errors.New("ingest: proxy: path cannot be normalised safely")

// cleanProxyPath returns u's path as forwarded: percent-decoded once, with
// empty ("//") and "." segments dropped and ".." resolved, a trailing slash
// kept. The result stays under the root, so joined to proxy.incumbent_url it
// stays under that URL's path prefix. It refuses (errBadPath):
//   - an encoded slash or backslash (%2F, %5C) or a raw backslash: decoding
//     them would move where the segments split;
//   - a decoded path holding "%" (double encoding such as %252e) or a
//     control character (NUL included);
//   - a ".." above the root;
//   - an opaque URL.
func cleanProxyPath(u *url.URL) (string, error) {
	if u.Opaque != "" {
		return "", fmt.Errorf("%w: opaque URL", errBadPath)
	}
	raw := strings.ToLower(u.EscapedPath())
	if strings.Contains(raw, "%2f") || strings.Contains(raw, "%5c") || strings.ContainsRune(u.Path, '\\') {
		return "", fmt.Errorf("%w: encoded slash or backslash", errBadPath)
	}
	if strings.ContainsRune(u.Path, '%') || strings.IndexFunc(u.Path, unicode.IsControl) >= 0 {
		return "", fmt.Errorf("%w: %% or a control character after decoding", errBadPath)
	}
	var segs []string
	for _, s := range strings.Split(u.Path, "/") {
		switch s {
		case "", ".":
		case "..":
			if len(segs) == 0 {
				return "", fmt.Errorf("%w: .. above the root", errBadPath)
			}
			segs = segs[:len(segs)-1]
		default:
			segs = append(segs, s)
		}
	}
	out := "/" + strings.Join(segs, "/")
	if len(segs) > 0 && strings.HasSuffix(u.Path, "/") {
		out += "/"
	}
	return out, nil
}

// withCleanPath returns r with its URL path cleaned (cleanProxyPath) and no
// raw path, so the forwarded URL is built from the cleaned one.
func withCleanPath(r *http.Request) (*http.Request, error) {
	clean, err := cleanProxyPath(r.URL)
	if err != nil {
		return r, err
	}
	if clean == r.URL.Path && r.URL.RawPath == "" {
		return r, nil
	}
	r2 := r.Clone(r.Context())
	r2.URL.Path, r2.URL.RawPath = clean, ""
	return r2, nil
}

// callerValue is a header value an untrusted caller sent, as kept in the
// metadata: valid UTF-8 without control characters, at most maxCallerValue bytes.
func callerValue(v string) string {
	v = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, strings.ToValidUTF8(v, "\uFFFD"))
	if len(v) > maxCallerValue {
		v = strings.ToValidUTF8(v[:maxCallerValue], "")
	}
	return v
}
