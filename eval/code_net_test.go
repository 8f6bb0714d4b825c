package eval

import (
	"context"
	"strings"
	"testing"
	"time"
)

// Shipped HumanEval/0 (has_close_elements) answered by solutions that reach
// for the network: through the socket module (stopped by NetGuard) and around
// it through _socket (stopped by the empty network namespace, where unshare
// works). Both must fail as wrong answers, never pass or error the grader.
func TestCodeGraderNoNetwork(t *testing.T) {
	needPython(t)
	cfg := NewDefaultCodeConfig()
	cfg.Timeout = 30 * time.Second
	g, err := NewCodeGrader(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c0 := caseByID(t, "humaneval-small.jsonl", "HumanEval/0")
	solve := "    for i, a in enumerate(numbers):\n        for j, b in enumerate(numbers):\n" +
		"            if i != j and abs(a - b) < threshold:\n                return True\n    return False\n"
	viaSocket := "    import socket\n    s = socket.create_connection(('127.0.0.1', 80), timeout=2)\n" + solve
	viaRaw := "    import _socket\n    s = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)\n" +
		"    s.settimeout(2)\n    s.connect(('1.1.1.1', 53))\n" + solve
	if got := g.Grade(context.Background(), c0, solve); !got.Passed || got.Err != nil {
		t.Fatalf("the plain solution must pass: %+v", got)
	}
	got := g.Grade(context.Background(), c0, viaSocket)
	if got.Err != nil || got.Passed || !strings.Contains(got.Explanation, "network access is disabled in the code grader") {
		t.Errorf("socket module: %+v", got)
	}
	if !g.NetworkIsolated() {
		t.Logf("unshare -n is not available here: the raw _socket case is not isolated")
		return
	}
	got = g.Grade(context.Background(), c0, viaRaw)
	if got.Err != nil || got.Passed || !strings.Contains(got.Explanation, "Network is unreachable") {
		t.Errorf("raw _socket in an empty network namespace: %+v", got)
	}
}
