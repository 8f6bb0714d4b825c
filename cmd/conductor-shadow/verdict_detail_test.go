package main

import (
	"testing"

	"github.com/conductor-shadow/conductor-shadow/eval"
	"github.com/conductor-shadow/conductor-shadow/eval/gate"
	"github.com/conductor-shadow/conductor-shadow/eval/stats"
)

func TestVerdictDetail(t *testing.T) {
	pol := gate.NewDefaultPolicy()
	tests := []struct {
		name string
		rep  *eval.Report
		want string
	}{
		{
			name: "gates, quality test and truncation",
			rep: &eval.Report{
				Policy: &pol,
				Pipelines: []eval.PipelineReport{
					{Pipeline: "single:gpt-5", Overall: eval.Stats{Truncated: 0}},
					{Pipeline: "conductor", Overall: eval.Stats{Truncated: 3}},
				},
				Comparisons: []eval.CandidateComparison{{
					Candidate: "conductor",
					Verdict: gate.Verdict{Verdict: gate.Fail, Plan: &gate.Plan{Test: stats.MethodTango}, Gates: []gate.Result{
						{Gate: "quality", Status: gate.Pass},
						{Gate: "cost", Status: gate.Fail},
					}},
				}},
			},
			want: "policy default-3; conductor FAIL: quality PASS (Tango score interval, paired pass/fail), cost FAIL; truncated runs: single:gpt-5 0, conductor 3",
		},
		{
			name: "no candidates",
			rep:  &eval.Report{Pipelines: []eval.PipelineReport{{Pipeline: "single:gpt-5"}}},
			want: "truncated runs: single:gpt-5 0",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := verdictDetail(tt.rep); got != tt.want {
				t.Errorf("verdictDetail:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}
