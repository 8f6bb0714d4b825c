package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/conductor-shadow/conductor-shadow/shadow"
)

// Shed reasons, counted in Stats.Dropped when a copy is turned away before it is
// queued because production is under pressure.
const (
	ShedLatency = "shed_latency" // the proxy's own added latency or the Go scheduler's delay rose
	ShedCPU     = "shed_cpu"     // the machine's CPU was busier than admission.max_cpu
)

// AdmissionConfig sets the adaptive limit on concurrent shadow runs. The limit
// follows additive-increase / multiplicative-decrease (AIMD, the TCP congestion
// control rule of Jacobson 1988, as in Netflix's concurrency-limits "AIMDLimit"):
// every Interval it grows by one while production is healthy and the runs use at
// least half of it, and is multiplied by BackoffRatio when production shows
// pressure. While under pressure, copies offered by the mirroring proxy are shed
// (counted as shed_latency or shed_cpu) once enough work is queued to keep the
// allowed runs busy.
type AdmissionConfig struct {
	// Enabled turns the adaptive limit and shedding on; off, shadow runs are bounded
	// by ingest.workers alone.
	Enabled bool `yaml:"enabled"`
	// InitialLimit, MinLimit and MaxLimit bound the number of shadow runs executing
	// at once (MaxLimit above ingest.workers has no effect).
	InitialLimit int `yaml:"initial_limit"`
	MinLimit     int `yaml:"min_limit"`
	MaxLimit     int `yaml:"max_limit"`
	// Interval is how often the pressure signals are read and the limit adjusted.
	Interval time.Duration `yaml:"interval"`
	// BackoffRatio multiplies the limit under pressure (0 < ratio < 1).
	BackoffRatio float64 `yaml:"backoff_ratio"`
	// MaxAddedLatency is the proxy's own added latency (from receiving a request to
	// having written it to the incumbent) that at most 5% of an interval's
	// requests may exceed (that is, its p95); 0 turns this signal off.
	MaxAddedLatency time.Duration `yaml:"max_added_latency"`
	// MaxSchedLatency is the p99 of the Go scheduler's delay (runnable goroutines
	// waiting for a CPU, runtime/metrics /sched/latencies:seconds) over an
	// interval; 0 turns this signal off.
	MaxSchedLatency time.Duration `yaml:"max_sched_latency"`
	// MaxCPU is the machine's busy CPU fraction (0–1, from /proc/stat; Linux only)
	// over an interval; 0 turns this signal off.
	MaxCPU float64 `yaml:"max_cpu"`
	// MinOwnCPU is the share of the machine's CPU (0–1) this process must use
	// over an interval for the scheduler and CPU signals to count: below it
	// they only say the machine is shared with other work, and backing off
	// would not relieve it (at one request at a time the process uses ~1%).
	// The proxy's added latency always counts. 0: they always count. From
	// /proc/self/stat and /proc/stat (Linux only; elsewhere they always count).
	MinOwnCPU float64 `yaml:"min_own_cpu"`
}

// NewDefaultAdmissionConfig returns the limit on, starting at 16 runs, between 1
// and 128, adjusted every 100 ms, halved under pressure; pressure is a proxy p95
// added latency above 1 ms, or, while this process uses at least 20% of the
// machine's CPU, a scheduler p99 delay above 2 ms or the CPU above 90%.
func NewDefaultAdmissionConfig() AdmissionConfig {
	return AdmissionConfig{
		Enabled: true, InitialLimit: 16, MinLimit: 1, MaxLimit: 128,
		Interval: 100 * time.Millisecond, BackoffRatio: 0.5,
		MaxAddedLatency: time.Millisecond, MaxSchedLatency: 2 * time.Millisecond, MaxCPU: 0.9, MinOwnCPU: 0.2,
	}
}

