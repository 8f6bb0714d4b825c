package notify

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseConfigFiles(t *testing.T) {
	// What each bad file's error must name.
	bad := map[string][]string{
		"unknown-key.bad.yaml":           {"field url not found"},
		"live-window.bad.yaml":           {"field live_window not found"},
		"no-base-url.bad.yaml":           {"base_url", "required"},
		"base-url-query.bad.yaml":        {"base_url", "no query"},
		"plaintext-password.bad.yaml":    {"email.tls", "in the clear"},
		"no-recipient.bad.yaml":          {"email.to"},
		"bad-address.bad.yaml":           {"email.from"},
		"user-without-password.bad.yaml": {"email.password_env"},
		"bad-auth.bad.yaml":              {"email.auth", "plain-noenc"},
		"bad-numbers.bad.yaml":           {"live_interval", "outbox_size", "timeout", "retry.max_backoff", "retry.max_elapsed"},
		"bad-tls.bad.yaml":               {"email.smtp_host", "email.tls"},
	}
	files, err := filepath.Glob("testdata/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Parse(b)
			if strings.HasSuffix(f, ".good.yaml") {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			want, ok := bad[filepath.Base(f)]
			if !ok {
				t.Fatalf("no expectation for %s", f)
			}
			if err == nil {
				t.Fatal("want an error, got none")
			}
			for _, w := range want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}

func TestParseFullConfig(t *testing.T) {
	b, err := os.ReadFile("testdata/full.good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Enabled() || c.Email.Auth != "scram-sha-256" || len(c.Email.To) != 2 || c.LiveInterval != time.Minute ||
		c.Retry.MaxElapsed != time.Hour || c.Email.SubjectPrefix != "[shadow]" {
		t.Errorf("values lost: %+v", c)
	}
	if NewDefaultConfig().Enabled() {
		t.Error("the default config sends to nobody")
	}
	if err := NewDefaultConfig().Validate(); err != nil {
		t.Errorf("default config: %v", err)
	}
}
