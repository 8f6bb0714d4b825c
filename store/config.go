package store

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"
)

// Config chooses and configures the transport. With DSN set the store talks to a
// ClickHouse server; otherwise it runs the embedded engine on Path.
type Config struct {
	// Path is the embedded engine's data folder (default "./data").
	Path string `yaml:"path"`
	// DSN selects the server transport: clickhouse://[user[:password]@]host:9000[/database][?options].
	DSN string `yaml:"dsn"`
	// Database holds the tables (default "shadow"). A database in the DSN's path
	// must be empty or equal to it.
	Database string `yaml:"database"`
	// QueryTimeout bounds one Store.Query statement on the engine
	// (ClickHouse's max_execution_time, whole seconds; default 30s): a runaway
	// ad-hoc query fails with a timeout instead of holding the store.
	QueryTimeout time.Duration `yaml:"query_timeout"`
	// QueryMaxRows caps the rows one Store.Query may return (max_result_rows,
	// default 100,000); past it the query fails and asks for a LIMIT.
	QueryMaxRows int `yaml:"query_max_rows"`
}

// NewDefaultConfig returns the embedded store in ./data, database "shadow", ad-hoc
// queries bounded to 30 s and 100,000 rows.
func NewDefaultConfig() Config {
	return Config{Path: "./data", Database: "shadow", QueryTimeout: 30 * time.Second, QueryMaxRows: 100000}
}

var databaseName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// Validate reports a missing path, a malformed DSN or an invalid database name.
func (c Config) Validate() error {
	var errs []error
	if !databaseName.MatchString(c.Database) {
		errs = append(errs, fmt.Errorf("store: database %q: want letters, digits and '_', not starting with a digit, at most 64", c.Database))
	}
	if c.QueryTimeout < time.Second {
		errs = append(errs, fmt.Errorf("store: query_timeout %v: want at least 1s", c.QueryTimeout))
	}
	if c.QueryMaxRows < 1 {
		errs = append(errs, fmt.Errorf("store: query_max_rows %d: want at least 1", c.QueryMaxRows))
	}
	if c.DSN == "" {
		if c.Path == "" {
			errs = append(errs, errors.New("store: path: empty; set the embedded data folder or a server dsn"))
		}
	} else if _, db, err := parseServerDSN(c.DSN); err != nil {
		errs = append(errs, err)
	} else if db != "" && db != c.Database {
		errs = append(errs, fmt.Errorf("store: dsn names database %q but database is %q; make them equal or drop the path from the dsn", db, c.Database))
	}
	return errors.Join(errs...)
}

// Open validates cfg, connects the transport (a ClickHouse server when cfg.DSN is
// set, else the embedded engine on cfg.Path, created if absent), and applies the
// schema migrations. Errors wrap ErrEngineMissing when libchdb.so cannot be
// loaded. The embedded engine allows one data folder per process: opening a
// second folder fails, opening the same folder again shares the engine.
func Open(ctx context.Context, cfg Config) (Store, error) {
	return open(ctx, cfg)
}

func open(ctx context.Context, cfg Config) (*sqlStore, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var (
		t   transport
		err error
	)
	if cfg.DSN != "" {
		t, err = openServer(ctx, cfg.DSN)
	} else {
		t, err = openEmbedded(cfg.Path, quoteIdent(cfg.Database))
	}
	if err != nil {
		return nil, err
	}
	s := &sqlStore{t: t, db: quoteIdent(cfg.Database), queryLimits: queryLimits{timeout: cfg.QueryTimeout, maxRows: cfg.QueryMaxRows}}
	if err := s.migrate(ctx); err != nil {
		t.close()
		return nil, err
	}
	return s, nil
}
