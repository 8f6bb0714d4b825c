package store

import (
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*Config)
		wantErr string // substring; "" means valid
	}{
		{"default", func(*Config) {}, ""},
		{"server dsn", func(c *Config) { c.DSN = "clickhouse://ch:9000" }, ""},
		{"server dsn with same db", func(c *Config) { c.DSN = "clickhouse://u:p@ch:9000/shadow?dial_timeout=2s" }, ""},
		{"server dsn other db", func(c *Config) { c.DSN = "clickhouse://ch:9000/prod" }, `dsn names database "prod"`},
		{"http scheme", func(c *Config) { c.DSN = "http://ch:8123" }, "scheme must be clickhouse://"},
		{"no host", func(c *Config) { c.DSN = "clickhouse:///shadow" }, "missing host"},
		{"bad dsn option", func(c *Config) { c.DSN = "clickhouse://ch:9000?dial_timeout=forever" }, "dsn"},
		{"password redacted", func(c *Config) { c.DSN = "http://u:hunter2@ch:8123" }, "xxxxx"},
		{"empty path", func(c *Config) { c.Path = "" }, "path: empty"},
		{"empty path ok with dsn", func(c *Config) { c.Path, c.DSN = "", "clickhouse://ch:9000" }, ""},
		{"bad database", func(c *Config) { c.Database = "shadow; DROP" }, "database"},
		{"empty database", func(c *Config) { c.Database = "" }, "database"},
		{"cluster with dsn", func(c *Config) { c.DSN, c.Cluster = "clickhouse://ch:9000", "shadow_cluster" }, ""},
		{"cluster without dsn", func(c *Config) { c.Cluster = "shadow_cluster" }, "cluster: needs a server dsn"},
		{"bad cluster name", func(c *Config) { c.DSN, c.Cluster = "clickhouse://ch:9000", "a b" }, "cluster \"a b\""},
		{"retention", func(c *Config) { c.Retention = RetentionConfig{Requests: 2160 * time.Hour, Bodies: 720 * time.Hour} }, ""},
		{"negative retention", func(c *Config) { c.Retention.Runs = -time.Hour }, "retention.runs"},
		{"retention under an hour", func(c *Config) { c.Retention.Bodies = time.Minute }, "retention.bodies 1m0s: want 0 (keep forever) or at least 1h"},
	}
	for _, tc := range tests {
		c := NewDefaultConfig()
		tc.mutate(&c)
		err := c.Validate()
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: Validate() = %v; want nil", tc.name, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: Validate() = %v; want error containing %q", tc.name, err, tc.wantErr)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: error leaks the password: %v", tc.name, err)
		}
	}
}
