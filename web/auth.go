package web

import (
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/conductor-shadow/conductor-shadow/ingest/guard"
)

// Auth is the UI's credentials, resolved from the environment by
// Config.ResolveAuth. The zero Auth lets every request through.
type Auth struct {
	// Token is accepted as "Authorization: Bearer <token>" and, so that a browser
	// can log in, as the password of HTTP basic auth with any user name.
	Token string
	// User and Password are HTTP basic auth credentials; both must match.
	User, Password string
}

// Enabled reports whether the middleware checks anything.
func (a Auth) Enabled() bool { return a.Token != "" || a.User != "" && a.Password != "" }

// ResolveAuth reads the credentials named by the config from getenv (os.Getenv in
// production): the token from $AuthTokenEnv, the basic-auth password from
// $BasicAuthPasswordEnv (used only with a BasicAuthUser).
func (c Config) ResolveAuth(getenv func(string) string) Auth {
	a := Auth{User: c.BasicAuthUser}
	if c.AuthTokenEnv != "" {
		a.Token = getenv(c.AuthTokenEnv)
	}
	if c.BasicAuthUser != "" && c.BasicAuthPasswordEnv != "" {
		a.Password = getenv(c.BasicAuthPasswordEnv)
	}
	return a
}

// ErrExposedWithoutAuth: the UI would listen beyond loopback with no credentials.
var ErrExposedWithoutAuth = errors.New("web: listening beyond loopback needs a UI token or basic auth credentials")

// CheckExposure returns ErrExposedWithoutAuth when addr (host:port) is not a
// loopback address (127.0.0.0/8, ::1, localhost) and a checks nothing.
func CheckExposure(addr string, a Auth) error {
	if a.Enabled() || IsLoopback(addr) {
		return nil
	}
	return ErrExposedWithoutAuth
}

// IsLoopback reports whether addr — a listen address or a request's RemoteAddr,
// "host:port" or a bare host — is on a loopback interface ("localhost" counts;
// guard.IsLoopback).
func IsLoopback(addr string) bool { return guard.IsLoopback(addr) }

// Middleware requires a's credentials on every request it guards: a bearer
// token, or basic auth (user and password, or any user with the token as
// password). Failures get 401 with a Basic challenge so browsers ask. Secrets are
// compared in constant time. With a zero Auth it lets everything through.
func (a Auth) Middleware() gin.HandlerFunc {
	return func(c *gin.Context) {
		if !a.Enabled() || a.allows(c.Request) {
			c.Next()
			return
		}
		c.Header("WWW-Authenticate", `Basic realm="conductor-shadow", charset="UTF-8"`)
		c.Header("Cache-Control", "no-store")
		c.AbortWithStatusJSON(http.StatusUnauthorized, gin.H{"error": "authentication required"})
	}
}

func (a Auth) allows(r *http.Request) bool {
	eq := func(got, want string) bool {
		return want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
	}
	if h := r.Header.Get("Authorization"); strings.HasPrefix(h, "Bearer ") {
		return eq(strings.TrimPrefix(h, "Bearer "), a.Token)
	}
	user, pass, ok := r.BasicAuth()
	if !ok {
		return false
	}
	if eq(pass, a.Token) {
		return true
	}
	return a.User != "" && eq(user, a.User) && eq(pass, a.Password)
}
