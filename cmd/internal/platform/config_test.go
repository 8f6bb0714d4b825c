package platform

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestLoadConfigFiles(t *testing.T) {
	files, err := filepath.Glob("testdata/config/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no config fixtures: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			_, err := LoadConfig(f, nil)
			good := strings.HasSuffix(f, ".good.yaml")
			if good && err != nil {
				t.Fatalf("want valid, got %v", err)
			}
			if !good && err == nil {
				t.Fatal("want an error, got none")
			}
		})
	}
}

func TestLoadConfigErrorsNameTheField(t *testing.T) {
	tests := map[string]string{
		"unknown_key.bad.yaml":           "adress",
		"bad_addr.bad.yaml":              "server.addr",
		"unknown_incumbent.bad.yaml":     "gpt-17",
		"bad_candidate.bad.yaml":         "moa",
		"bad_duration.bad.yaml":          "soon",
		"negative_queue.bad.yaml":        "queue_size",
		"bad_worker_url.bad.yaml":        "base_url",
		"bad_role.bad.yaml":              "server.role",
		"tap_without_kafka.bad.yaml":     "kafka.brokers",
		"bad_kafka_reassembly.bad.yaml":  "kafka.reassembly_bytes",
		"bad_admission.bad.yaml":         "admission.backoff_ratio",
		"bad_judge_canaries.bad.yaml":    "judge: canaries must be in 1..50",
		"bad_live_judge.bad.yaml":        "never runs without a budget",
		"bad_live_judge_worker.bad.yaml": "judge.live.worker \"gpt-99\"",
		"bad_trusted_network.bad.yaml":   "proxy.trusted_networks[1]",
		"bad_token_header.bad.yaml":      "proxy.token_header",
		"small_body_budget.bad.yaml":     "max_unfinished_body_bytes",
		"zero_read_timeout.bad.yaml":     "server.read_timeout",
	}
	for file, want := range tests {
		_, err := LoadConfig(filepath.Join("testdata/config", file), nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v does not mention %q", file, err, want)
		}
	}
}

func TestLoadConfigPrecedence(t *testing.T) {
	cfg, err := LoadConfig("testdata/config/full.good.yaml", map[string]string{
		"CONDUCTOR_SHADOW_DATA":     "/tmp/elsewhere",
		"CONDUCTOR_SHADOW_POOL_URL": "http://10.0.0.9:9090/v1",
		"UNRELATED":                 "x",
	})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Store.Path != "/tmp/elsewhere" {
		t.Errorf("store.path = %q: the environment must override the file", cfg.Store.Path)
	}
	if cfg.Store.Database != "shadow_test" || cfg.Ingest.Workers != 8 || cfg.Pipelines.Incumbent != "claude-sonnet-4" {
		t.Errorf("file values lost: %+v", cfg)
	}
	for _, w := range cfg.Shadow.Workers {
		if w.BaseURL != "http://10.0.0.9:9090/v1" {
			t.Errorf("worker %s base_url = %s, want the pool override", w.Name, w.BaseURL)
		}
	}
	if cfg.Server.ShutdownTimeout.Seconds() != 45 {
		t.Errorf("shutdown_timeout = %v", cfg.Server.ShutdownTimeout)
	}
}

func TestRedactDSN(t *testing.T) {
	tests := map[string]string{
		"clickhouse://u:secret@host:9000/db": "clickhouse://u:***@host:9000/db",
		"clickhouse://host:9000/db":          "clickhouse://host:9000/db",
		"clickhouse://u@host:9000/db":        "clickhouse://u@host:9000/db",
	}
	for in, want := range tests {
		if got := RedactDSN(in); got != want {
			t.Errorf("RedactDSN(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestExampleConfigShowsTheDefaults(t *testing.T) {
	cfg, err := LoadConfig("../../../conductor-shadow.example.yaml", nil)
	if err != nil {
		t.Fatalf("the shipped example must load: %v", err)
	}
	if !reflect.DeepEqual(cfg, NewDefaultConfig()) {
		t.Fatalf("conductor-shadow.example.yaml differs from NewDefaultConfig():\n file: %+v\n code: %+v", cfg, NewDefaultConfig())
	}
}

// A flag applies before validation: it can fix a bad value of the file.
func TestFlagsApplyBeforeValidation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad-addr.yaml")
	if err := os.WriteFile(path, []byte("server:\n  addr: not-an-address\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfig(path, nil); err == nil {
		t.Fatal("the file's bad addr must fail validation without a flag")
	}
	gf := Flags{Addr: "127.0.0.1:9999"}
	cfg, err := LoadConfig(path, nil, gf.Apply)
	if err != nil {
		t.Fatalf("--addr must fix the file's bad value: %v", err)
	}
	if cfg.Server.Addr != "127.0.0.1:9999" {
		t.Errorf("addr = %q; want the flag's", cfg.Server.Addr)
	}
}

// suite.code reaches the code grader: a bad value is a config error.
func TestSuiteCodeConfigIsValidated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "code.yaml")
	if err := os.WriteFile(path, []byte("suite:\n  code:\n    timeout: 0s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfig(path, nil); err == nil || !strings.Contains(err.Error(), "code.timeout") {
		t.Fatalf("LoadConfig = %v; want a suite.code.timeout error", err)
	}
}
