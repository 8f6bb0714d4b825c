package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/conductor-shadow/conductor-shadow/cmd/internal/platform"
	"github.com/conductor-shadow/conductor-shadow/shadow"
)

// judgeFamilyWarnings says, from the configuration, which pipelines use a
// model of a judge's family (shadow.ModelFamily): the suite judge's and, when
// live judging is on with another worker, the live judge's. It compares with
// the incumbent's worker, and every worker a candidate may call — a
// conductor any worker of the pool and its planner, a single or chain
// candidate its workers, a mixture its proposers and aggregator. A judge
// favours answers of its own family, so `serve` logs each at start; the
// suite reports name the models the runs actually called. Empty when no
// judge's family is known or shared by none.
func judgeFamilyWarnings(cfg platform.Config) []string {
	out := familyWarnings(cfg, "suite judge", cfg.Suite.Judge.Worker)
	if w := cfg.LiveJudgeWorker(); cfg.Judge.Live.Enabled() {
		if w == cfg.Suite.Judge.Worker {
			for i := range out {
				out[i] = strings.Replace(out[i], "suite judge", "suite and live judge", 1)
			}
		} else {
			out = append(out, familyWarnings(cfg, "live judge", w)...)
		}
	}
	return out
}

// familyWarnings is judgeFamilyWarnings for one judge worker, named who.
func familyWarnings(cfg platform.Config, judgeName, judgeWorker string) []string {
	model := func(worker string) string {
		if w, ok := cfg.Shadow.Worker(worker); ok && w.Model != "" {
			return w.Model
		}
		return worker
	}
	jm := model(judgeWorker)
	fam := shadow.ModelFamily(jm)
	if fam == "" {
		return nil
	}
	var out []string
	same := func(who string, workers []string) {
		var ms []string
		for _, w := range workers {
			if m := model(w); shadow.ModelFamily(m) == fam && !slices.Contains(ms, m) {
				ms = append(ms, m)
			}
		}
		if len(ms) > 0 {
			out = append(out, fmt.Sprintf("%s %s (%s, family %s) shares its model family with %s (%s)", judgeName, judgeWorker, jm, fam, who, strings.Join(ms, ", ")))
		}
	}
	same("the incumbent "+cfg.Pipelines.Incumbent, []string{cfg.Pipelines.Incumbent})
	candidates, _ := cfg.Pipelines.AllCandidates() // validated with the config
	for _, c := range candidates {
		who := "the candidate " + c.CandidateName()
		if c.Kind == shadow.KindConductor {
			who += " (a conductor may call any worker of the pool)"
		}
		same(who, c.Callable(cfg.Shadow))
	}
	return out
}