// Validate reports every invalid field at once.
func (c AdmissionConfig) Validate() error {
	if !c.Enabled {
		return nil
	}
	var errs []error
	if c.MinLimit < 1 {
		errs = append(errs, fmt.Errorf("ingest: admission.min_limit must be at least 1, got %d", c.MinLimit))
	}
	if c.MaxLimit < c.MinLimit {
		errs = append(errs, fmt.Errorf("ingest: admission.max_limit (%d) must be at least min_limit (%d)", c.MaxLimit, c.MinLimit))
	}
	if c.InitialLimit < c.MinLimit || c.InitialLimit > c.MaxLimit {
		errs = append(errs, fmt.Errorf("ingest: admission.initial_limit %d must be between min_limit and max_limit", c.InitialLimit))
	}
	if c.Interval < time.Millisecond {
		errs = append(errs, fmt.Errorf("ingest: admission.interval must be at least 1ms, got %s", c.Interval))
	}
	if c.BackoffRatio <= 0 || c.BackoffRatio >= 1 {
		errs = append(errs, fmt.Errorf("ingest: admission.backoff_ratio must be between 0 and 1 (exclusive), got %v", c.BackoffRatio))
	}
	if c.MaxAddedLatency < 0 || c.MaxSchedLatency < 0 {
		errs = append(errs, errors.New("ingest: admission.max_added_latency and max_sched_latency must not be negative"))
	}
	if c.MaxCPU < 0 || c.MaxCPU > 1 {
		errs = append(errs, fmt.Errorf("ingest: admission.max_cpu must be between 0 and 1, got %v", c.MaxCPU))
	}
	if c.MinOwnCPU < 0 || c.MinOwnCPU > 1 {
		errs = append(errs, fmt.Errorf("ingest: admission.min_own_cpu must be between 0 and 1, got %v", c.MinOwnCPU))
	}
	return errors.Join(errs...)
}

// Pressure is one interval's reading of production's health.
type Pressure struct {
	SlowShare  float64 // share of the interval's proxied requests above max_added_latency (0–1)
	SchedP99Ms float64 // Go scheduler delay p99, ms
	CPU        float64 // machine CPU busy fraction, 0–1 (-1: unknown)
	// OwnCPU is this process's share of the machine's CPU, 0–1 (-1: unknown);
	// below min_own_cpu the scheduler and CPU signals are not counted.
	OwnCPU float64
	// Shared: the scheduler or CPU signal was over its bound but not counted,
	// since this process used less than min_own_cpu (the machine is shared).
	Shared bool
	Reason string // ShedLatency, ShedCPU or "" when healthy
}

// AdmissionSnapshot is the controller's state, as served by GET /api/stats.
type AdmissionSnapshot struct {
	Limit    int      `json:"limit"`    // shadow runs allowed at once now
	InFlight int      `json:"inflight"` // shadow runs executing now
	Waiting  int      `json:"waiting"`  // shadow workers waiting for a slot
	Pressure Pressure `json:"pressure"` // the last interval's reading
}

// Admission is the adaptive limit on shadow runs and the shedding of copies that
// go with it. Production's side (ObserveAdded, Shedding) only touches atomics, so
// the forwarding path never waits on a lock the shadow side holds. Start runs the
// adjusting loop; Shutdown stops it (safe without Start and twice).
type Admission struct {
	cfg   AdmissionConfig
	stats *Stats
	log   *slog.Logger

	// Production side: lock-free.
	observed atomic.Int64 // requests seen by the proxy this interval
	slow     atomic.Int64 // of which slower than MaxAddedLatency
	reason   atomic.Value // string: the last interval's shed reason, "" when healthy
	limitNow atomic.Int64

	// Shadow side.
	mu       sync.Mutex
	limit    int
	inflight int
	peak     int // most runs in flight during this interval
	waiters  []chan struct{}
	pressure Pressure

	sched   *schedReader
	cpu     *cpuReader
	own     *ownCPUReader // nil: the machine signals always count
	lastLog time.Time     // of the pressure log line, at most one per 10 s

	lifeMu  sync.Mutex
	started bool
	stop    context.CancelFunc
	done    chan struct{}
}

// NewAdmission returns a controller counting shed copies into stats.
func NewAdmission(cfg AdmissionConfig, stats *Stats, log *slog.Logger) (*Admission, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	a := &Admission{cfg: cfg, stats: stats, log: log, limit: cfg.InitialLimit}
	if !cfg.Enabled {
		a.limit = math.MaxInt32
	}
	a.limitNow.Store(int64(a.limit))
	a.reason.Store("")
	if cfg.Enabled && cfg.MaxSchedLatency > 0 {
		a.sched = newSchedReader()
	}
	if cfg.Enabled && cfg.MaxCPU > 0 {
		a.cpu = newCPUReader("/proc/stat")
	}
	if cfg.Enabled && cfg.MinOwnCPU > 0 && (a.sched != nil || a.cpu != nil) {
		a.own = newOwnCPUReader("/proc/self/stat", "/proc/stat")
	}
	return a, nil
}

