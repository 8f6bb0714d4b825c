package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/conductor-shadow/conductor-shadow/cmd/internal/platform"
	"github.com/conductor-shadow/conductor-shadow/eval"
	"github.com/conductor-shadow/conductor-shadow/eval/gate"
	"github.com/conductor-shadow/conductor-shadow/eval/notify"
	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/store/dataflow"
)

// notifyUnit is serve's verdict notifications (eval/notify, section
// notify): every finished suite run's verdicts and, every
// notify.live_interval, the live verdicts go to the notifier, which sends
// their changes to the webhook and by e-mail. It runs in the all-in-one
// role only, like the schedules: several shadow workers would each send the
// same change. A nil unit (no sink configured, or another role) does
// nothing.
type notifyUnit struct {
	n        *notify.Notifier
	versions map[string]string // candidate pipeline → version
}

// newNotify builds the notifier of cfg.Notify over the store's roles, reading
// its secrets from the environment (before serve scrubs them), and registers
// its counters on reg; its deliveries are counted in flows (the record of
// data flows); Start starts it. It returns nil without a sink or
// outside the all-in-one role.
func newNotify(cfg platform.Config, roles store.Roles, pipes *platform.Pipelines, reg prometheus.Registerer, log *slog.Logger, flows *dataflow.Meter) (*notifyUnit, error) {
	if !cfg.Notify.Enabled() || cfg.Server.Role != platform.RoleAll {
		return nil, nil
	}
	state := roles.VerdictNotices
	if state == nil {
		return nil, fmt.Errorf("notify: %w", store.NotSupported("store.VerdictNotices"))
	}
	u := &notifyUnit{versions: map[string]string{}}
	for _, c := range pipes.Candidates {
		u.versions[c.Name()] = c.Version()
	}
	opts := []notify.Option{notify.WithLogger(log), notify.WithEnv(os.Getenv), notify.WithFlowMeter(flows)}
	if cfg.Notify.LiveInterval > 0 {
		lr := roles.LiveReader
		if lr == nil {
			return nil, fmt.Errorf("notify: live verdicts: %w", store.NotSupported("store.LiveReader"))
		}
		policy := gate.NewDefaultPolicy()
		var err error
		if cfg.Suite.Policy != "" {
			if policy, err = gate.Load(cfg.Suite.Policy); err != nil {
				return nil, fmt.Errorf("notify: %w", err)
			}
		}
		opts = append(opts, notify.WithLive(notify.LiveVerdictsFunc(lr, policy, u.versions)))
	}
	n, err := notify.New(cfg.Notify, state, opts...)
	if err != nil {
		return nil, err
	}
	u.n = n
	if err := reg.Register(notifyCollector{u.n}); err != nil {
		return nil, fmt.Errorf("notify: metrics: %w", err)
	}
	return u, nil
}

// Start starts the notifier.
func (u *notifyUnit) Start(ctx context.Context, _ *host) error { return u.n.Start(ctx) }

func (u *notifyUnit) version(candidate string) string { return u.versions[candidate] }

// suiteDone hands a finished suite run's verdicts to the notifier; it never
// waits (notify.Notifier.Offer).
func (u *notifyUnit) suiteDone(rep *eval.Report) {
	if u == nil {
		return
	}
	u.n.Offer(notify.SuiteStates(rep, u.version)...)
}

// readyDetail is the notifications' part of /readyz's detail: never a
// reason to be unready.
func (u *notifyUnit) readyDetail() map[string]string {
	if u == nil {
		return nil
	}
	return u.n.Stats().Detail()
}

// Shutdown stops the notifier; undelivered notices stay pending for the
// next start. Safe on a nil unit and twice.
func (u *notifyUnit) Shutdown(ctx context.Context) error {
	if u == nil {
		return nil
	}
	return u.n.Shutdown(ctx)
}

var (
	descNotifyOffered = prometheus.NewDesc("conductor_shadow_notify_verdicts_offered_total",
		"Verdicts handed to the notifier (finished suite runs, live verdict reads).", nil, nil)
	descNotifyDropped = prometheus.NewDesc("conductor_shadow_notify_verdicts_dropped_total",
		"Verdicts lost before change detection, by reason (outbox_full, stopped, invalid).", []string{"reason"}, nil)
	descNotifyNotices = prometheus.NewDesc("conductor_shadow_notify_notices_total",
		"Verdict-change notices by sink and outcome: decided (a change), sent, failed (refused or retries exhausted), "+
			"dropped (the sink's queue was full), left_pending (undelivered at a stop, sent at the next start).", []string{"sink", "outcome"}, nil)
	descNotifyRetries = prometheus.NewDesc("conductor_shadow_notify_retries_total",
		"Notice delivery attempts beyond the first, by sink.", []string{"sink"}, nil)
	descNotifyPending = prometheus.NewDesc("conductor_shadow_notify_pending",
		"Notices queued or being delivered now, by sink.", []string{"sink"}, nil)
	descNotifyStateFailures = prometheus.NewDesc("conductor_shadow_notify_state_write_failures_total",
		"Failed writes of the notified state (verdict_notices): a restart may send those notices again or miss them.", nil, nil)
	descNotifyLiveFailures = prometheus.NewDesc("conductor_shadow_notify_live_read_failures_total",
		"Live verdict reads of the notifier that failed.", nil, nil)
)

// notifyCollector turns the notifier's Stats into Prometheus samples.
type notifyCollector struct{ n *notify.Notifier }

func (notifyCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descNotifyOffered, descNotifyDropped, descNotifyNotices, descNotifyRetries,
		descNotifyPending, descNotifyStateFailures, descNotifyLiveFailures} {
		ch <- d
	}
}

func (c notifyCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.n.Stats()
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	counter(descNotifyOffered, s.Offered)
	for _, r := range []string{notify.DropOutboxFull, notify.DropStopped, notify.DropInvalid} {
		counter(descNotifyDropped, s.Dropped[r], r)
	}
	for sink, ss := range s.Sinks {
		counter(descNotifyNotices, ss.Decided, sink, "decided")
		counter(descNotifyNotices, ss.Sent, sink, "sent")
		counter(descNotifyNotices, ss.Failed, sink, "failed")
		counter(descNotifyNotices, ss.Dropped, sink, "dropped")
		counter(descNotifyNotices, ss.LeftPending, sink, "left_pending")
		counter(descNotifyRetries, ss.Retries, sink)
		ch <- prometheus.MustNewConstMetric(descNotifyPending, prometheus.GaugeValue, float64(ss.Pending), sink)
	}
	counter(descNotifyStateFailures, s.StateWriteFailures)
	counter(descNotifyLiveFailures, s.LiveReadFailures)
}
