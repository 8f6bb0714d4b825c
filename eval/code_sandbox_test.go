package eval

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// sandboxSecret is planted where an escaping answer would find it: a file
// outside its folder, another process's environment, this process's.
const sandboxSecret = "PLANTED-SECRET-7f3a9c"

// TestCodeSandboxEscapes answers shipped HumanEval/0 with a correct solution
// that first tries one way out of the sandbox and prints what it got. Each
// must fail as a wrong answer (never pass, never a grader error), the planted
// secret must not reach the explanation, and nothing may reach the loopback
// listener or appear outside the case's folder.
func TestCodeSandboxEscapes(t *testing.T) {
	needPython(t)
	outside := t.TempDir()
	secretFile := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secretFile, []byte(sandboxSecret), 0o644); err != nil {
		t.Fatal(err)
	}
	written := filepath.Join(outside, "written-by-answer.txt")
	// A process whose environment holds the secret, as the server's holds its
	// token: /proc/<pid>/environ shows the environment a process started with.
	holder := exec.Command("sleep", "60")
	holder.Env = []string{"CONDUCTOR_SHADOW_API_TOKEN=" + sandboxSecret}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	t.Setenv("CONDUCTOR_SHADOW_PII_SECRET", sandboxSecret)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var reached atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			reached.Add(1)
			_, _ = c.Write([]byte(sandboxSecret))
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port

	g, c0 := humanEval0Grader(t, 30*time.Second)
	solve := "    for i, a in enumerate(numbers):\n        for j, b in enumerate(numbers):\n" +
		"            if i != j and abs(a - b) < threshold:\n                return True\n    return False\n"
	if got := g.Grade(context.Background(), c0, solve); !got.Passed || got.Err != nil {
		t.Fatalf("the plain solution must pass: %+v", got)
	}
	// Each attempt prints what it got and raises, so a blocked attempt fails
	// the case with the error in the explanation and one that got through
	// fails it too, with the secret in the explanation (which the test rejects).
	attempts := []struct{ name, code string }{
		{"read a file outside its folder", fmt.Sprintf("print(open(%q).read())", secretFile)},
		{"list the host's temporary folder", fmt.Sprintf("import os; print(os.listdir(%q))", outside)},
		{"every /proc/<pid>/environ", "import os\n" +
			"    got = []\n" +
			"    for p in os.listdir('/proc'):\n" +
			"        if p.isdigit():\n" +
			"            try: got.append(open('/proc/%s/environ' % p, 'rb').read().decode('latin-1'))\n" +
			"            except OSError as e: got.append(str(e))\n" +
			"    print(got)\n" +
			"    assert not any('SECRET' in g for g in got)\n" +
			fmt.Sprintf("    open('/proc/%d/environ').read()", holder.Process.Pid)},
		{"the parent's environment", "import os; print(open('/proc/%d/environ' % os.getppid(), 'rb').read())\n" +
			"    print(dict(os.environ))\n" +
			"    assert 'CONDUCTOR_SHADOW_PII_SECRET' not in os.environ and 'PATH' in os.environ\n" +
			fmt.Sprintf("    open('/proc/%d/environ').read()", os.Getpid())},
		{"the server's own /proc entry", fmt.Sprintf("print(open('/proc/%d/cmdline').read())", os.Getpid())},
		{"TCP to a loopback listener", fmt.Sprintf("import socket; s = socket.create_connection(('127.0.0.1', %d), timeout=2); print(s.recv(100))", port)},
		{"TCP through _socket", fmt.Sprintf("import _socket; s = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM); s.settimeout(2); s.connect(('127.0.0.1', %d)); print(s.recv(100))", port)},
		{"a Unix socket", "import _socket; s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM); s.connect('/run/systemd/private')"},
		{"write outside its folder", fmt.Sprintf("open(%q, 'w').write('escaped')", written)},
		{"write to the root", "open('/escaped.txt', 'w').write('escaped')"},
		{"ptrace the parent", "import ctypes, os; libc = ctypes.CDLL(None); r = libc.ptrace(16, os.getppid(), 0, 0); assert r == 0, 'ptrace refused'; print('attached')"},
		{"a new user namespace", "import ctypes; r = ctypes.CDLL(None).unshare(0x10000000); assert r == 0, 'unshare refused'; print('unshared')"},
		{"mount the host's root", "import ctypes; r = ctypes.CDLL(None).mount(b'/', b'/tmp', None, 4096, None); assert r == 0, 'mount refused'; print('mounted')"},
	}
	for _, a := range attempts {
		t.Run(a.name, func(t *testing.T) {
			got := g.Grade(context.Background(), c0, "    "+a.code+"\n"+solve)
			if got.Err != nil {
				t.Fatalf("grader error: %v", got.Err)
			}
			if got.Passed {
				t.Errorf("passed: the attempt went through (%s)", got.Explanation)
			}
			if strings.Contains(got.Explanation, sandboxSecret) {
				t.Errorf("the explanation holds the planted secret: %s", got.Explanation)
			}
			t.Logf("%s", got.Explanation)
		})
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("the loopback listener took %d connections from the sandbox", n)
	}
	if _, err := os.Stat(written); !os.IsNotExist(err) {
		t.Errorf("the answer wrote outside its folder: %s (%v)", written, err)
	}
	if _, err := os.Stat("/escaped.txt"); !os.IsNotExist(err) {
		t.Errorf("the answer wrote /escaped.txt on the host")
	}
	// Its own folder stays writable: a correct answer that writes a scratch
	// file there passes.
	scratch := "    open('scratch.txt', 'w').write('ok')\n    import tempfile; tempfile.TemporaryFile().write(b'ok')\n" + solve
	if got := g.Grade(context.Background(), c0, scratch); !got.Passed {
		t.Errorf("writing in its own folder and /tmp must work: %+v", got)
	}
}

