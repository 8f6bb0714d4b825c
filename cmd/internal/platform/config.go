// Package platform is what every binary of the platform builds from one
// configuration: the YAML file with its environment and flag overrides
// (Config, LoadConfig, Flags), the pipelines (incumbent and candidates over one
// worker pool), the incumbent's price table and the store. `conductor-shadow`
// and `loadtest` share it.
package platform

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/caarlos0/env/v11"
	"gopkg.in/yaml.v3"

	"github.com/conductor-shadow/conductor-shadow/eval"
	"github.com/conductor-shadow/conductor-shadow/eval/gate"
	"github.com/conductor-shadow/conductor-shadow/eval/judge"
	"github.com/conductor-shadow/conductor-shadow/eval/livejudge"
	"github.com/conductor-shadow/conductor-shadow/eval/notify"
	"github.com/conductor-shadow/conductor-shadow/eval/schedule"
	"github.com/conductor-shadow/conductor-shadow/ingest"
	"github.com/conductor-shadow/conductor-shadow/ingest/guard"
	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/web"
)

// Config is the whole YAML configuration file. Every section belongs to the package
// that uses it; unknown keys are rejected.
type Config struct {
	Server    ServerConfig       `yaml:"server"`
	Store     store.Config       `yaml:"store"`
	Writer    store.WriterConfig `yaml:"writer"`
	Ingest    ingest.Config      `yaml:"ingest"`
	Shadow    shadow.Config      `yaml:"shadow"`
	Pipelines PipelinesConfig    `yaml:"pipelines"`
	Suite     SuiteConfig        `yaml:"suite"`
	Schedules schedule.Config    `yaml:"schedules"`
	Web       web.Config         `yaml:"web"`
	Telemetry TelemetryConfig    `yaml:"telemetry"`
	Notify    notify.Config      `yaml:"notify"`
	Judge     JudgeConfig        `yaml:"judge"`
}

// JudgeConfig is the judging of live traffic (suite runs' judge is
// suite.judge).
type JudgeConfig struct {
	// Live judges a share of live shadow pairs in the shadow workers within
	// a daily judge budget (eval/livejudge).
	Live livejudge.Config `yaml:"live"`
}

// LiveJudgeWorker is the worker that judges live pairs: judge.live.worker,
// else suite.judge.worker.
func (c Config) LiveJudgeWorker() string {
	if c.Judge.Live.Worker != "" {
		return c.Judge.Live.Worker
	}
	return c.Suite.Judge.Worker
}

// ServerConfig is the HTTP listener shared by the tap, the web UI and the API.
type ServerConfig struct {
	Addr string `yaml:"addr"` // host:port, default 127.0.0.1:8080
	// APITokenEnv names the environment variable holding the bearer token that
	// callers outside loopback must present to /api and /v1/tap. When the server
	// listens beyond loopback the variable must be set.
	APITokenEnv string `yaml:"api_token_env"`
	// ShutdownTimeout bounds draining: in-flight HTTP requests, the tap's queue and
	// the store writer.
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout"`
	// ReadHeaderTimeout bounds how long a caller may take to send a request's
	// headers (http.Server.ReadHeaderTimeout).
	ReadHeaderTimeout time.Duration `yaml:"read_header_timeout"`
	// ReadTimeout bounds how long a caller may take to send a whole request,
	// headers and body (http.Server.ReadTimeout). The answer is not bounded:
	// the server lifts the read deadline once the body has been read, and
	// there is no write timeout, so the proxy's SSE answers stream as long as
	// the incumbent's do.
	ReadTimeout time.Duration `yaml:"read_timeout"`
	// IdleTimeout closes a keep-alive connection idle this long
	// (http.Server.IdleTimeout).
	IdleTimeout time.Duration `yaml:"idle_timeout"`
	// Role is what this process runs: RoleAll (default), RoleTap or RoleShadow.
	Role string `yaml:"role"`
	// AllowedHosts are the further names the server answers under (Host
	// header), beside localhost, IP addresses and the name in Addr: e.g. the
	// name of a reverse proxy in front of it, or ".example.com" for every name
	// under example.com. Browsers' state-changing requests from these origins
	// are accepted too. Other names get 421 (DNS rebinding protection).
	AllowedHosts []string `yaml:"allowed_hosts"`
	// Isolate runs the all-in-one role (without Kafka, on Linux) as two
	// processes: the front (the mirroring proxy, the tap and the recorder, at
	// the process's priority, on Addr) supervises the shadow side (the store,
	// the store-first queue, the shadow workers, the writer, the schedules,
	// the web UI and the API) as a child process ShadowNice niceness steps
	// lower, reached over a unix socket in the data folder. Default true;
	// false: one process, as before.
	Isolate bool `yaml:"isolate"`
	// ShadowNice is how many niceness steps the shadow side runs below the
	// front (0–19; the result capped at 19; 0: a process of its own at the
	// front's priority). At 10 the kernel's scheduler weighs its threads at
	// about a tenth of the front's (CFS weights 110 and 1024).
	ShadowNice int `yaml:"shadow_nice"`
	// ShadowIdle runs every thread of the shadow side under Linux's idle
	// scheduling policy (SCHED_IDLE, sched(7)): it gets a CPU only when no
	// thread of normal policy wants one, and a waking front thread preempts
	// it at once, where niceness only lowers its share. Default false
	// (ShadowNice alone): on a machine whose CPUs other work keeps busy the
	// shadow side gets almost nothing (a weight of 3 against nice 0's 1024),
	// so it suits a box that serves production and little else, as the
	// role runs of `loadtest bench` measure it. Ignored where isolation is
	// unsupported.
	ShadowIdle bool `yaml:"shadow_idle"`
	// HandoffBuffer is how many copies wait in the front for the shadow side
	// at most; a mirrored copy beyond it is recorded, not shadowed
	// (queue_full).
	HandoffBuffer int `yaml:"handoff_buffer"`
}

