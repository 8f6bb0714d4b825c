package notify

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/mail"
	"net/url"
	"strings"
	"time"

	gomail "github.com/wneessen/go-mail"
	"gopkg.in/yaml.v3"
)

// Config is the notify section of the service config: where a verdict
// change is sent and how hard delivery tries. Secrets (the webhook URL, the
// SMTP password) are never in the file: it names the environment variables
// that hold them.
type Config struct {
	// BaseURL is the web UI as the receivers reach it: scheme, host and any
	// path prefix, e.g. "https://shadow.example.com/ui". A notice links to
	// BaseURL + "/suite-runs/<id>" (suite verdicts) or BaseURL + "/overview"
	// (live verdicts). Required when a sink is configured.
	BaseURL string `yaml:"base_url"`
	// Webhook posts Slack-compatible JSON ({"text": …, "blocks": […]}).
	Webhook WebhookConfig `yaml:"webhook"`
	// Email sends a plain-text message over SMTP.
	Email EmailConfig `yaml:"email"`
	// LiveInterval is how often serve reads the live verdicts to find their
	// changes; 0 turns live notifications off. Default 5m, at least 1s.
	LiveInterval time.Duration `yaml:"live_interval"`
	// OutboxSize bounds the verdicts waiting for change detection and, per
	// sink, the notices waiting for delivery. A full outbox drops (counted,
	// logged, in /metrics and /readyz), it never makes the caller wait.
	// Default 256.
	OutboxSize int `yaml:"outbox_size"`
	// Timeout bounds one delivery attempt (one HTTP request, one SMTP
	// session). Default 10s.
	Timeout time.Duration `yaml:"timeout"`
	// Retry is the backoff between attempts.
	Retry RetryConfig `yaml:"retry"`
}

// RetryConfig is exponential backoff with jitter (cenkalti/backoff): the
// first wait InitialBackoff, growing ×1.5 to at most MaxBackoff; a
// receiver's Retry-After (429, 503) replaces the next wait. A notice is
// given up (failed) once the next wait would pass MaxElapsed since its
// first attempt.
type RetryConfig struct {
	InitialBackoff time.Duration `yaml:"initial_backoff"` // default 1s
	MaxBackoff     time.Duration `yaml:"max_backoff"`     // default 1m
	MaxElapsed     time.Duration `yaml:"max_elapsed"`     // default 30m
}

// WebhookConfig is the webhook sink.
type WebhookConfig struct {
	// URLEnv names the environment variable holding the webhook URL (http or
	// https). The URL is a secret (a Slack incoming-webhook URL is its own
	// credential), so it is never in the file nor in a log line. "" = no
	// webhook.
	URLEnv string `yaml:"url_env"`
}

// EmailConfig is the e-mail sink (SMTP through wneessen/go-mail).
type EmailConfig struct {
	// SMTPHost is the mail server; "" = no e-mail.
	SMTPHost string `yaml:"smtp_host"`
	// SMTPPort defaults to 587 (submission with STARTTLS); 465 for TLS.
	SMTPPort int `yaml:"smtp_port"`
	// TLS is TLSStartTLS (default: STARTTLS required, the session fails
	// without it), TLSImplicit (TLS from the first byte, port 465) or TLSNone
	// (plain text; refused with a username, as it would send the password in
	// the clear).
	TLS string `yaml:"tls"`
	// CAFile names PEM certificates trusted for the server besides the
	// system's (a relay with a private CA); "" = the system's only.
	CAFile string `yaml:"ca_file"`
	// Username turns SMTP AUTH on; "" = no AUTH.
	Username string `yaml:"username"`
	// PasswordEnv names the environment variable holding the SMTP password;
	// required with Username.
	PasswordEnv string `yaml:"password_env"`
	// Auth is the SASL mechanism: "auto" (default: the strongest the server
	// offers, go-mail's autodiscovery), "plain", "login", "cram-md5",
	// "scram-sha-1", "scram-sha-256", "xoauth2".
	Auth string `yaml:"auth"`
	// From is the sender address, e.g. "conductor-shadow <shadow@example.com>".
	From string `yaml:"from"`
	// To are the recipients; at least one with SMTPHost.
	To []string `yaml:"to"`
	// SubjectPrefix starts every subject. Default "[conductor-shadow]".
	SubjectPrefix string `yaml:"subject_prefix"`
}

// EmailConfig.TLS values.
const (
	TLSStartTLS = "starttls"
	TLSImplicit = "tls"
	TLSNone     = "none"
)

// NewDefaultConfig returns no sinks (nothing is sent), live verdicts read
// every 5m, an outbox of 256, 10s per attempt and retries
// from 1s to 1m for at most 30m; e-mail defaults port 587, STARTTLS
// required, auth "auto", subject prefix "[conductor-shadow]".
func NewDefaultConfig() Config {
	return Config{
		LiveInterval: 5 * time.Minute,
		OutboxSize:   256,
		Timeout:      10 * time.Second,
		Retry:        RetryConfig{InitialBackoff: time.Second, MaxBackoff: time.Minute, MaxElapsed: 30 * time.Minute},
		Email:        EmailConfig{SMTPPort: 587, TLS: TLSStartTLS, Auth: "auto", To: []string{}, SubjectPrefix: "[conductor-shadow]"},
	}
}

