package notify

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/conductor-shadow/conductor-shadow/eval/gate"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// smtpServer is a real SMTP server (emersion/go-smtp) on a loopback port that
// offers STARTTLS with a certificate of its own CA and AUTH PLAIN (only over
// TLS), and records each accepted message with how it arrived.
type smtpServer struct {
	srv    *smtp.Server
	addr   string
	caFile string
	// rcpt, when set, answers each RCPT TO (i counts them from 0).
	rcpt func(i int, to string) error

	mu    sync.Mutex
	mails []receivedMail
	rcpts int
}

type receivedMail struct {
	user, password string
	tls            bool
	from           string
	to             []string
	data           []byte
}

func newSMTPServer(t *testing.T, starttls bool) *smtpServer {
	t.Helper()
	cert, caPEM := selfSignedCert(t)
	s := &smtpServer{caFile: filepath.Join(t.TempDir(), "ca.pem")}
	if err := os.WriteFile(s.caFile, caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	s.srv = smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) { return &smtpSession{s: s, c: c}, nil }))
	s.srv.Domain = "127.0.0.1"
	if starttls {
		s.srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	s.srv.AllowInsecureAuth = false
	s.srv.ReadTimeout, s.srv.WriteTimeout = 10*time.Second, 10*time.Second
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	go func() { _ = s.srv.Serve(ln) }()
	t.Cleanup(func() { _ = s.srv.Close() })
	return s
}

func (s *smtpServer) port(t *testing.T) int {
	_, p, _ := net.SplitHostPort(s.addr)
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (s *smtpServer) received() []receivedMail {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]receivedMail(nil), s.mails...)
}

type smtpSession struct {
	s    *smtpServer
	c    *smtp.Conn
	m    receivedMail
	auth bool
}

func (ss *smtpSession) AuthMechanisms() []string { return []string{sasl.Plain} }

func (ss *smtpSession) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, password string) error {
		if user != "shadow" || password != "smtp-pass-42" {
			return errors.New("invalid credentials")
		}
		ss.m.user, ss.m.password, ss.auth = user, password, true
		return nil
	}), nil
}

func (ss *smtpSession) Mail(from string, _ *smtp.MailOptions) error {
	if !ss.auth {
		return smtp.ErrAuthRequired
	}
	_, ss.m.tls = ss.c.TLSConnectionState()
	ss.m.from = from
	return nil
}

func (ss *smtpSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	ss.s.mu.Lock()
	i := ss.s.rcpts
	ss.s.rcpts++
	ss.s.mu.Unlock()
	if ss.s.rcpt != nil {
		if err := ss.s.rcpt(i, to); err != nil {
			return err
		}
	}
	ss.m.to = append(ss.m.to, to)
	return nil
}

func (ss *smtpSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	ss.m.data = b
	ss.s.mu.Lock()
	ss.s.mails = append(ss.s.mails, ss.m)
	ss.s.mu.Unlock()
	return nil
}

func (ss *smtpSession) Reset()        { ss.m = receivedMail{user: ss.m.user, password: ss.m.password} }
func (ss *smtpSession) Logout() error { return nil }

// selfSignedCert makes a CA-signed certificate for 127.0.0.1 and returns it
// with the CA's PEM.
func selfSignedCert(t *testing.T) (tls.Certificate, []byte) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test mail CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
}

// emailConfig sends to s by e-mail only, STARTTLS required, AUTH as shadow.
func emailConfig(t *testing.T, s *smtpServer) Config {
	c := testConfig()
	c.Webhook.URLEnv = ""
	c.Email = EmailConfig{SMTPHost: "127.0.0.1", SMTPPort: s.port(t), TLS: TLSStartTLS, CAFile: s.caFile,
		Username: "shadow", PasswordEnv: "SMTP_PW", Auth: "auto",
		From: "conductor-shadow <shadow@example.com>", To: []string{"ml-platform@example.com", "Oncall <oncall@example.com>"},
		SubjectPrefix: "[conductor-shadow]"}
	return c
}

