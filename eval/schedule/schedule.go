// Package schedule runs configured regression suites on cron schedules
// (robfig/cron, UTC) and reports runs missed while the process was down: the
// time of each schedule's last run is kept in a small JSON state file, and on
// Start every schedule whose next fire time has already passed is reported
// (log and Missed) and, with CatchUp, run once right away.
package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
)

// DefaultCron is the schedule of a suite that names none: Mondays 06:00 UTC.
const DefaultCron = "0 6 * * 1"

// Config is the schedules section of the service config.
type Config struct {
	// StateFile keeps each schedule's last run time (JSON). Default
	// "reports/schedules.json".
	StateFile string `yaml:"state_file"`
	// CatchUp runs a schedule once on Start when runs were missed. Default true.
	CatchUp bool `yaml:"catch_up"`
	// Suites are the scheduled suites; none by default.
	Suites []Suite `yaml:"suites"`
}

// Suite is one scheduled suite run.
type Suite struct {
	Name     string `yaml:"name"`      // unique; keys the state file
	Cron     string `yaml:"cron"`      // standard 5-field cron in UTC or a descriptor (@weekly); default DefaultCron
	Set      string `yaml:"set"`       // regression-set JSONL file
	Limit    int    `yaml:"limit"`     // first Limit cases; 0 = all
	Policy   string `yaml:"policy"`    // gate policy YAML; "" = the suite default
	NoiseRun bool   `yaml:"noise_run"` // also run the incumbent a second time (A′)
}

// NewDefaultConfig returns StateFile "reports/schedules.json", CatchUp true and
// no suites.
func NewDefaultConfig() Config {
	return Config{StateFile: "reports/schedules.json", CatchUp: true, Suites: []Suite{}}
}

// Validate reports an empty state file with suites, unnamed, duplicate or
// set-less suites, a negative limit and unparsable cron specs.
func (c Config) Validate() error {
	var errs []error
	if len(c.Suites) > 0 && c.StateFile == "" {
		errs = append(errs, errors.New("schedules: state_file is required when suites are scheduled"))
	}
	seen := map[string]bool{}
	for i, s := range c.Suites {
		if s.Name == "" {
			errs = append(errs, fmt.Errorf("schedules: suites[%d]: name is required", i))
		} else if seen[s.Name] {
			errs = append(errs, fmt.Errorf("schedules: suites[%d]: name %q used twice", i, s.Name))
		}
		seen[s.Name] = true
		if s.Set == "" {
			errs = append(errs, fmt.Errorf("schedules: suites[%d] %q: set is required", i, s.Name))
		}
		if s.Limit < 0 {
			errs = append(errs, fmt.Errorf("schedules: suites[%d] %q: limit must be >= 0, got %d", i, s.Name, s.Limit))
		}
		if _, err := cron.ParseStandard(s.cron()); err != nil {
			errs = append(errs, fmt.Errorf("schedules: suites[%d] %q: cron %q: %w", i, s.Name, s.cron(), err))
		}
	}
	return errors.Join(errs...)
}

func (s Suite) cron() string {
	if s.Cron == "" {
		return DefaultCron
	}
	return s.Cron
}

// RunFunc runs one scheduled suite (storing it and writing its report) and
// returns the suite run id.
type RunFunc func(ctx context.Context, s Suite) (suiteRunID string, err error)

// Missed is a schedule whose fire times passed while the process was down.
type Missed struct {
	Suite   string    `json:"suite"`
	Count   int       `json:"count"`    // fire times missed (capped at MaxMissed)
	First   time.Time `json:"first"`    // first missed fire time, UTC
	Last    time.Time `json:"last"`     // last missed fire time, UTC
	LastRun time.Time `json:"last_run"` // the last run before the downtime
}

// MaxMissed caps the missed fire times counted per schedule.
const MaxMissed = 10000

// Scheduler runs Config.Suites on their schedules. Start and Shutdown are
// safe to call without the other and more than once.
type Scheduler struct {
	cfg  Config
	run  RunFunc
	log  *slog.Logger
	now  func() time.Time
	cron *cron.Cron

	mu      sync.Mutex
	started bool
	stopped bool
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	missed  []Missed
	state   map[string]time.Time
	stateMu sync.Mutex // serialises state file writes
}

