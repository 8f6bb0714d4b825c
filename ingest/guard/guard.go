// Package guard decides which HTTP callers the server answers, on every route
// of its listener (the API, the pages, the tap and the mirroring proxy alike):
//
//   - Hosts: the names the server answers under (the Host header), so a page
//     that rebinds its own name to the server's address (DNS rebinding)
//     reaches nothing, and the origins whose browser requests count as ours
//     (Origin, Sec-Fetch-Site);
//   - Callers: who is trusted beyond loopback: a caller whose address is in
//     a configured network, or that presents the server's token in a header of
//     its own (the mirroring proxy's clients keep their incumbent API key in
//     Authorization).
package guard

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// Hosts decides which Host and Origin names reach the server. IP literals are
// always ours as a Host: a browser only sends one when it connected to that
// address itself.
type Hosts struct {
	hosts   nameSet // Host: localhost, the listen address's name, the allowed names
	origins nameSet // Origin beyond the request's own: the allowed names only
}

// nameSet matches host names exactly or, for entries starting with ".", every
// name under that domain.
type nameSet struct {
	names    map[string]bool
	suffixes []string
}

func (n *nameSet) add(name string) {
	name = strings.ToLower(strings.TrimSpace(name))
	switch {
	case strings.HasPrefix(name, "."):
		n.suffixes = append(n.suffixes, name)
	case name != "":
		if n.names == nil {
			n.names = map[string]bool{}
		}
		n.names[name] = true
	}
}

func (n nameSet) has(host string) bool {
	if n.names[host] {
		return true
	}
	for _, s := range n.suffixes {
		if strings.HasSuffix(host, s) {
			return true
		}
	}
	return false
}

// NewHosts allows as Host "localhost", the host of addr (server.addr,
// host:port) when it is a name, any IP literal, and every entry of allowed
// (server.allowed_hosts: names, or ".example.com" for every name under
// example.com); as Origin the request's own Host and the entries of allowed.
func NewHosts(addr string, allowed []string) Hosts {
	var h Hosts
	h.hosts.add("localhost")
	if host, _, err := net.SplitHostPort(addr); err == nil && net.ParseIP(host) == nil {
		h.hosts.add(host)
	}
	for _, a := range allowed {
		h.hosts.add(a)
		h.origins.add(a)
	}
	return h
}

// hostName returns the lower-case host of a Host header or an Origin's host,
// without port, brackets or a trailing dot.
func hostName(hostport string) string {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	return strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
}

// ValidateAllowedHosts checks server.allowed_hosts: bare host names (no
// scheme, port or path), optionally starting with "." for a whole domain.
func ValidateAllowedHosts(hosts []string) error {
	var errs []error
	for i, h := range hosts {
		name := strings.TrimPrefix(h, ".")
		if name == "" || strings.ContainsAny(name, "/:@ *") || strings.HasPrefix(name, ".") {
			errs = append(errs, fmt.Errorf("config: server.allowed_hosts[%d] %q: want a host name such as shadow.example.com, or .example.com for every name under it", i, h))
		}
	}
	return errors.Join(errs...)
}

// Allows reports whether a Host header (host or host:port) names this server.
func (h Hosts) Allows(hostport string) bool {
	host := hostName(hostport)
	return host != "" && (net.ParseIP(host) != nil || h.hosts.has(host))
}

// SameSite reports whether a browser says req comes from a page of this
// server: Sec-Fetch-Site same-origin or none, and an Origin equal to the
// request's scheme-less Host or named in server.allowed_hosts. Requests with
// neither header (curl, the CLI, server-side clients such as the official
// OpenAI SDKs) are not from a browser page and pass.
func (h Hosts) SameSite(req *http.Request) bool {
	switch req.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none": // none: typed by the user, a bookmark
	default: // cross-site, same-site (a sibling name)
		return false
	}
	origin := req.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" { // includes "null" (sandboxed frames, file://)
		return false
	}
	return strings.EqualFold(u.Host, req.Host) || h.origins.has(hostName(u.Host))
}

// IsLoopback reports whether addr (host:port, or a bare host) is a loopback
// address or "localhost".
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(strings.Trim(host, "[]"))
	return err == nil && ip.Unmap().IsLoopback()
}

// DefaultTokenHeader is the request header a caller of the mirroring proxy
// presents the server's token in (Authorization carries its incumbent API key).
const DefaultTokenHeader = "X-Conductor-Shadow-Token"

// Callers says which callers are trusted: those whose address is in one of
// the networks, or that send the token in the header. The zero Callers
// trusts nobody.
type Callers struct {
	networks []netip.Prefix
	header   string
	token    string
}

// ParseNetworks reads CIDR prefixes ("10.0.0.0/8", "fd00::/8") or single
// addresses ("10.1.2.3", taken as /32 or /128); field names the config key in
// errors.
func ParseNetworks(field string, cidrs []string) ([]netip.Prefix, error) {
	var (
		out  []netip.Prefix
		errs []error
	)
	for i, c := range cidrs {
		c = strings.TrimSpace(c)
		if p, err := netip.ParsePrefix(c); err == nil {
			out = append(out, p.Masked())
			continue
		}
		if a, err := netip.ParseAddr(c); err == nil {
			out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			continue
		}
		errs = append(errs, fmt.Errorf("%s[%d] %q: want a network such as 10.0.0.0/8 or an address such as 10.1.2.3", field, i, c))
	}
	return out, errors.Join(errs...)
}

// NewCallers trusts the callers in networks and those sending token in
// header (an empty token or header: no token is accepted).
func NewCallers(networks []netip.Prefix, header, token string) Callers {
	return Callers{networks: networks, header: header, token: token}
}

// Trusted reports whether r's caller is trusted: its token header matches the
// token (constant-time), or its address (r.RemoteAddr, the TCP peer: never a
// forwarding header, which any caller can write) is in one of the networks.
func (c Callers) Trusted(r *http.Request) bool {
	if c.token != "" && c.header != "" {
		if got := r.Header.Get(c.header); got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(c.token)) == 1 {
			return true
		}
	}
	if len(c.networks) == 0 {
		return false
	}
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	a := ap.Addr().Unmap()
	for _, n := range c.networks {
		if n.Contains(a) {
			return true
		}
	}
	return false
}