// Start launches the loop that reads the signals every Interval.
func (a *Admission) Start(context.Context) error {
	a.lifeMu.Lock()
	defer a.lifeMu.Unlock()
	if a.started {
		return errors.New("ingest: admission already started")
	}
	a.started = true
	if !a.cfg.Enabled {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	a.stop, a.done = cancel, make(chan struct{})
	go func() {
		defer close(a.done)
		t := time.NewTicker(a.cfg.Interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				a.adjust(a.read())
			}
		}
	}()
	return nil
}

// Shutdown stops the adjusting loop; the limit stays where it is. Shut the
// processor down first: its workers may be waiting for a slot.
func (a *Admission) Shutdown(context.Context) error {
	a.lifeMu.Lock()
	defer a.lifeMu.Unlock()
	if a.stop != nil {
		a.stop()
		<-a.done
		a.stop = nil
	}
	return nil
}

// ObserveAdded records the proxy's own added latency for one request. Lock-free.
func (a *Admission) ObserveAdded(d time.Duration) {
	if a == nil || a.cfg.MaxAddedLatency <= 0 {
		return
	}
	a.observed.Add(1)
	if d > a.cfg.MaxAddedLatency {
		a.slow.Add(1)
	}
}

// Shedding reports whether a copy offered now should be shed, and why: production
// was under pressure in the last interval and backlog (copies already waiting)
// is enough to keep the allowed runs busy. Lock-free.
func (a *Admission) Shedding(backlog int) (reason string, shed bool) {
	if a == nil || !a.cfg.Enabled {
		return "", false
	}
	r, _ := a.reason.Load().(string)
	if r == "" || int64(backlog) < a.limitNow.Load() {
		return "", false
	}
	return r, true
}

// read takes one interval's signals.
func (a *Admission) read() Pressure {
	p := Pressure{CPU: -1, OwnCPU: -1}
	machine := true // the scheduler and CPU signals count
	if a.own != nil {
		if share, ok := a.own.share(); ok {
			p.OwnCPU, machine = share, share >= a.cfg.MinOwnCPU
		}
	}
	if n := a.observed.Swap(0); n > 0 {
		slow := a.slow.Swap(0)
		// p95 above the threshold: more than 5% were slower.
		p.SlowShare = float64(slow) / float64(n)
		if p.SlowShare > 0.05 {
			p.Reason = ShedLatency
		}
	}
	if a.sched != nil {
		p.SchedP99Ms = a.sched.p99().Seconds() * 1000
		if p.Reason == "" && p.SchedP99Ms > float64(a.cfg.MaxSchedLatency.Microseconds())/1000 {
			if machine {
				p.Reason = ShedLatency
			} else {
				p.Shared = true
			}
		}
	}
	if a.cpu != nil {
		if busy, ok := a.cpu.busy(); ok {
			p.CPU = busy
			if p.Reason == "" && busy > a.cfg.MaxCPU {
				if machine {
					p.Reason = ShedCPU
				} else {
					p.Shared = true
				}
			}
		}
	}
	return p
}

// adjust applies AIMD to the limit given one interval's pressure.
func (a *Admission) adjust(p Pressure) {
	a.mu.Lock()
	prev := a.limit
	switch {
	case p.Reason != "":
		a.limit = max(a.cfg.MinLimit, int(float64(a.limit)*a.cfg.BackoffRatio))
	case a.peak*2 >= a.limit:
		// Grow only when the limit is what bounds the runs (in use at least half).
		a.limit = min(a.cfg.MaxLimit, a.limit+1)
	}
	a.peak = a.inflight
	a.pressure = p
	a.limitNow.Store(int64(a.limit))
	a.grantLocked()
	a.mu.Unlock()
	prevReason, _ := a.reason.Swap(p.Reason).(string)
	if p.Reason != "" && prevReason == "" && time.Since(a.lastLog) >= 10*time.Second {
		a.lastLog = time.Now()
		a.log.Info("admission: production under pressure, shadow runs backing off", "reason", p.Reason, "limit", a.limit, "from", prev,
			"slow_share", p.SlowShare, "sched_p99_ms", p.SchedP99Ms, "cpu", p.CPU)
	}
}

// Acquire waits for a shadow-run slot; release returns it. It fails only when ctx
// ends first.
func (a *Admission) Acquire(ctx context.Context) (release func(), err error) {
	a.mu.Lock()
	if a.inflight < a.limit {
		a.take()
		a.mu.Unlock()
		return a.release, nil
	}
	ch := make(chan struct{})
	a.waiters = append(a.waiters, ch)
	a.mu.Unlock()
	select {
	case <-ch:
		return a.release, nil
	case <-ctx.Done():
		a.mu.Lock()
		for i, w := range a.waiters {
			if w == ch {
				a.waiters = append(a.waiters[:i], a.waiters[i+1:]...)
				a.mu.Unlock()
				return nil, ctx.Err()
			}
		}
		a.mu.Unlock()
		// Granted meanwhile: hand the slot back.
		a.release()
		return nil, ctx.Err()
	}
}