// Roles of `serve` (server.role, --role).
const (
	// RoleAll runs the tap, the mirroring proxy, the shadow workers, the store
	// writer, schedules, the web UI and the API in one process.
	RoleAll = "all"
	// RoleTap runs the mirroring proxy and /v1/tap only and hands every copy to
	// Kafka: no store, no candidate pool, no shadow work, no web UI.
	RoleTap = "tap"
	// RoleShadow runs shadow workers only: a member of the Kafka consumer group
	// that stores each exchange and its candidate runs, then commits its offset;
	// the web UI and API serve its store. No tap, no proxy, no schedules.
	RoleShadow = "shadow"
)

// PipelinesConfig names what runs on every request.
type PipelinesConfig struct {
	// Incumbent is the worker that plays the incumbent in suite runs and answers
	// replayed requests that were recorded without an answer.
	Incumbent string `yaml:"incumbent"`
	// Candidates run in shadow on every tapped request and in every suite run,
	// in the short form of a candidate (shadow.ParseCandidate): "conductor" or
	// "single:<worker>".
	Candidates []string `yaml:"candidates"`
	// CandidatePipelines are further candidates of any kind
	// (shadow.CandidateConfig); they shadow the same traffic next to
	// Candidates.
	CandidatePipelines []shadow.CandidateConfig `yaml:"candidate_pipelines"`
}

// AllCandidates are Candidates (parsed) then CandidatePipelines, in order.
func (p PipelinesConfig) AllCandidates() ([]shadow.CandidateConfig, error) {
	out := make([]shadow.CandidateConfig, 0, len(p.Candidates)+len(p.CandidatePipelines))
	for i, name := range p.Candidates {
		cc, err := shadow.ParseCandidate(name)
		if err != nil {
			return nil, fmt.Errorf("config: pipelines.candidates[%d]: %w", i, err)
		}
		out = append(out, cc)
	}
	return append(out, p.CandidatePipelines...), nil
}

// SuiteConfig sets the default suite run.
type SuiteConfig struct {
	Set         string `yaml:"set"`        // regression-set JSONL file
	ReportDir   string `yaml:"report_dir"` // where Markdown and JSON reports are written
	Concurrency int    `yaml:"concurrency"`
	Policy      string `yaml:"policy"`    // gate policy YAML (eval/gate); "" = gate.NewDefaultPolicy()
	NoiseRun    bool   `yaml:"noise_run"` // also run the incumbent a second time (A′) for the noise floor
	// ShiftWindow is a report's shift window, this long before the run
	// finished: its shift section compares the set with the requests received
	// in it; 0 = no shift section. The report's live section has no window
	// (each candidate version's sequence since its shadowing started).
	ShiftWindow time.Duration `yaml:"shift_window"`
	// Judge is the LLM judge of cases graded "judge" or "pairwise".
	Judge judge.Config `yaml:"judge"`
	// Code is the sandbox of cases graded "code" (interpreter, timeout, memory cap).
	Code eval.CodeConfig `yaml:"code"`
}

