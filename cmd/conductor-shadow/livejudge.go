package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/conductor-shadow/conductor-shadow/eval/judge"
	"github.com/conductor-shadow/conductor-shadow/eval/livejudge"
	"github.com/conductor-shadow/conductor-shadow/ingest"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// addLiveJudging adds live judging (judge.live) in front of the shadow
// workers when its share is set: the stage starts before them and stops
// after them (the workers hand it pairs until they stop), then flushes its
// evaluation events. Its sampling key is derived from the PII key, which
// every tap and worker of a deployment shares, so they draw alike.
func (s *server) addLiveJudging(proc *ingest.Processor, piiKey []byte) error {
	live := s.cfg.Judge.Live
	if !live.Enabled() {
		return nil
	}
	worker, ok := s.pipes.Pool.Worker(s.cfg.LiveJudgeWorker())
	if !ok {
		return fmt.Errorf("serve: live judging: judge worker %q is not in the pool", s.cfg.LiveJudgeWorker())
	}
	jcfg := s.cfg.Suite.Judge
	jcfg.Worker = worker.Name
	pj, err := judge.New(livejudge.CappedCaller(s.pipes.Pool, live.MaxOutputTokens), jcfg)
	if err != nil {
		return fmt.Errorf("serve: live judging: %w", err)
	}
	if s.roles.LiveJudgments == nil {
		return fmt.Errorf("serve: live judging: %w", store.NotSupported("store.LiveJudgmentReader"))
	}
	lp, err := newLoggerProvider(context.Background(), s.cfg.Telemetry, s.flows)
	if err != nil {
		return fmt.Errorf("serve: live judging: %w", err)
	}
	var events *livejudge.Events
	if lp != nil {
		events = livejudge.NewEvents(lp, s.cfg.Telemetry.CaptureContent)
	}
	mac := hmac.New(sha256.New, piiKey)
	mac.Write([]byte("conductor-shadow live judging sample"))
	stage, err := livejudge.New(live, livejudge.Deps{Judge: pj, Worker: worker, Key: mac.Sum(nil),
		Live: s.roles.LiveJudgments, Traces: s.roles.TraceReader, Events: events, Log: s.log})
	if err != nil {
		return fmt.Errorf("serve: live judging: %w", err)
	}
	if err := s.metrics.reg.Register(liveJudgeCollector{stage.Stats}); err != nil {
		return fmt.Errorf("serve: live judging metrics: %w", err)
	}
	s.live = stage
	proc.UsePairSink(stage)
	s.add("live judging", funcs(func(ctx context.Context, _ *host) error { return stage.Start(ctx) }, func(ctx context.Context) error {
		err := stage.Shutdown(ctx)
		if lp != nil {
			err = errors.Join(err, lp.Shutdown(ctx))
		}
		return err
	}))
	return nil
}

var (
	descLivePairs = prometheus.NewDesc("conductor_shadow_live_judge_pairs_total",
		"Live shadow pairs by live judging's decision: unsampled (draw above the share), paced (below the share, left out by budget pacing), "+
			"judged (the judge asked, both orders), decided (a run had no answer: decided without the judge), already_judged (a re-delivery), "+
			"candidate_skipped (the daily shadow cap skipped the candidate run), unjudged_budget, unjudged_queue_full, unjudged_stopped, unjudged_no_incumbent "+
			"(sampled, stored as unjudged).", []string{"decision"}, nil)
	descLiveDropped = prometheus.NewDesc("conductor_shadow_live_judge_dropped_total",
		"Sampled live pairs whose judgments row was not stored, by reason (write_failed, forgotten, lookup_failed, stopped).", []string{"reason"}, nil)
	descLiveCalls = prometheus.NewDesc("conductor_shadow_live_judge_calls_total", "Judge calls made by live judging (two per judged pair).", nil, nil)
	descLiveSpend = prometheus.NewDesc("conductor_shadow_live_judge_spend_usd",
		"Live judging's recorded spend today (UTC), USD, against conductor_shadow_live_judge_budget_usd.", nil, nil)
	descLiveBudget = prometheus.NewDesc("conductor_shadow_live_judge_budget_usd", "The daily live judge budget, USD (judge.live.daily_budget_usd).", nil, nil)
	descLiveProb   = prometheus.NewDesc("conductor_shadow_live_judge_inclusion_prob",
		"The inclusion probability of the last live pair offered: judge.live.share, lowered by budget pacing.", nil, nil)
	descLiveQueue = prometheus.NewDesc("conductor_shadow_live_judge_queue_depth", "Sampled live pairs waiting for a judge.", nil, nil)
)

// liveJudgeCollector reads live judging's counters at scrape time.
type liveJudgeCollector struct{ stats func() livejudge.Stats }

func (liveJudgeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descLivePairs, descLiveDropped, descLiveCalls, descLiveSpend, descLiveBudget, descLiveProb, descLiveQueue} {
		ch <- d
	}
}

func (c liveJudgeCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.stats()
	for _, d := range []string{livejudge.DecisionUnsampled, livejudge.DecisionPaced, livejudge.DecisionJudged, livejudge.DecisionDecided,
		livejudge.DecisionAlreadyJudged, livejudge.DecisionCandidateSkipped, livejudge.DecisionUnjudgedBudget, livejudge.DecisionUnjudgedQueue,
		livejudge.DecisionUnjudgedStopped, livejudge.DecisionUnjudgedNoInc} {
		ch <- prometheus.MustNewConstMetric(descLivePairs, prometheus.CounterValue, float64(st.Decisions[d]), d)
	}
	for _, r := range []string{livejudge.DropWriteFailed, livejudge.DropForgotten, livejudge.DropLookupFailed, livejudge.DropStopped} {
		ch <- prometheus.MustNewConstMetric(descLiveDropped, prometheus.CounterValue, float64(st.Dropped[r]), r)
	}
	ch <- prometheus.MustNewConstMetric(descLiveCalls, prometheus.CounterValue, float64(st.Calls))
	ch <- prometheus.MustNewConstMetric(descLiveSpend, prometheus.GaugeValue, st.Budget.SpentUSD)
	ch <- prometheus.MustNewConstMetric(descLiveBudget, prometheus.GaugeValue, st.Budget.DailyUSD)
	ch <- prometheus.MustNewConstMetric(descLiveProb, prometheus.GaugeValue, st.LastProb)
	ch <- prometheus.MustNewConstMetric(descLiveQueue, prometheus.GaugeValue, float64(st.Queued))
}