func (a *Admission) take() {
	a.inflight++
	a.peak = max(a.peak, a.inflight)
}

func (a *Admission) release() {
	a.mu.Lock()
	a.inflight--
	a.grantLocked()
	a.mu.Unlock()
}

// grantLocked wakes waiters while slots are free.
func (a *Admission) grantLocked() {
	for len(a.waiters) > 0 && a.inflight < a.limit {
		ch := a.waiters[0]
		a.waiters = a.waiters[1:]
		a.take()
		close(ch)
	}
}

// Snapshot returns the limit, the runs in flight and the last pressure reading.
func (a *Admission) Snapshot() AdmissionSnapshot {
	a.mu.Lock()
	defer a.mu.Unlock()
	return AdmissionSnapshot{Limit: a.limit, InFlight: a.inflight, Waiting: len(a.waiters), Pressure: a.pressure}
}

// Pipeline wraps p so every run first takes a slot of the limit. A run whose
// context ends while it waits still calls p (with the ended context), so the
// caller sees the same result a cancelled run gives.
func (a *Admission) Pipeline(p shadow.Pipeline) shadow.Pipeline {
	return admittedPipeline{Pipeline: p, a: a}
}

type admittedPipeline struct {
	shadow.Pipeline
	a *Admission
}

func (p admittedPipeline) Run(ctx context.Context, req shadow.Request, mode string) shadow.Result {
	release, err := p.a.Acquire(ctx)
	if err != nil {
		return p.Pipeline.Run(ctx, req, mode)
	}
	defer release()
	return p.Pipeline.Run(ctx, req, mode)
}

// Offerer wraps next so a copy is shed (answered 503 "dropped", counted by
// reason) while Shedding says so; backlog reports how many copies wait. When next
// also hands copies over without waiting for them to be durable (*Tap's Mirror),
// so does the wrapper: the mirroring proxy's capture workers then never wait for a
// store commit, so the hand-off stays O(1) per copy.
func (a *Admission) Offerer(next Offerer, backlog func() int) Offerer {
	o := admittedOfferer{next: next, a: a, backlog: backlog}
	if m, ok := next.(mirrorer); ok {
		return admittedMirrorer{admittedOfferer: o, m: m}
	}
	return o
}

// admittedMirrorer is admittedOfferer over a next that can Mirror.
type admittedMirrorer struct {
	admittedOfferer
	m mirrorer
}

// Mirror sheds like Offer, else hands ex to next's Mirror without waiting.
func (o admittedMirrorer) Mirror(ex Exchange) (int, TapResponse) {
	if code, resp, shed := o.shed(ex); shed {
		return code, resp
	}
	return o.m.Mirror(ex)
}

// recorder keeps an exchange that is not shadowed; *Tap is one (Tap.Record).
type recorder interface {
	Record(ex Exchange, notShadowed string)
}

// shed turns ex away from shadowing while Shedding says so: counted by
// reason, and recorded when next records (the exchange still leaves a row,
// its not_shadowed the reason).
func (o admittedOfferer) shed(ex Exchange) (int, TapResponse, bool) {
	reason, shed := o.a.Shedding(o.backlog())
	if !shed {
		return 0, TapResponse{}, false
	}
	o.a.stats.drop(reason)
	if r, ok := o.next.(recorder); ok {
		r.Record(ex, reason)
	}
	return http.StatusServiceUnavailable, TapResponse{Status: "dropped", RequestID: ex.RequestID, Reason: reason}, true
}

type admittedOfferer struct {
	next    Offerer
	a       *Admission
	backlog func() int
}

func (o admittedOfferer) Offer(ctx context.Context, ex Exchange) (int, TapResponse) {
	if code, resp, shed := o.shed(ex); shed {
		return code, resp
	}
	return o.next.Offer(ctx, ex)
}

// schedReader turns the cumulative /sched/latencies:seconds histogram into the
// p99 of each interval.
type schedReader struct {
	sample []metrics.Sample
	prev   []uint64
}

func newSchedReader() *schedReader {
	r := &schedReader{sample: []metrics.Sample{{Name: "/sched/latencies:seconds"}}}
	metrics.Read(r.sample)
	if h := r.histogram(); h != nil {
		r.prev = append([]uint64(nil), h.Counts...)
	}
	return r
}