// TelemetryConfig turns on OpenTelemetry tracing; empty OTLPEndpoint means a no-op
// tracer provider.
type TelemetryConfig struct {
	OTLPEndpoint string `yaml:"otlp_endpoint"` // host:port (plain HTTP) or an http(s):// URL of an OTLP/HTTP receiver, e.g. localhost:4318
	ServiceName  string `yaml:"service_name"`
	// CaptureContent adds prompts and answers to the GenAI spans
	// (gen_ai.input.messages, gen_ai.output.messages). Off by default, as the
	// OpenTelemetry GenAI conventions advise: they hold user text.
	CaptureContent bool `yaml:"capture_content"`
	// MaxContentBytes caps each captured content attribute (bytes of JSON);
	// longer content is cut to valid JSON, each text ending in a marker with
	// its original length. Media parts are shown by type, size and hash only.
	MaxContentBytes int `yaml:"max_content_bytes"`
}

// envOverrides are the environment variables that override the file; empty ones
// are ignored.
type envOverrides struct {
	Addr          string `env:"CONDUCTOR_SHADOW_ADDR"`
	DataDir       string `env:"CONDUCTOR_SHADOW_DATA"`
	ClickHouseDSN string `env:"CONDUCTOR_SHADOW_CLICKHOUSE_DSN"`
	Cluster       string `env:"CONDUCTOR_SHADOW_CLICKHOUSE_CLUSTER"` // store.cluster
	ConsoleDSN    string `env:"CONDUCTOR_SHADOW_CONSOLE_DSN"`        // store.console_dsn: the SQL console's read-only user
	PoolURL       string `env:"CONDUCTOR_SHADOW_POOL_URL"`           // base URL of every worker, e.g. http://127.0.0.1:9090/v1
	OTLPEndpoint  string `env:"CONDUCTOR_SHADOW_OTLP_ENDPOINT"`
}

// NewDefaultConfig is the offline default: embedded store in ./data, the simulated
// worker pool on 127.0.0.1:9090, the conductor as the candidate and gpt-5 alone as
// the incumbent of suite runs.
func NewDefaultConfig() Config {
	return Config{
		Server: ServerConfig{Addr: "127.0.0.1:8080", APITokenEnv: "CONDUCTOR_SHADOW_API_TOKEN", ShutdownTimeout: 30 * time.Second, Role: RoleAll,
			ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, IdleTimeout: 2 * time.Minute,
			Isolate: true, ShadowNice: 10, HandoffBuffer: 4096},
		Store:     store.NewDefaultConfig(),
		Writer:    store.NewDefaultWriterConfig(),
		Ingest:    ingest.NewDefaultConfig(),
		Shadow:    shadow.NewDefaultConfig(),
		Pipelines: PipelinesConfig{Incumbent: "gpt-5", Candidates: []string{"conductor"}},
		Suite:     SuiteConfig{Set: "regression-sets/gsm8k-150.jsonl", ReportDir: "reports", Concurrency: 32, ShiftWindow: 7 * 24 * time.Hour, Judge: judge.NewDefaultConfig(), Code: eval.NewDefaultCodeConfig()},
		Schedules: schedule.NewDefaultConfig(),
		Web:       web.NewDefaultConfig(),
		Telemetry: TelemetryConfig{ServiceName: "conductor-shadow", MaxContentBytes: shadow.DefaultMaxContentBytes},
		Notify:    notify.NewDefaultConfig(),
		Judge:     JudgeConfig{Live: livejudge.NewDefaultConfig()},
	}
}