// New validates cfg and returns a Scheduler. log may be nil (discard).
func New(cfg Config, run RunFunc, log *slog.Logger) (*Scheduler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if run == nil {
		return nil, errors.New("schedules: nil run function")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Scheduler{cfg: cfg, run: run, log: log, now: time.Now}, nil
}

// Start reads the state file, reports missed runs (and with CatchUp runs each
// such suite once in the background), then schedules every suite. It returns
// an error when the state file cannot be read; after Shutdown it does nothing.
func (s *Scheduler) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.stopped || len(s.cfg.Suites) == 0 {
		return nil
	}
	state, err := readState(s.cfg.StateFile)
	if err != nil {
		return err
	}
	s.state = state
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel = cancel
	s.cron = cron.New(cron.WithLocation(time.UTC), cron.WithChain(cron.SkipIfStillRunning(cron.DiscardLogger)))
	now := s.now().UTC()
	var firstRun []Suite
	for _, su := range s.cfg.Suites {
		sched, _ := cron.ParseStandard(su.cron()) // validated
		s.cron.Schedule(sched, cron.FuncJob(func() { s.fire(runCtx, su) }))
		last, ok := s.lastRun(su.Name)
		if !ok {
			if err := s.record(su.Name, now); err != nil {
				cancel()
				return err
			}
			continue
		}
		if m, ok := missedRuns(sched, su.Name, last, now); ok {
			s.missed = append(s.missed, m)
			s.log.Warn("scheduled suite runs were missed while the service was down",
				"suite", su.Name, "missed", m.Count, "first", m.First, "last", m.Last, "last_run", last, "catch_up", s.cfg.CatchUp)
			if s.cfg.CatchUp {
				firstRun = append(firstRun, su)
			}
		}
	}
	for _, su := range firstRun {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.fire(runCtx, su)
		}()
	}
	s.cron.Start()
	s.started = true
	return nil
}

// missedRuns counts sched's fire times in (last, now].
func missedRuns(sched cron.Schedule, name string, last, now time.Time) (Missed, bool) {
	m := Missed{Suite: name, LastRun: last}
	for t := sched.Next(last); !t.After(now) && m.Count < MaxMissed; t = sched.Next(t) {
		if m.Count == 0 {
			m.First = t
		}
		m.Last = t
		m.Count++
	}
	return m, m.Count > 0
}

// fire runs one suite and records the run time, logging the outcome.
func (s *Scheduler) fire(ctx context.Context, su Suite) {
	if ctx.Err() != nil {
		return
	}
	start := s.now().UTC()
	id, err := s.run(ctx, su)
	switch {
	case err != nil && ctx.Err() != nil:
		// A stop (Shutdown) is not a failure: the suite run is stored as
		// cancelled and the schedule is not marked as run, so the next start
		// reports it missed.
		s.log.Warn("scheduled suite run cancelled", "suite", su.Name, "suite_run_id", id, "err", err)
		return
	case err != nil:
		s.log.Error("scheduled suite run failed", "suite", su.Name, "suite_run_id", id, "err", err)
	default:
		s.log.Info("scheduled suite run done", "suite", su.Name, "suite_run_id", id, "took", time.Since(start))
	}
	if err := s.record(su.Name, start); err != nil {
		s.log.Error("scheduled suite: state file not written", "suite", su.Name, "err", err)
	}
}

// Missed returns the schedules found missed at Start.
func (s *Scheduler) Missed() []Missed {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Missed(nil), s.missed...)
}

// Shutdown stops scheduling, cancels running suites and waits for them (or
// ctx). Later Starts do nothing.
func (s *Scheduler) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return nil
	}
	s.stopped = true
	started := s.started
	s.mu.Unlock()
	if !started {
		return nil
	}
	s.cancel()
	cronDone := s.cron.Stop()
	done := make(chan struct{})
	go func() {
		<-cronDone.Done()
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("schedules: shutdown: %w", ctx.Err())
	}
}

func (s *Scheduler) lastRun(name string) (time.Time, bool) {
	s.stateMu.Lock()
	defer s.stateMu.Unlock()
	t, ok := s.state[name]
	return t, ok
}

// record sets name's last run time and rewrites the state file atomically.
func (s *Scheduler) record(name string, t time.Time) error {
	s.stateMu.Lock()
	defer s.stateMu.Unlock()
	s.state[name] = t.UTC()
	return writeState(s.cfg.StateFile, s.state)
}

// readState reads {"<suite>": "<RFC 3339 time>", …}; a missing file is empty.
func readState(path string) (map[string]time.Time, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]time.Time{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("schedules: read state: %w", err)
	}
	st := map[string]time.Time{}
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("schedules: state file %s: %w", path, err)
	}
	return st, nil
}

func writeState(path string, st map[string]time.Time) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("schedules: encode state: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("schedules: write state: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("schedules: write state: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("schedules: write state: %w", err)
	}
	return nil
}
