package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store/internal/consoleworker"
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
	// ConsoleDSN, with the server transport, runs Store.Query (the SQL console)
	// on a connection of its own, as a read-only ClickHouse user (readonly
	// profile, SELECT granted on Database only; see README and
	// docker-compose.yml). Empty: the console shares the store's connection.
	ConsoleDSN string `yaml:"console_dsn"`
	// Log takes the store's own warnings (tables recreated by a repair); nil
	// discards them. Not a config key: the program hands its logger in.
	Log *slog.Logger `yaml:"-"`
	// QueryTimeout bounds one Store.Query statement on the engine
	// (ClickHouse's max_execution_time, whole seconds; default 10s): a runaway
	// ad-hoc query fails with a timeout instead of holding the store. On the
	// embedded engine embedded_console_timeout bounds a statement tighter.
	QueryTimeout time.Duration `yaml:"query_timeout"`
	// QueryMaxRows caps the rows one Store.Query may return (max_result_rows,
	// default 100,000); past it the query fails and asks for a LIMIT.
	QueryMaxRows int `yaml:"query_max_rows"`
	// QueryMaxRowsRead caps the rows one Store.Query may read from tables
	// (max_rows_to_read, default 1,000,000,000).
	QueryMaxRowsRead int64 `yaml:"query_max_rows_read"`
	// QueryMaxMemoryBytes caps the memory of one Store.Query on the engine
	// (max_memory_usage, bytes; default 1 GiB).
	QueryMaxMemoryBytes int64 `yaml:"query_max_memory_bytes"`
	// QueryConcurrency is how many Store.Query statements may run at once
	// (default 1); one more gets ErrQueryBusy at once instead of queueing
	// in front of pages and the tap.
	QueryConcurrency int `yaml:"query_concurrency"`
	// EmbeddedConsoleTimeout bounds one Store.Query statement on the embedded
	// engine, from the start of its console worker (a child process with an
	// engine of its own over a snapshot of the tables) to its answer: the
	// engine's max_execution_time is set to what is left, and at the bound
	// the worker is killed, whatever the statement is doing (ErrQueryKilled).
	// ms precision; default 10s; at most query_timeout applies. The tap's
	// writes and the pages' reads never wait for a console statement.
	EmbeddedConsoleTimeout time.Duration `yaml:"embedded_console_timeout"`
	// EmbeddedNice is how many niceness steps (0–19, as nice(1)'s -n) below
	// the process's own priority the embedded engine's threads run (default
	// 10; 0 = the same priority). Every call into the engine runs on one
	// thread lowered at start and the engine's threads inherit it, so in an
	// all-in-one serve the kernel gives the proxy and the tap the CPU before
	// the engine's inserts, merges and page queries (README, Performance).
	// Linux only; a store opened elsewhere needs 0.
	EmbeddedNice int `yaml:"embedded_nice"`
	// EmbeddedConsoleMaxRowsRead caps the rows one Store.Query may read on the
	// embedded engine (max_rows_to_read; default 100,000,000; the smaller of
	// it and query_max_rows_read applies).
	EmbeddedConsoleMaxRowsRead int64 `yaml:"embedded_console_max_rows_read"`
	// EmbeddedConsoleMaxBytesRead caps the bytes one Store.Query may read on
	// the embedded engine (max_bytes_to_read, uncompressed bytes; default
	// 1 GiB).
	EmbeddedConsoleMaxBytesRead int64 `yaml:"embedded_console_max_bytes_read"`
	// StalledAfter is how long a statement may stay inside the embedded
	// engine, or a caller wait for it, before the store reports itself
	// stalled (EngineHealth; /readyz answers 503 store_stalled); default 5s;
	// 0 never. The engine runs one statement at a time, so a stuck one holds
	// every tap write and page read.
	StalledAfter time.Duration `yaml:"stalled_after"`
	// Cluster names the ClickHouse cluster (remote_servers) the migrations
	// create their tables on: Replicated*MergeTree tables <name>_local on every
	// node plus Distributed tables <name> over them (see clusterDDL). Needs DSN;
	// "" (default) is one node.
	Cluster string `yaml:"cluster"`
	// Retention is how long rows and their text bodies are kept (ClickHouse
	// TTLs), applied at every Open.
	Retention RetentionConfig `yaml:"retention"`
}

