package guard

import (
	"net/http/httptest"
	"testing"
)

func TestHostsAllows(t *testing.T) {
	h := NewHosts("shadow-1.internal:8080", []string{"shadow.corp.example", ".svc.example"})
	for _, tc := range []struct {
		host string
		want bool
	}{
		{"127.0.0.1:8080", true},
		{"[::1]:8080", true},
		{"10.1.2.3", true},
		{"localhost:8080", true},
		{"LOCALHOST.", true},
		{"shadow-1.internal:8080", true},
		{"shadow.corp.example", true},
		{"tap.svc.example:443", true},
		{"svc.example", false}, // the domain entry covers names under it only
		{"evilsvc.example", false},
		{"attacker.example", false},
		{"localhost.attacker.example", false},
		{"", false},
	} {
		if got := h.Allows(tc.host); got != tc.want {
			t.Errorf("Allows(%q) = %v; want %v", tc.host, got, tc.want)
		}
	}
}

func TestHostsSameSite(t *testing.T) {
	h := NewHosts("127.0.0.1:8080", []string{"shadow.corp.example"})
	for _, tc := range []struct {
		name, host, origin, fetchSite string
		want                          bool
	}{
		{"server-side client", "127.0.0.1:8080", "", "", true},
		{"same origin", "127.0.0.1:8080", "http://127.0.0.1:8080", "same-origin", true},
		{"typed by the user", "127.0.0.1:8080", "", "none", true},
		{"allowed origin", "127.0.0.1:8080", "https://shadow.corp.example", "", true},
		{"cross-site origin", "127.0.0.1:8080", "http://evil.example", "", false},
		{"cross-site fetch metadata", "127.0.0.1:8080", "", "cross-site", false},
		{"sibling site", "127.0.0.1:8080", "", "same-site", false},
		{"other local port", "127.0.0.1:8080", "http://127.0.0.1:3000", "", false},
		{"null origin", "127.0.0.1:8080", "null", "", false},
	} {
		r := httptest.NewRequest("POST", "/v1/chat/completions", nil)
		r.Host = tc.host
		if tc.origin != "" {
			r.Header.Set("Origin", tc.origin)
		}
		if tc.fetchSite != "" {
			r.Header.Set("Sec-Fetch-Site", tc.fetchSite)
		}
		if got := h.SameSite(r); got != tc.want {
			t.Errorf("%s: SameSite = %v; want %v", tc.name, got, tc.want)
		}
	}
}

func TestValidateAllowedHosts(t *testing.T) {
	for _, tc := range []struct {
		hosts []string
		ok    bool
	}{
		{[]string{"shadow.example.com", ".example.com", "localhost"}, true},
		{[]string{"http://shadow.example.com"}, false},
		{[]string{"shadow.example.com:8080"}, false},
		{[]string{""}, false},
		{[]string{"."}, false},
		{[]string{"*.example.com"}, false},
	} {
		if err := ValidateAllowedHosts(tc.hosts); (err == nil) != tc.ok {
			t.Errorf("ValidateAllowedHosts(%q) = %v; want ok=%v", tc.hosts, err, tc.ok)
		}
	}
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:1234": true, "127.9.9.9:1": true, "[::1]:80": true, "localhost": true, "[::ffff:127.0.0.1]:5": true,
		"10.0.0.1:80": false, "0.0.0.0:8080": false, "[::]:8080": false, "example.com:80": false, "": false,
	} {
		if got := IsLoopback(addr); got != want {
			t.Errorf("IsLoopback(%q) = %v; want %v", addr, got, want)
		}
	}
}

func TestCallersTrusted(t *testing.T) {
	nets, err := ParseNetworks("ingest.proxy.trusted_networks", []string{"10.0.0.0/8", "192.168.1.7", "fd00::/8"})
	if err != nil {
		t.Fatal(err)
	}
	c := NewCallers(nets, DefaultTokenHeader, "s3cret-token")
	for _, tc := range []struct {
		name, remote, token string
		want                bool
	}{
		{"in a network", "10.20.30.40:5555", "", true},
		{"single address", "192.168.1.7:80", "", true},
		{"neighbour of the single address", "192.168.1.8:80", "", false},
		{"ipv6 network", "[fd00::1]:443", "", true},
		{"outside, no token", "203.0.113.9:1", "", false},
		{"outside, right token", "203.0.113.9:1", "s3cret-token", true},
		{"outside, wrong token", "203.0.113.9:1", "s3cret-tokeN", false},
		{"loopback is not a network unless listed", "127.0.0.1:1", "", false},
	} {
		r := httptest.NewRequest("POST", "/", nil)
		r.RemoteAddr = tc.remote
		r.Header.Set("X-Forwarded-For", "10.0.0.1") // never read
		if tc.token != "" {
			r.Header.Set(DefaultTokenHeader, tc.token)
		}
		if got := c.Trusted(r); got != tc.want {
			t.Errorf("%s: Trusted = %v; want %v", tc.name, got, tc.want)
		}
	}
	if (Callers{}).Trusted(httptest.NewRequest("GET", "/", nil)) {
		t.Error("the zero Callers trusts a caller")
	}
	// No token configured: an empty or any header trusts nobody.
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set(DefaultTokenHeader, "")
	if NewCallers(nil, DefaultTokenHeader, "").Trusted(r) {
		t.Error("an empty token header is trusted when no token is configured")
	}
	if _, err := ParseNetworks("f", []string{"10.0.0.0/33", "not-an-ip", "10.0.0.0/8"}); err == nil {
		t.Error("bad networks accepted")
	}
}
