package web

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// testAuthMiddleware (TestFixturePages): the traces list over fixtureTrace
// answers only the configured credentials, and a refusal shows no trace.
func testAuthMiddleware(t *testing.T, st store.Store) {
	gin.SetMode(gin.TestMode)
	hidden := fixtureTrace().Request.RequestID
	newServer := func(a Auth) *gin.Engine {
		r := gin.New()
		if err := Register(r.Group("/", a.Middleware()), ReadersOf(store.NewRoles(st)), NewDefaultConfig()); err != nil {
			t.Fatal(err)
		}
		return r
	}
	call := func(h http.Handler, set func(*http.Request)) int {
		req := httptest.NewRequest(http.MethodGet, "/traces", nil)
		if set != nil {
			set(req)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code == http.StatusUnauthorized && rec.Header().Get("WWW-Authenticate") == "" {
			t.Error("401 without a challenge: browsers would not ask for credentials")
		}
		if shown := strings.Contains(rec.Body.String(), hidden); shown != (rec.Code == http.StatusOK) {
			t.Errorf("status %d, trace %s shown: %v", rec.Code, hidden, shown)
		}
		return rec.Code
	}
	bearer := func(tok string) func(*http.Request) {
		return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
	}
	basic := func(u, p string) func(*http.Request) { return func(r *http.Request) { r.SetBasicAuth(u, p) } }
	tests := []struct {
		name string
		auth Auth
		set  func(*http.Request)
		want int
	}{
		{"no auth configured lets everything through", Auth{}, nil, http.StatusOK},
		{"token: missing", Auth{Token: "s3cret"}, nil, http.StatusUnauthorized},
		{"token: bearer", Auth{Token: "s3cret"}, bearer("s3cret"), http.StatusOK},
		{"token: wrong bearer", Auth{Token: "s3cret"}, bearer("s3cre"), http.StatusUnauthorized},
		{"token: as a browser's basic-auth password", Auth{Token: "s3cret"}, basic("anyone", "s3cret"), http.StatusOK},
		{"basic: right", Auth{User: "ops", Password: "pw"}, basic("ops", "pw"), http.StatusOK},
		{"basic: wrong user", Auth{User: "ops", Password: "pw"}, basic("dev", "pw"), http.StatusUnauthorized},
		{"basic: empty password never matches", Auth{User: "ops", Password: "pw"}, basic("ops", ""), http.StatusUnauthorized},
		{"basic configured: a bearer is no password", Auth{User: "ops", Password: "pw"}, bearer("pw"), http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := call(newServer(tt.auth), tt.set); got != tt.want {
				t.Errorf("status = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestResolveAuthAndExposure(t *testing.T) {
	env := map[string]string{"TOK": "t", "PW": "p"}
	cfg := NewDefaultConfig()
	cfg.AuthTokenEnv, cfg.BasicAuthUser, cfg.BasicAuthPasswordEnv = "TOK", "ops", "PW"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if a := cfg.ResolveAuth(func(k string) string { return env[k] }); a != (Auth{Token: "t", User: "ops", Password: "p"}) {
		t.Errorf("resolved %+v", a)
	}
	bad := NewDefaultConfig()
	bad.BasicAuthUser = "ops"
	if bad.Validate() == nil {
		t.Error("a basic-auth user without a password variable must not validate")
	}
	for _, tt := range []struct {
		addr string
		auth Auth
		ok   bool
	}{
		{"127.0.0.1:8080", Auth{}, true}, {"[::1]:8080", Auth{}, true}, {"localhost:8080", Auth{}, true},
		{":8080", Auth{}, false}, {"0.0.0.0:8080", Auth{}, false}, {"10.1.2.3:80", Auth{}, false},
		{":8080", Auth{Token: "t"}, true}, {"0.0.0.0:8080", Auth{User: "u", Password: "p"}, true},
		{"0.0.0.0:8080", Auth{User: "u"}, false},
	} {
		err := CheckExposure(tt.addr, tt.auth)
		if (err == nil) != tt.ok || err != nil && !errors.Is(err, ErrExposedWithoutAuth) {
			t.Errorf("CheckExposure(%q, %+v) = %v", tt.addr, tt.auth, err)
		}
	}
}