func (r *schedReader) histogram() *metrics.Float64Histogram {
	if r.sample[0].Value.Kind() != metrics.KindFloat64Histogram {
		return nil
	}
	return r.sample[0].Value.Float64Histogram()
}

// p99 of the delays since the last call: the upper bound of the bucket holding
// the 99th percentile (0 when nothing was scheduled).
func (r *schedReader) p99() time.Duration {
	metrics.Read(r.sample)
	h := r.histogram()
	if h == nil {
		return 0
	}
	delta := make([]uint64, len(h.Counts))
	var total uint64
	for i, c := range h.Counts {
		if i < len(r.prev) {
			delta[i] = c - r.prev[i]
		} else {
			delta[i] = c
		}
		total += delta[i]
	}
	r.prev = append(r.prev[:0], h.Counts...)
	if total == 0 {
		return 0
	}
	return bucketQuantile(delta, h.Buckets, total, 0.99)
}

// bucketQuantile returns the upper bound (seconds, as a Duration) of the bucket
// where the q-quantile of counts falls; an infinite bound gives the lower one.
func bucketQuantile(counts []uint64, bounds []float64, total uint64, q float64) time.Duration {
	want := uint64(math.Ceil(q * float64(total)))
	var seen uint64
	for i, c := range counts {
		seen += c
		if seen >= want {
			hi := bounds[i+1]
			if math.IsInf(hi, 1) {
				hi = bounds[i]
			}
			return time.Duration(hi * float64(time.Second))
		}
	}
	return 0
}

// cpuReader reads the machine's busy fraction between calls from /proc/stat.
type cpuReader struct {
	path              string
	prevBusy, prevAll uint64
	ok                bool
}

func newCPUReader(path string) *cpuReader {
	r := &cpuReader{path: path}
	r.prevBusy, r.prevAll, r.ok = readProcStat(path)
	return r
}

func (r *cpuReader) busy() (float64, bool) {
	b, all, ok := readProcStat(r.path)
	share, known := tickShare(b, all, r.prevBusy, r.prevAll, ok && r.ok)
	r.prevBusy, r.prevAll, r.ok = b, all, ok
	return share, known
}

// tickShare is (part − prevPart) / (all − prevAll) between two readings of
// clock ticks; false when either reading failed or no tick passed.
func tickShare(part, all, prevPart, prevAll uint64, ok bool) (float64, bool) {
	if !ok || all == prevAll {
		return 0, false
	}
	return float64(part-prevPart) / float64(all-prevAll), true
}

// ownCPUReader reads this process's share of the machine's CPU between
// calls: its user and system ticks (/proc/self/stat) over every CPU's ticks
// (/proc/stat).
type ownCPUReader struct {
	self, stat       string
	prevOwn, prevAll uint64
	ok               bool
}

func newOwnCPUReader(self, stat string) *ownCPUReader {
	r := &ownCPUReader{self: self, stat: stat}
	r.prevOwn, r.prevAll, r.ok = r.read()
	return r
}

func (r *ownCPUReader) read() (own, all uint64, ok bool) {
	own, ok = readProcSelfTicks(r.self)
	if !ok {
		return 0, 0, false
	}
	_, all, ok = readProcStat(r.stat)
	return own, all, ok
}

func (r *ownCPUReader) share() (float64, bool) {
	own, all, ok := r.read()
	share, known := tickShare(own, all, r.prevOwn, r.prevAll, ok && r.ok)
	r.prevOwn, r.prevAll, r.ok = own, all, ok
	return share, known
}

// readProcSelfTicks parses utime and stime (fields 14 and 15, clock ticks)
// of a /proc/<pid>/stat file; the command name before them may hold spaces
// and parentheses, so fields are counted after its last ')'.
func readProcSelfTicks(path string) (uint64, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(data[i+1:])) // from field 3 (state)
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	s, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return u + s, true
}

// readProcStat parses the "cpu" line of /proc/stat: busy is everything but idle
// and iowait, in clock ticks.
func readProcStat(path string) (busy, all uint64, ok bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, false
	}
	line, _, _ := strings.Cut(string(data), "\n")
	fields := strings.Fields(line)
	if len(fields) < 5 || fields[0] != "cpu" {
		return 0, 0, false
	}
	for i, f := range fields[1:] {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		if i >= 8 { // guest and guest_nice are already inside user and nice
			break
		}
		all += v
		if i != 3 && i != 4 { // idle, iowait
			busy += v
		}
	}
	return busy, all, true
}