// Enabled reports whether any sink is configured.
func (c Config) Enabled() bool { return c.Webhook.URLEnv != "" || c.Email.SMTPHost != "" }

// Parse reads a notify section (YAML) over NewDefaultConfig and validates
// it; unknown keys are errors.
func Parse(b []byte) (Config, error) {
	c := NewDefaultConfig()
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return c, fmt.Errorf("notify: %w", err)
	}
	return c, c.Validate()
}

// Validate reports every bad key, named as in the file ("notify.email.to").
// With no sink configured only the generic keys are checked.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("notify: "+format, a...)) }
	if c.LiveInterval < 0 || (c.LiveInterval > 0 && c.LiveInterval < time.Second) {
		bad("live_interval %v: want 0 (off) or at least 1s", c.LiveInterval)
	}
	if c.OutboxSize < 1 {
		bad("outbox_size must be at least 1, got %d", c.OutboxSize)
	}
	if c.Timeout <= 0 {
		bad("timeout must be > 0, got %v", c.Timeout)
	}
	r := c.Retry
	switch {
	case r.InitialBackoff <= 0:
		bad("retry.initial_backoff must be > 0, got %v", r.InitialBackoff)
	case r.MaxBackoff < r.InitialBackoff:
		bad("retry.max_backoff %v must be at least retry.initial_backoff %v", r.MaxBackoff, r.InitialBackoff)
	}
	if r.MaxElapsed <= 0 {
		bad("retry.max_elapsed must be > 0, got %v", r.MaxElapsed)
	}
	if !c.Enabled() {
		return errors.Join(errs...)
	}
	if err := checkBaseURL(c.BaseURL); err != nil {
		bad("base_url: %v", err)
	}
	if e := c.Email; e.SMTPHost != "" {
		if strings.ContainsAny(e.SMTPHost, "/:@ ") {
			bad("email.smtp_host %q: want a host name or address (the port is email.smtp_port)", e.SMTPHost)
		}
		if e.SMTPPort < 1 || e.SMTPPort > 65535 {
			bad("email.smtp_port %d: want 1–65535", e.SMTPPort)
		}
		switch e.TLS {
		case TLSStartTLS, TLSImplicit:
		case TLSNone:
			if e.Username != "" {
				bad("email.tls %q with email.username would send the password in the clear: use %q or %q", e.TLS, TLSStartTLS, TLSImplicit)
			}
		default:
			bad("email.tls %q: want %q, %q or %q", e.TLS, TLSStartTLS, TLSImplicit, TLSNone)
		}
		if e.Username != "" && e.PasswordEnv == "" {
			bad("email.password_env is required with email.username")
		}
		if _, err := authType(e.Auth); err != nil {
			bad("email.auth: %v", err)
		}
		if _, err := mail.ParseAddress(e.From); err != nil {
			bad("email.from %q: %v", e.From, err)
		}
		if len(e.To) == 0 {
			bad("email.to needs at least one recipient")
		}
		for i, to := range e.To {
			if _, err := mail.ParseAddress(to); err != nil {
				bad("email.to[%d] %q: %v", i, to, err)
			}
		}
		if strings.ContainsAny(e.SubjectPrefix, "\r\n") {
			bad("email.subject_prefix must be one line")
		}
	}
	return errors.Join(errs...)
}

// checkBaseURL accepts an absolute http(s) URL without query, fragment or
// credentials.
func checkBaseURL(s string) error {
	if s == "" {
		return errors.New("required when a sink is configured: the web UI's address as receivers reach it, e.g. https://shadow.example.com")
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return err
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%q: want an http:// or https:// URL", s)
	case u.Host == "":
		return fmt.Errorf("%q: no host", s)
	case u.User != nil:
		return fmt.Errorf("%q: credentials do not belong in a link", s)
	case u.RawQuery != "" || u.Fragment != "":
		return fmt.Errorf("%q: no query or fragment: links append a path", s)
	}
	return nil
}

// authType maps EmailConfig.Auth to go-mail's mechanism ("" = auto).
func authType(s string) (gomail.SMTPAuthType, error) {
	if s == "" {
		s = "auto"
	}
	if strings.EqualFold(s, "custom") || strings.EqualFold(s, "none") || strings.HasSuffix(strings.ToLower(s), "-noenc") {
		return "", fmt.Errorf("%q: want auto, plain, login, cram-md5, scram-sha-1, scram-sha-256 or xoauth2 (leave username empty for no AUTH)", s)
	}
	var t gomail.SMTPAuthType
	if err := t.UnmarshalString(s); err != nil {
		return "", fmt.Errorf("%q: %w", s, err)
	}
	return t, nil
}