// RetentionConfig sets a TTL per table, counted from each row's own time
// (requests.received_at, runs.started_at, steps.started_at,
// scores.created_at); 0 keeps rows forever. Bodies is a shorter TTL for the
// text bodies alone (requests.input; runs.final_output, reasoning, choices,
// tool_calls, plan_raw, plan; steps.subtask, messages, output, reasoning;
// scores.explanation):
// past it they are emptied while the figures (latency, tokens, cost, status,
// scores) stay until the row's own TTL. Work is the TTL of the store-first
// queue's done shadow_work rows (from shadow_work.received_at); pending rows
// are kept until done, or until Requests has removed the request they need.
// ClickHouse applies TTLs at merges, so expired data disappears within hours,
// not at the second.
type RetentionConfig struct {
	Requests time.Duration `yaml:"requests"`
	Runs     time.Duration `yaml:"runs"`
	Steps    time.Duration `yaml:"steps"`
	Scores   time.Duration `yaml:"scores"`
	Bodies   time.Duration `yaml:"bodies"`
	Work     time.Duration `yaml:"work"`
}

// NewDefaultConfig returns the embedded store in ./data, database "shadow", ad-hoc
// queries bounded to 10 s, 100,000 rows returned, 10^9 rows read, 1 GiB of
// memory and one at a time; on the embedded engine to 10 s (worker included),
// 10^8 rows and 1 GiB read, its threads 10 niceness steps down; stalled
// after 5 s; rows kept forever except done
// shadow work, kept 7 days (168h).
func NewDefaultConfig() Config {
	return Config{Path: "./data", Database: "shadow", QueryTimeout: 10 * time.Second, QueryMaxRows: 100000,
		QueryMaxRowsRead: 1_000_000_000, QueryMaxMemoryBytes: 1 << 30, QueryConcurrency: 1,
		EmbeddedConsoleTimeout: 10 * time.Second, EmbeddedConsoleMaxRowsRead: 100_000_000, EmbeddedConsoleMaxBytesRead: 1 << 30, EmbeddedNice: 10,
		StalledAfter: 5 * time.Second, Retention: RetentionConfig{Work: 7 * 24 * time.Hour}}
}