// A suite verdict's e-mail goes over STARTTLS with AUTH to every recipient,
// with its subject, the automation headers and a body holding the change,
// the headline, the failing gates and the link.
func TestEmailOverSTARTTLSWithAuth(t *testing.T) {
	s := newSMTPServer(t, true)
	n := startNotifier(t, emailConfig(t, s), notices(t, engine.Open(t)), env("SMTP_PW", "smtp-pass-42"))
	n.Offer(VerdictState{Kind: KindSuite, Candidate: "conductor", Version: "3f9a0b1c2d3e", Set: "gsm8k-150", Verdict: gate.Fail,
		Headline: "gsm8k-150 (150 cases): conductor 71.3% vs single:gpt-5 78.0%",
		Gates: []Gate{{Name: "quality", Status: gate.Fail, Reason: "worse: upper bound -4.1 pts < -3.0 pts (Tango score interval, paired pass/fail)"},
			{Name: "latency", Status: gate.Inconclusive, Reason: "p95 latency ratio 1.300, interval [1.100, 1.500] straddles 1.250"}},
		Page: "/suite-runs/sr-1", At: at})
	waitFor(t, "the e-mail", func() bool { return n.Stats().Sinks[SinkEmail].Sent == 1 })

	mails := s.received()
	if len(mails) != 1 {
		t.Fatalf("%d messages", len(mails))
	}
	got := mails[0]
	if !got.tls || got.user != "shadow" || got.password != "smtp-pass-42" {
		t.Errorf("session: tls %v, auth %q/%q", got.tls, got.user, got.password)
	}
	if got.from != "shadow@example.com" || strings.Join(got.to, ",") != "ml-platform@example.com,oncall@example.com" {
		t.Errorf("envelope from %q to %v", got.from, got.to)
	}
	msg, err := mail.ReadMessage(bytes.NewReader(got.data))
	if err != nil {
		t.Fatal(err)
	}
	dec := new(mime.WordDecoder)
	header := func(k string) string {
		v, err := dec.DecodeHeader(msg.Header.Get(k))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for k, want := range map[string]string{
		"Subject":        "[conductor-shadow] FAIL: conductor (version 3f9a0b1c2d3e) on gsm8k-150, first suite verdict",
		"From":           `"conductor-shadow" <shadow@example.com>`,
		"To":             `<ml-platform@example.com>, "Oncall" <oncall@example.com>`,
		"Auto-Submitted": "auto-generated",
	} {
		if v := header(k); v != want {
			t.Errorf("%s: %q, want %q", k, v, want)
		}
	}
	if _, err := msg.Header.Date(); err != nil {
		t.Errorf("Date: %v", err)
	}
	if msg.Header.Get("Message-Id") == "" {
		t.Error("no Message-ID")
	}
	if ct := msg.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type %q", ct)
	}
	var body []byte
	if strings.EqualFold(msg.Header.Get("Content-Transfer-Encoding"), "quoted-printable") {
		body, err = io.ReadAll(quotedprintable.NewReader(msg.Body))
	} else {
		body, err = io.ReadAll(msg.Body)
	}
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(body), "\r\n", "\n")
	for _, want := range []string{
		"The suite verdict of conductor (version 3f9a0b1c2d3e) on gsm8k-150 is FAIL (its first).",
		"gsm8k-150 (150 cases): conductor 71.3% vs single:gpt-5 78.0%",
		"Failing and undecided gates:\n- quality FAIL: worse: upper bound -4.1 pts < -3.0 pts (Tango score interval, paired pass/fail)\n- latency INCONCLUSIVE:",
		"Evidence: https://shadow.example.com/ui/suite-runs/sr-1",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("body lacks %q:\n%s", want, text)
		}
	}
}

// A temporary refusal (451) is retried; a permanent one (550) fails at once.
func TestEmailRetriesTemporaryAndStopsOnPermanent(t *testing.T) {
	s := newSMTPServer(t, true)
	s.rcpt = func(i int, to string) error {
		switch {
		case i == 0:
			return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "try again later"}
		case strings.HasPrefix(to, "nobody"):
			return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such user"}
		}
		return nil
	}
	cfg := emailConfig(t, s)
	cfg.Email.To = []string{"ml-platform@example.com"}
	st := engine.Open(t)
	n := startNotifier(t, cfg, notices(t, st), env("SMTP_PW", "smtp-pass-42"))
	n.Offer(suiteState("conductor", "v1", "gsm8k-150", gate.Fail))
	waitFor(t, "delivery after a 451", func() bool { return n.Stats().Sinks[SinkEmail].Sent == 1 })
	if st := n.Stats().Sinks[SinkEmail]; st.Retries != 1 {
		t.Errorf("retries %d, want 1", st.Retries)
	}

	cfg.Email.To = []string{"nobody@example.com"}
	n2 := startNotifier(t, cfg, notices(t, engine.Open(t)), env("SMTP_PW", "smtp-pass-42"))
	n2.Offer(suiteState("conductor", "v1", "gsm8k-150", gate.Fail))
	waitFor(t, "the refusal", func() bool { return n2.Stats().Sinks[SinkEmail].Failed == 1 })
	if st := n2.Stats().Sinks[SinkEmail]; st.Retries != 0 {
		t.Errorf("a 550 was retried %d times", st.Retries)
	}
	if got := len(s.received()); got != 1 {
		t.Errorf("%d messages accepted, want 1", got)
	}
	rows, err := notices(t, st).VerdictNotices(t.Context())
	if err != nil || len(rows) != 1 || rows[0].Status != store.NoticeSent || rows[0].Attempts != 2 {
		t.Errorf("stored %+v (%v)", rows, err)
	}
}

// STARTTLS is required by default: a server without it gets nothing, and
// the password is never sent in the clear.
func TestEmailRefusesAServerWithoutSTARTTLS(t *testing.T) {
	s := newSMTPServer(t, false) // no STARTTLS offered
	cfg := emailConfig(t, s)
	cfg.Retry.MaxElapsed = 100 * time.Millisecond
	n := startNotifier(t, cfg, notices(t, engine.Open(t)), env("SMTP_PW", "smtp-pass-42"))
	n.Offer(suiteState("conductor", "v1", "gsm8k-150", gate.Fail))
	waitFor(t, "the failure", func() bool { return n.Stats().Sinks[SinkEmail].Failed == 1 })
	if got := s.received(); len(got) != 0 {
		t.Errorf("a message went out without TLS: %+v", got)
	}
}
