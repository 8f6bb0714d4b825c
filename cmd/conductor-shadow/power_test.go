package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// TestPowerAndValidityJSON runs both planning commands as scripts do and
// reads their JSON: the plan for a 5-point drop stays within 1.25× the exact
// McNemar minimum (658 at D = 0.20), effect 0 plans a PASS, and validity's
// shares are the three verdict kinds summing to 1.
func TestPowerAndValidityJSON(t *testing.T) {
	ctx := context.Background()
	exec := func(args ...string) []byte { return runOut(t, ctx, args...) }
	type quality struct {
		N      int                    `json:"n"`
		Target string                 `json:"target"`
		Exact  int                    `json:"mcnemar_exact_conditional_n"`
		Connor int                    `json:"mcnemar_normal_approx_connor_n"`
		OC     struct{ Fail float64 } `json:"oc"`
	}
	var drop, pass struct {
		N            int
		PassN        int `json:"pass_n"`
		FailN        int `json:"fail_n"`
		Binding      string
		PlannedPower float64                `json:"planned_power"`
		IfEqual      struct{ Pass float64 } `json:"if_equal"`
		IfWorse      struct{ Fail float64 } `json:"if_worse"`
		Gates        []struct{ Gate string }
		Quality      quality
	}
	if err := json.Unmarshal(exec("power", "--p-incumbent", "0.85", "--discordance", "0.2", "--effect", "-0.05", "--json"), &drop); err != nil {
		t.Fatal(err)
	}
	// The whole policy needs the larger of its PASS and FAIL sizes; the
	// quality gate alone keeps its exact plan for the drop.
	q := drop.Quality
	if q.Target != "FAIL" || q.N < 500 || q.N > 658*5/4 || q.Exact != 658 || q.Connor != 626 || q.OC.Fail < 0.8 {
		t.Errorf("5-point drop, quality gate: %+v", q)
	}
	if drop.N != max(drop.PassN, drop.FailN) || drop.FailN != q.N || drop.PassN < 2000 || drop.PlannedPower != 0.85 ||
		drop.IfEqual.Pass < 0.85 || drop.IfWorse.Fail < 0.85 || len(drop.Gates) != 3 {
		t.Errorf("5-point drop, whole policy: %+v", drop)
	}
	if err := json.Unmarshal(exec("power", "--effect", "0", "--margin", "0.05", "--json"), &pass); err != nil {
		t.Fatal(err)
	}
	if pass.Quality.Target != "PASS" || pass.N <= 100 || pass.FailN != 0 || pass.N != pass.PassN {
		t.Errorf("effect 0: %+v", pass)
	}
	// A slower candidate makes the p95 gate the binding one.
	var slow struct {
		N       int
		Binding string
	}
	if err := json.Unmarshal(exec("power", "--effect", "0", "--discordance", "0.1", "--latency-ratio", "1.15", "--json"), &slow); err != nil {
		t.Fatal(err)
	}
	if slow.Binding != "latency" || slow.N <= 1093 {
		t.Errorf("p95 ratio 1.15: %+v", slow)
	}
	var r struct {
		Pass, Fail, Inconclusive float64
		Suites                   int
		MedianCasesToFail        int `json:"median_cases_to_fail"`
	}
	if err := json.Unmarshal(exec("validity", "--n", "600", "--effect", "-0.05", "--suites", "200", "--look-every", "25", "--seed", "3", "--json"), &r); err != nil {
		t.Fatal(err)
	}
	if r.Suites != 200 || r.Pass+r.Fail+r.Inconclusive < 0.999 || r.Fail == 0 || r.MedianCasesToFail == 0 {
		t.Errorf("validity: %+v", r)
	}
	var looks struct {
		Mode, Policy string
		Looks        int
		Pass, Fail   float64
	}
	if err := json.Unmarshal(exec("validity", "--n", "200", "--looks", "2", "--suites", "20", "--policy", "default-2", "--json"), &looks); err != nil {
		t.Fatal(err)
	}
	if looks.Mode != "looks" || looks.Looks != 2 || looks.Policy != "default-2" {
		t.Errorf("validity --looks: %+v", looks)
	}
	var judge struct {
		Scores string
		Pass   float64
	}
	if err := json.Unmarshal(exec("validity", "--n", "300", "--scores", "judge", "--discordance", "0.3", "--suites", "50", "--json"), &judge); err != nil {
		t.Fatal(err)
	}
	if judge.Scores != "judge" || judge.Pass == 0 {
		t.Errorf("validity --scores judge: %+v", judge)
	}
	var out bytes.Buffer
	err := run(ctx, []string{"power", "--discordance", "0.02", "--effect", "-0.05"}, &out, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "exceeds the discordance") {
		t.Errorf("impossible scenario: %v", err)
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"power", "--effect", "NaN"}, "--effect NaN is not a finite number"},
		{[]string{"power", "--alpha", "0"}, "--alpha 0 and --power 0.8 must each be between 0 and 1"},
		{[]string{"power", "--power", "1"}, "must each be between 0 and 1"},
		{[]string{"validity", "--n", "0"}, "--n 0 and --suites 1000 must be at least 1"},
		{[]string{"validity", "--suites", "0"}, "--suites 0 must be at least 1"},
		{[]string{"validity", "--discordance", "+Inf"}, "--discordance +Inf is not a finite number"},
		{[]string{"validity", "--latency-ratio", "Inf"}, "--latency-ratio +Inf is not a finite number"},
		{[]string{"validity", "--policy", "default-9"}, "default-9"},
		{[]string{"power", "--cost-correlation", "2"}, "correlations must be in [-1, 1]"},
		{[]string{"power", "--cost-ratio", "1.2"}, "cannot reach 80%"},
	} {
		err := run(ctx, bad.args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v: %v, want an error saying %q", bad.args, err, bad.want)
		}
	}
}

// runOut runs the command line args in process and returns its standard
// output; a failing command fails t.
func runOut(t *testing.T, ctx context.Context, args ...string) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := run(ctx, args, &out, io.Discard); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return out.Bytes()
}
