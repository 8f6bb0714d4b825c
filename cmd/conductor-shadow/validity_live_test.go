package main

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"
)

// `validity --live --json` prints exactly the four figures of the issue's
// interface, shares summing to 1; `power --live --json` plans the live pairs
// to FAIL a 5-point drop on a whole day of looks, and its check command names
// the days; bad live flags are refused naming the flag.
func TestLiveValidityAndPowerCommands(t *testing.T) {
	ctx := context.Background()
	exec := func(args ...string) []byte { return runOut(t, ctx, args...) }
	var shares map[string]float64
	b := exec("validity", "--live", "--effect", "-0.08", "--days", "20", "--per-day", "200", "--judged-share", "0.25",
		"--p-incumbent", "0.85", "--discordance", "0.2", "--suites", "40", "--seed", "3", "--json")
	if err := json.Unmarshal(b, &shares); err != nil {
		t.Fatal(err)
	}
	if keys := slices.Sorted(maps.Keys(shares)); strings.Join(keys, ",") != "fail,inconclusive,median_cases_to_decision,pass" {
		t.Errorf("keys %v, want pass, fail, inconclusive, median_cases_to_decision", keys)
	}
	if s := shares["pass"] + shares["fail"] + shares["inconclusive"]; s < 0.999 || s > 1.001 || shares["fail"] < 0.9 || shares["median_cases_to_decision"] <= 0 {
		t.Errorf("8 points worse: %v", shares)
	}
	var plan struct {
		FailN    int `json:"fail_n"`
		FailDays int `json:"fail_days"`
		PerDay   int `json:"per_day"`
	}
	if err := json.Unmarshal(exec("power", "--live", "--effect", "-0.08", "--days", "30", "--suites", "60", "--json"), &plan); err != nil {
		t.Fatal(err)
	}
	if plan.FailN == 0 || plan.FailN != plan.FailDays*plan.PerDay {
		t.Errorf("plan %+v: FAIL within 30 days on a day's look", plan)
	}
	text := string(exec("power", "--live", "--effect", "-0.08", "--days", "30", "--suites", "60"))
	if !strings.Contains(text, "FAIL a candidate 8.0 pts worse with 80% (planned at 85%)") || !strings.Contains(text, "validity --live --effect -0.08 --days") {
		t.Errorf("plan text:\n%s", text)
	}
	for _, bad := range [][]string{{"--judged-share", "0"}, {"--days", "0"}, {"--fail-share", "1"}} {
		err := run(ctx, append([]string{"validity", "--live", "--suites", "2"}, bad...), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "live") {
			t.Errorf("validity --live %v: %v", bad, err)
		}
	}
}
