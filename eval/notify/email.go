package notify

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v5"
	gomail "github.com/wneessen/go-mail"
)

// email sends a notice as one plain-text message over SMTP (go-mail).
type email struct {
	cfg    EmailConfig
	client *gomail.Client
}

// newEmail builds the SMTP client of cfg with the resolved password.
func newEmail(cfg EmailConfig, password string, timeout time.Duration) (*email, error) {
	opts := []gomail.Option{gomail.WithPort(cfg.SMTPPort), gomail.WithTimeout(timeout)}
	tlsCfg := &tls.Config{ServerName: cfg.SMTPHost, MinVersion: tls.VersionTLS12}
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("email.ca_file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("email.ca_file %s: no PEM certificate in it", cfg.CAFile)
		}
		tlsCfg.RootCAs = pool
	}
	opts = append(opts, gomail.WithTLSConfig(tlsCfg))
	switch cfg.TLS {
	case TLSImplicit:
		opts = append(opts, gomail.WithSSL())
	case TLSNone:
		opts = append(opts, gomail.WithTLSPolicy(gomail.NoTLS))
	default:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSMandatory))
	}
	if cfg.Username != "" {
		mech, err := authType(cfg.Auth)
		if err != nil {
			return nil, fmt.Errorf("email.auth: %w", err)
		}
		opts = append(opts, gomail.WithSMTPAuth(mech), gomail.WithUsername(cfg.Username), gomail.WithPassword(password))
	}
	c, err := gomail.NewClient(cfg.SMTPHost, opts...)
	if err != nil {
		return nil, fmt.Errorf("email: %w", err)
	}
	return &email{cfg: cfg, client: c}, nil
}

func (e *email) name() string { return SinkEmail }

func (e *email) host() string { return net.JoinHostPort(e.cfg.SMTPHost, strconv.Itoa(e.cfg.SMTPPort)) }

// message renders n: Subject is SubjectPrefix + Notice.Subject; the body
// says what changed, the headline, the gates that did not pass with their
// reasons and the link. Auto-Submitted: auto-generated (RFC 3834) keeps
// vacation responders from answering.
func (e *email) message(n Notice) (*gomail.Msg, error) {
	m := gomail.NewMsg()
	if err := m.From(e.cfg.From); err != nil {
		return nil, fmt.Errorf("email: from: %w", err)
	}
	if err := m.To(e.cfg.To...); err != nil {
		return nil, fmt.Errorf("email: to: %w", err)
	}
	subject := oneLine(n.Subject())
	if e.cfg.SubjectPrefix != "" {
		subject = e.cfg.SubjectPrefix + " " + subject
	}
	m.Subject(subject)
	m.SetDate()
	m.SetMessageID()
	m.SetGenHeader(gomail.Header("Auto-Submitted"), "auto-generated")
	m.SetUserAgent("conductor-shadow")
	m.SetBodyString(gomail.TypeTextPlain, EmailBody(n))
	return m, nil
}

// EmailBody is the plain-text body of n's e-mail.
func EmailBody(n Notice) string {
	var b strings.Builder
	b.WriteString(n.change() + "\n\n" + oneLine(n.Headline) + "\n")
	if lines := gateLines(n, func(g Gate) string {
		return fmt.Sprintf("- %s %s: %s", oneLine(g.Name), g.Status, oneLine(g.Reason))
	}); len(lines) > 0 {
		b.WriteString("\n" + n.gateHeading() + ":\n" + strings.Join(lines, "\n") + "\n")
	}
	fmt.Fprintf(&b, "\nEvidence: %s\n\nVerdict reached %s. conductor-shadow sends this when a verdict changes.\n",
		n.Link, n.At.UTC().Format(time.RFC3339))
	return b.String()
}

// send delivers n in one SMTP session. A permanent refusal (a 5xx reply:
// recipient, sender or message rejected) is not retried; a temporary one
// (4xx), a connection, TLS or timeout failure is.
// The message's bytes (as go-mail writes it) count as sent once the server
// took it.
func (e *email) send(ctx context.Context, n Notice) (int64, error) {
	m, err := e.message(n)
	if err != nil {
		return 0, backoff.Permanent(err)
	}
	if err := e.client.DialAndSendWithContext(ctx, m); err != nil {
		var se *gomail.SendError
		if errors.As(err, &se) && se.ErrorCode() >= 500 {
			return 0, backoff.Permanent(fmt.Errorf("email: %w", err))
		}
		return 0, fmt.Errorf("email: %w", err)
	}
	size, _ := m.WriteTo(io.Discard)
	return size, nil
}

func (e *email) close() { _ = e.client.Close() }
