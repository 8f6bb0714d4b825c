package eval

import (
	"context"
	"strings"
	"testing"
	"time"
)

// A pass must mean the tests ran to the end: every way of leaving the program
// early with status 0 (or being killed) before check() finishes fails.
func TestCodeGraderEarlyExits(t *testing.T) {
	needPython(t)
	cfg := NewDefaultCodeConfig()
	cfg.Timeout = 30 * time.Second
	g, err := NewCodeGrader(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c0 := caseByID(t, "humaneval-small.jsonl", "HumanEval/0")
	tests := []struct {
		name, body string
		pass       bool
	}{
		{"reported: raise SystemExit(0)", "    raise SystemExit(0)\n", false},
		{"reported: os._exit(0)", "    import os\n    os._exit(0)\n", false},
		{"sys.exit(0)", "    import sys\n    sys.exit(0)\n", false},
		{"sys.exit()", "    import sys\n    sys.exit()\n", false},
		{"exit()", "    exit()\n", false},
		{"quit()", "    quit()\n", false},
		{"raise SystemExit", "    raise SystemExit\n", false},
		{"kill self SIGKILL", "    import os, signal\n    os.kill(os.getpid(), signal.SIGKILL)\n", false},
		{"kill self SIGTERM ignored-handler exit", "    import os, signal, sys\n    signal.signal(signal.SIGTERM, lambda *a: os._exit(0))\n    os.kill(os.getpid(), signal.SIGTERM)\n", false},
		{"alarm handler exits 0", "    import os, signal\n    signal.signal(signal.SIGALRM, lambda *a: os._exit(0))\n    signal.setitimer(signal.ITIMER_REAL, 0.01)\n    import time\n    time.sleep(1)\n", false},
		{"atexit then exit", "    import atexit, os, sys\n    atexit.register(lambda: os._exit(0))\n    sys.exit(1)\n", false},
		{"module-level exit in a full function", "```python\nimport sys\ndef has_close_elements(numbers, threshold):\n    return True\nsys.exit(0)\n```", false},
		{"print shadowed still passes honest code", "    global print\n    print = None\n" + strings.TrimPrefix(c0.Reference, ""), true},
		{"honest body", c0.Reference, true},
		{"main block with exit is not run", "```python\nimport sys\ndef has_close_elements(numbers, threshold):\n" +
			"    return any(abs(a - b) < threshold for i, a in enumerate(numbers) for j, b in enumerate(numbers) if i != j)\n\n" +
			"if __name__ == \"__main__\":\n    sys.exit(0)\n```", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := g.Grade(context.Background(), c0, tt.body)
			if got.Err != nil {
				t.Fatalf("grader error: %v", got.Err)
			}
			if got.Passed != tt.pass {
				t.Errorf("passed=%v, want %v (%s)", got.Passed, tt.pass, got.Explanation)
			}
		})
	}
}

func TestSentinelWriterAcrossWrites(t *testing.T) {
	w := &sentinelWriter{nonce: []byte("NONCE-123")}
	for _, chunk := range []string{"output NON", "CE", "-12", "3\n"} {
		if _, err := w.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	if !w.found {
		t.Error("sentinel split over writes not found")
	}
	w = &sentinelWriter{nonce: []byte("NONCE-123")}
	w.Write([]byte("NONCE-12 NONCE-124"))
	if w.found {
		t.Error("near miss read as the sentinel")
	}
}
