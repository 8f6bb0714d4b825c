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
	exec := func(args ...string) []byte {
		t.Helper()
		var out bytes.Buffer
		if err := run(ctx, args, &out, io.Discard); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return out.Bytes()
	}
	var drop, pass struct {
		N      int                    `json:"n"`
		Target string                 `json:"target"`
		Exact  int                    `json:"mcnemar_exact_conditional_n"`
		Connor int                    `json:"mcnemar_normal_approx_connor_n"`
		FailOC struct{ Fail float64 } `json:"oc"`
	}
	if err := json.Unmarshal(exec("power", "--p-incumbent", "0.85", "--discordance", "0.2", "--effect", "-0.05", "--json"), &drop); err != nil {
		t.Fatal(err)
	}
	if drop.Target != "FAIL" || drop.N < 500 || drop.N > 658*5/4 || drop.Exact != 658 || drop.Connor != 626 || drop.FailOC.Fail < 0.8 {
		t.Errorf("5-point drop: %+v", drop)
	}
	if err := json.Unmarshal(exec("power", "--effect", "0", "--margin", "0.05", "--json"), &pass); err != nil {
		t.Fatal(err)
	}
	if pass.Target != "PASS" || pass.N <= 100 {
		t.Errorf("effect 0: %+v", pass)
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
	} {
		err := run(ctx, bad.args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v: %v, want an error saying %q", bad.args, err, bad.want)
		}
	}
}
