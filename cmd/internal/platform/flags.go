package platform

import (
	"log/slog"
	"os"

	"github.com/caarlos0/env/v11"
	"github.com/spf13/pflag"
)

// Flags are the command-line flags every command of every binary shares; a
// flag that is set overrides the config file and the environment.
type Flags struct {
	ConfigPath string
	DataDir    string
	DSN        string
	Addr       string
	Kafka      []string
	Role       string
}

// Register adds the flags to fs (a cobra root's persistent flags).
func (f *Flags) Register(fs *pflag.FlagSet) {
	fs.StringVar(&f.ConfigPath, "config", "", "YAML config file (defaults apply to what it leaves out)")
	fs.StringVar(&f.DataDir, "data", "", "embedded store folder (default ./data)")
	fs.StringVar(&f.DSN, "clickhouse-dsn", "", "ClickHouse server DSN, e.g. clickhouse://host:9000/db (replaces the embedded store)")
	fs.StringVar(&f.Addr, "addr", "", "server listen address host:port (default 127.0.0.1:8080)")
	fs.StringVar(&f.Role, "role", "", "what serve runs: all (default), tap (proxy + /v1/tap to Kafka) or shadow (Kafka consumer-group workers)")
	fs.StringSliceVar(&f.Kafka, "kafka-brokers", nil, "Kafka brokers host:port,... carrying tapped exchanges to the shadow workers (default: in-process queue)")
}

// Apply sets the flags given on the command line over the file and environment.
func (f *Flags) Apply(cfg *Config) {
	if f.DataDir != "" {
		cfg.Store.Path = f.DataDir
	}
	if f.DSN != "" {
		cfg.Store.DSN = f.DSN
	}
	if f.Addr != "" {
		cfg.Server.Addr = f.Addr
	}
	if len(f.Kafka) > 0 {
		cfg.Ingest.Kafka.Brokers = f.Kafka
	}
	if f.Role != "" {
		cfg.Server.Role = f.Role
	}
}

// Loader loads the configuration a command runs with.
type Loader func() (Config, error)

// Loader reads the config file named by the flags over the defaults, with the
// process environment and the flags applied (LoadConfig); the store logs its
// own warnings (a repaired schema) to log.
func (f *Flags) Loader(log *slog.Logger) Loader {
	return func() (Config, error) {
		cfg, err := LoadConfig(f.ConfigPath, env.ToMap(os.Environ()), f.Apply)
		cfg.Store.Log = log
		return cfg, err
	}
}