// consoleLimits returns the limits a Store.Query statement runs with: the
// query_* keys, tightened by the embedded_console_* keys on the embedded
// engine.
func (c Config) consoleLimits() queryLimits {
	lim := queryLimits{timeout: c.QueryTimeout, maxRows: c.QueryMaxRows,
		maxRowsRead: c.QueryMaxRowsRead, maxMemory: c.QueryMaxMemoryBytes}
	if c.DSN == "" {
		lim.timeout = min(lim.timeout, c.EmbeddedConsoleTimeout)
		lim.maxRowsRead = min(lim.maxRowsRead, c.EmbeddedConsoleMaxRowsRead)
		lim.maxBytesRead = c.EmbeddedConsoleMaxBytesRead
	}
	return lim
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
	if c.QueryMaxRowsRead < 1 {
		errs = append(errs, fmt.Errorf("store: query_max_rows_read %d: want at least 1", c.QueryMaxRowsRead))
	}
	if c.QueryMaxMemoryBytes < 1<<20 {
		errs = append(errs, fmt.Errorf("store: query_max_memory_bytes %d: want at least 1 MiB (1048576)", c.QueryMaxMemoryBytes))
	}
	if c.EmbeddedConsoleTimeout < time.Second {
		errs = append(errs, fmt.Errorf("store: embedded_console_timeout %v: want at least 1s (the console worker's start and the snapshot count towards it)", c.EmbeddedConsoleTimeout))
	}
	if c.EmbeddedConsoleMaxRowsRead < 1 {
		errs = append(errs, fmt.Errorf("store: embedded_console_max_rows_read %d: want at least 1", c.EmbeddedConsoleMaxRowsRead))
	}
	if c.EmbeddedConsoleMaxBytesRead < 1<<20 {
		errs = append(errs, fmt.Errorf("store: embedded_console_max_bytes_read %d: want at least 1 MiB (1048576)", c.EmbeddedConsoleMaxBytesRead))
	}
	if c.EmbeddedNice < 0 || c.EmbeddedNice > 19 {
		errs = append(errs, fmt.Errorf("store: embedded_nice %d: want 0–19", c.EmbeddedNice))
	}
	if c.StalledAfter < 0 {
		errs = append(errs, fmt.Errorf("store: stalled_after %v: want 0 (never) or more", c.StalledAfter))
	}
	if c.QueryConcurrency < 1 {
		errs = append(errs, fmt.Errorf("store: query_concurrency %d: want at least 1", c.QueryConcurrency))
	}
	if c.ConsoleDSN != "" {
		if c.DSN == "" {
			errs = append(errs, errors.New("store: console_dsn needs the server transport (dsn); the embedded engine has one connection"))
		} else if _, db, err := parseServerDSN(c.ConsoleDSN); err != nil {
			errs = append(errs, fmt.Errorf("store: console_dsn: %w", err))
		} else if db != "" && db != c.Database {
			errs = append(errs, fmt.Errorf("store: console_dsn names database %q but database is %q", db, c.Database))
		}
	}
	if c.Cluster != "" {
		if !databaseName.MatchString(c.Cluster) {
			errs = append(errs, fmt.Errorf("store: cluster %q: want letters, digits and '_', not starting with a digit", c.Cluster))
		}
		if c.DSN == "" {
			errs = append(errs, errors.New("store: cluster: needs a server dsn (the embedded engine is one node)"))
		}
	}
	for name, d := range map[string]time.Duration{"requests": c.Retention.Requests, "runs": c.Retention.Runs, "steps": c.Retention.Steps, "scores": c.Retention.Scores, "bodies": c.Retention.Bodies, "work": c.Retention.Work} {
		if d < 0 || (d > 0 && d < time.Hour) {
			errs = append(errs, fmt.Errorf("store: retention.%s %v: want 0 (keep forever) or at least 1h", name, d))
		}
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
	} else if err = secureDataDir(cfg.Path); err == nil {
		t, err = openEmbedded(cfg.Path, quoteIdent(cfg.Database), cfg.EmbeddedNice)
	}
	if err != nil {
		return nil, err
	}
	s := &sqlStore{t: t, db: quoteIdent(cfg.Database), dbName: cfg.Database, cluster: cfg.Cluster, console: newConsoleGuard(cfg.Database, cfg.QueryConcurrency),
		queryLimits: cfg.consoleLimits(), log: cfg.Log, stallAfter: cfg.StalledAfter, workerWait: consoleWorkerStart}
	if e, ok := t.(*embedded); ok {
		// A process that ended mid-statement left its console snapshot.
		removed, err := e.removeConsoleLeftovers()
		if len(removed) > 0 && cfg.Log != nil {
			cfg.Log.Warn("store: removed the console snapshots a stopped process left", "folders", len(removed))
		}
		if err != nil {
			t.close()
			return nil, fmt.Errorf("store: remove old console snapshots: %w", err)
		}
		s.workers = newConsoleWorkers(func(ctx context.Context) (*consoleworker.Worker, error) { return s.startWorker(ctx, e) })
	}
	if err := s.migrate(ctx, cfg.Log); err != nil {
		t.close()
		return nil, err
	}
	if err := s.applyRetention(ctx, cfg.Retention); err != nil {
		t.close()
		return nil, err
	}
	if err := s.applyForgetSettings(ctx); err != nil {
		t.close()
		return nil, err
	}
	if cfg.ConsoleDSN != "" {
		ct, err := openServer(ctx, cfg.ConsoleDSN)
		if err != nil {
			t.close()
			return nil, fmt.Errorf("store: console_dsn: %w", err)
		}
		s.consoleT = ct
		if s.console.userReadonly, err = userReadonly(ctx, ct); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}
