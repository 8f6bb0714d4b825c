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
		{"embedded console timeout", func(c *Config) { c.EmbeddedConsoleTimeout = 1500 * time.Millisecond }, ""},
		{"embedded console timeout too short", func(c *Config) { c.EmbeddedConsoleTimeout = 500 * time.Millisecond }, "embedded_console_timeout 500ms: want at least 1s"},
		{"embedded nice off", func(c *Config) { c.EmbeddedNice = 0 }, ""},
		{"embedded nice lowest", func(c *Config) { c.EmbeddedNice = 19 }, ""},
		{"embedded nice negative", func(c *Config) { c.EmbeddedNice = -1 }, "embedded_nice -1: want 0–19"},
		{"embedded nice too high", func(c *Config) { c.EmbeddedNice = 20 }, "embedded_nice 20: want 0–19"},
		{"stalled after off", func(c *Config) { c.StalledAfter = 0 }, ""},
		{"stalled after negative", func(c *Config) { c.StalledAfter = -time.Second }, "stalled_after -1s"},
		{"embedded console rows read", func(c *Config) { c.EmbeddedConsoleMaxRowsRead = 0 }, "embedded_console_max_rows_read 0"},
		{"embedded console bytes read", func(c *Config) { c.EmbeddedConsoleMaxBytesRead = 1000 }, "embedded_console_max_bytes_read 1000"},
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

// TestConsoleLimits: the embedded engine tightens the console's limits; a
// server keeps the query_* keys.
func TestConsoleLimits(t *testing.T) {
	emb := NewDefaultConfig()
	srv := NewDefaultConfig()
	srv.DSN = "clickhouse://ch:9000"
	short := NewDefaultConfig()
	short.QueryTimeout, short.EmbeddedConsoleTimeout = time.Second, 5*time.Second
	tight := NewDefaultConfig()
	tight.EmbeddedConsoleTimeout = 2 * time.Second
	tests := []struct {
		name string
		cfg  Config
		want queryLimits
	}{
		{"embedded", emb, queryLimits{timeout: 10 * time.Second, maxRows: 100000, maxRowsRead: 100_000_000, maxBytesRead: 1 << 30, maxMemory: 1 << 30}},
		{"server", srv, queryLimits{timeout: 10 * time.Second, maxRows: 100000, maxRowsRead: 1_000_000_000, maxMemory: 1 << 30}},
		{"embedded bound below query_timeout", tight, queryLimits{timeout: 2 * time.Second, maxRows: 100000, maxRowsRead: 100_000_000, maxBytesRead: 1 << 30, maxMemory: 1 << 30}},
		{"query_timeout below the embedded bound", short, queryLimits{timeout: time.Second, maxRows: 100000, maxRowsRead: 100_000_000, maxBytesRead: 1 << 30, maxMemory: 1 << 30}},
	}
	for _, tc := range tests {
		if got := tc.cfg.consoleLimits(); got != tc.want {
			t.Errorf("%s: consoleLimits() = %+v; want %+v", tc.name, got, tc.want)
		}
	}
}