// LoadConfig reads path (empty: defaults only) over the defaults, applies the
// environment overrides, then overrides in order (the command line's flags), and
// validates the result last, so a flag can fix a bad value of the file.
// environ maps variable names to values (env.ToMap(os.Environ()) in main).
func LoadConfig(path string, environ map[string]string, overrides ...func(*Config)) (Config, error) {
	cfg := NewDefaultConfig()
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return cfg, fmt.Errorf("config: %w", err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
			return cfg, fmt.Errorf("config: %s: %w", path, err)
		}
	}
	var ov envOverrides
	if err := env.ParseWithOptions(&ov, env.Options{Environment: environ}); err != nil {
		return cfg, fmt.Errorf("config: environment: %w", err)
	}
	cfg.applyOverrides(ov)
	for _, o := range overrides {
		o(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	return cfg, nil
}

func (c *Config) applyOverrides(ov envOverrides) {
	if ov.Addr != "" {
		c.Server.Addr = ov.Addr
	}
	if ov.DataDir != "" {
		c.Store.Path = ov.DataDir
	}
	if ov.ClickHouseDSN != "" {
		c.Store.DSN = ov.ClickHouseDSN
	}
	if ov.Cluster != "" {
		c.Store.Cluster = ov.Cluster
	}
	if ov.ConsoleDSN != "" {
		c.Store.ConsoleDSN = ov.ConsoleDSN
	}
	if ov.PoolURL != "" {
		for i := range c.Shadow.Workers {
			c.Shadow.Workers[i].BaseURL = ov.PoolURL
		}
	}
	if ov.OTLPEndpoint != "" {
		c.Telemetry.OTLPEndpoint = ov.OTLPEndpoint
	}
}

// Validate checks every section and the references between them.
func (c Config) Validate() error {
	var errs []error
	if _, _, err := net.SplitHostPort(c.Server.Addr); err != nil {
		errs = append(errs, fmt.Errorf("config: server.addr %q: want host:port", c.Server.Addr))
	}
	if err := guard.ValidateAllowedHosts(c.Server.AllowedHosts); err != nil {
		errs = append(errs, err)
	}
	for _, d := range []struct {
		key string
		v   time.Duration
	}{{"shutdown_timeout", c.Server.ShutdownTimeout}, {"read_header_timeout", c.Server.ReadHeaderTimeout},
		{"read_timeout", c.Server.ReadTimeout}, {"idle_timeout", c.Server.IdleTimeout}} {
		if d.v <= 0 {
			errs = append(errs, fmt.Errorf("config: server.%s must be > 0, got %v", d.key, d.v))
		}
	}
	if c.Telemetry.MaxContentBytes < 1024 {
		errs = append(errs, fmt.Errorf("config: telemetry.max_content_bytes must be at least 1024, got %d", c.Telemetry.MaxContentBytes))
	}
	if c.Server.ShadowNice < 0 || c.Server.ShadowNice > 19 {
		errs = append(errs, fmt.Errorf("config: server.shadow_nice must be 0–19, got %d", c.Server.ShadowNice))
	}
	if c.Server.HandoffBuffer < 1 {
		errs = append(errs, fmt.Errorf("config: server.handoff_buffer must be ≥ 1, got %d", c.Server.HandoffBuffer))
	}
	switch c.Server.Role {
	case RoleAll:
	case RoleTap, RoleShadow:
		if !c.Ingest.Kafka.Enabled() {
			errs = append(errs, fmt.Errorf("config: server.role %q needs ingest.kafka.brokers (or --kafka-brokers): the tap and the shadow workers meet on a Kafka topic", c.Server.Role))
		}
	default:
		errs = append(errs, fmt.Errorf("config: server.role %q: want %q, %q or %q", c.Server.Role, RoleAll, RoleTap, RoleShadow))
	}
	for _, err := range []error{c.Store.Validate(), c.Writer.Validate(), c.Ingest.Validate(), c.Shadow.Validate(), c.Web.Validate(), c.Notify.Validate()} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if _, ok := c.Shadow.Worker(c.Pipelines.Incumbent); !ok {
		errs = append(errs, fmt.Errorf("config: pipelines.incumbent %q is not a worker in shadow.workers", c.Pipelines.Incumbent))
	}
	for i, name := range c.Pipelines.Candidates {
		cc, err := shadow.ParseCandidate(name)
		if err == nil {
			err = cc.CheckWorkers(c.Shadow)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("config: pipelines.candidates[%d] %q: %w", i, name, err))
		}
	}
	if err := shadow.ValidateCandidates(c.Pipelines.CandidatePipelines, c.Pipelines.Candidates...); err != nil {
		errs = append(errs, fmt.Errorf("config: pipelines: %w", err))
	}
	if c.Suite.ShiftWindow < 0 {
		errs = append(errs, fmt.Errorf("config: suite.shift_window must not be negative, got %v", c.Suite.ShiftWindow))
	}
	if c.Suite.Concurrency < 1 {
		errs = append(errs, fmt.Errorf("config: suite.concurrency must be at least 1, got %d", c.Suite.Concurrency))
	}
	if c.Suite.Policy != "" {
		if _, err := gate.Load(c.Suite.Policy); err != nil {
			errs = append(errs, fmt.Errorf("config: suite.policy: %w", err))
		}
	}
	if err := c.Suite.Judge.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("config: suite.%w", err))
	} else if _, ok := c.Shadow.Worker(c.Suite.Judge.Worker); !ok {
		errs = append(errs, fmt.Errorf("config: suite.judge.worker %q names no worker in shadow.workers", c.Suite.Judge.Worker))
	}
	if err := c.Judge.Live.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("config: %w", err))
	} else if _, ok := c.Shadow.Worker(c.LiveJudgeWorker()); c.Judge.Live.Enabled() && !ok {
		errs = append(errs, fmt.Errorf("config: judge.live.worker %q names no worker in shadow.workers", c.LiveJudgeWorker()))
	}
	if err := c.Suite.Code.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("config: suite.%w", err))
	}
	if err := c.Schedules.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("config: %w", err))
	}
	return errors.Join(errs...)
}