// TestCodeGraderRefusedWithoutSandbox: with no bubblewrap the grader runs
// nothing and every grade is a grader error naming the reason.
func TestCodeGraderRefusedWithoutSandbox(t *testing.T) {
	needPython(t)
	cfg := NewDefaultCodeConfig()
	cfg.Bwrap = filepath.Join(t.TempDir(), "no-such-bwrap")
	g, err := NewCodeGrader(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c0 := caseByID(t, "humaneval-small.jsonl", "HumanEval/0")
	marker := filepath.Join(t.TempDir(), "ran")
	got := g.Grade(context.Background(), c0, fmt.Sprintf("    open(%q, 'w').write('ran')\n    return False\n", marker))
	if got.Err == nil || got.Passed {
		t.Fatalf("want a grader error, got %+v", got)
	}
	for _, want := range []string{"refused", "no OS sandbox", "no-such-bwrap", "bubblewrap"} {
		if !strings.Contains(got.Err.Error(), want) {
			t.Errorf("error %q does not say %q", got.Err, want)
		}
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Error("the program ran without the sandbox")
	}
	if err := g.Check(context.Background()); err == nil {
		t.Error("Check must report the refusal")
	}
	cfg.Bwrap = ""
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "bwrap") {
		t.Errorf("an empty bwrap must be invalid: %v", err)
	}
}

// TestCodeSandboxLeavesNoProcess: a child the answer starts and leaves
// running dies with the program (the sandbox's pid namespace ends with it),
// whether the program fails at once or runs into its timeout.
func TestCodeSandboxLeavesNoProcess(t *testing.T) {
	needPython(t)
	g, c0 := humanEval0Grader(t, 3*time.Second)
	for _, tail := range []string{"    return False\n", "    while True: pass\n"} {
		got := g.Grade(context.Background(), c0, "    import subprocess; subprocess.Popen(['sleep', '987.654'])\n"+tail)
		if got.Err != nil || got.Passed {
			t.Fatalf("want a failed grade: %+v", got)
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			left := processesWith(t, "987.654")
			if left == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d processes of the answer still run after its grade (%s)", left, got.Explanation)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// processesWith counts the host's processes whose command line holds s.
func processesWith(t *testing.T, s string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	n := 0
	for _, e := range ents {
		if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && strings.Contains(string(b), s) {
			n++
		}
	}
	return n
}

// humanEval0Grader is a code grader with the given timeout and shipped
// HumanEval/0 (has_close_elements), the case the sandbox tests answer.
func humanEval0Grader(t *testing.T, timeout time.Duration) (*CodeGrader, Case) {
	t.Helper()
	cfg := NewDefaultCodeConfig()
	cfg.Timeout = timeout
	g, err := NewCodeGrader(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g, caseByID(t, "humaneval-small.jsonl", "HumanEval/0")
}
