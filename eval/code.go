package eval

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// CodeConfig configures the code grader (HumanEval-style function tests).
type CodeConfig struct {
	// Python is the interpreter, a name looked up in PATH or a path. Default "python3".
	Python string `yaml:"python"`
	// Timeout is the wall-clock limit of one test program. Default 5s.
	Timeout time.Duration `yaml:"timeout"`
	// MemoryMB caps the program's address space, MiB, via prlimit. Default 1024.
	MemoryMB int `yaml:"memory_mb"`
	// Prlimit is the prlimit(1) binary used for CPU, memory, file-size and
	// open-file limits; when it cannot be found the program runs with the
	// timeout only. Default "prlimit"; "" disables the limits.
	Prlimit string `yaml:"prlimit"`
	// Bwrap is the bubblewrap binary (bwrap(1), Debian package bubblewrap)
	// that runs every test program in the sandbox (see CodeGrader). Where it
	// is missing or cannot make namespaces, code graders are refused: every
	// code grade is a grader error naming the reason. Default "bwrap".
	Bwrap string `yaml:"bwrap"`
}

// NewDefaultCodeConfig returns python3, 5 s, 1024 MiB, prlimit and bwrap.
func NewDefaultCodeConfig() CodeConfig {
	return CodeConfig{Python: "python3", Timeout: 5 * time.Second, MemoryMB: 1024, Prlimit: "prlimit", Bwrap: "bwrap"}
}

// Validate reports an empty interpreter, a non-positive timeout or memory cap.
func (c CodeConfig) Validate() error {
	var errs []error
	if strings.TrimSpace(c.Python) == "" {
		errs = append(errs, errors.New("code.python is empty"))
	}
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("code.timeout must be > 0, got %s", c.Timeout))
	}
	if c.MemoryMB <= 0 {
		errs = append(errs, fmt.Errorf("code.memory_mb must be > 0, got %d", c.MemoryMB))
	}
	if strings.TrimSpace(c.Bwrap) == "" {
		errs = append(errs, errors.New("code.bwrap is empty: code graders run only in the bubblewrap sandbox"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("eval: code config: %w", err)
	}
	return nil
}

// CodeGrader runs a HumanEval-style test: the case's prompt (Input) plus the
// output's code, the case's Extra["test"] and check(Extra["entry_point"]), in a
// fresh temporary directory with python3 in isolated mode, under a wall-clock
// timeout and prlimit CPU/memory limits. A pass means the tests ran to the end:
// after check(...) the program writes a random per-run sentinel straight to file
// descriptor 1, and the grader passes only when the sentinel arrived and the exit
// status is 0. An early exit that skips the tests — sys.exit(0), exit(), quit(),
// raise SystemExit, os._exit(0), os.kill(os.getpid(), …), a signal, an atexit
// hook — fails, as do a failing test, a crash or a timeout, with an explanation.
// The program runs under the module name "__code_grader__", so an answer's
// `if __name__ == "__main__":` block does not run. A missing interpreter, a case
// without entry_point/test or a cancelled context is a grader error.
//
// Isolation, enforced by the OS: the program runs under bubblewrap in new
// user, mount, pid, network, ipc and uts namespaces, seeing only a read-only
// /usr, the interpreter's own folders, its own /proc, a small tmpfs /tmp and
// the case's folder (the only place it can write); with an empty environment,
// no capabilities, as uid 65534, and a seccomp filter that makes every socket,
// ptrace, mount and namespace call fail. It cannot read the server's files or
// environment, another process's /proc, or reach any socket. Where that
// sandbox cannot be made (no bwrap, namespaces refused, not Linux) every code
// grade is a grader error saying why ("refused: ..."): code is never run with
// less isolation.
type CodeGrader struct {
	cfg CodeConfig

	once   sync.Once
	python string // resolved interpreter path
	pyErr  error
	box    *sandbox
	boxErr error // why the sandbox cannot be made: code graders are refused
}

// NewCodeGrader checks cfg and returns the grader. The interpreter is looked up
// at the first Grade, so a missing python3 shows up as a grader error on every
// code score.
func NewCodeGrader(cfg CodeConfig) (*CodeGrader, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &CodeGrader{cfg: cfg}, nil
}

// Name returns "code".
func (*CodeGrader) Name() string { return GraderCode }

// Grade runs the test program for output.
func (g *CodeGrader) Grade(ctx context.Context, c Case, output string) Grade {
	entry, test := c.ExtraString("entry_point"), c.ExtraString("test")
	if entry == "" || test == "" {
		return gradeErr("eval: code grader: case %s: missing entry_point or test", c.ID)
	}
	if err := g.Check(ctx); err != nil {
		return gradeErr("%w", err)
	}
	python := g.python
	if strings.TrimSpace(output) == "" {
		return fail("empty output")
	}
	dir, err := os.MkdirTemp("", "eval-code-*")
	if err != nil {
		return gradeErr("eval: code grader: temp dir: %w", err)
	}
	defer os.RemoveAll(dir)
	prog := filepath.Join(dir, "program.py")
	nonce, err := newSentinel()
	if err != nil {
		return gradeErr("eval: code grader: sentinel: %w", err)
	}
	if err := os.WriteFile(prog, []byte(BuildProgram(c, output)+sentinelLine(nonce)), 0o600); err != nil {
		return gradeErr("eval: code grader: write program: %w", err)
	}

	// Run as a module named other than "__main__" (as HumanEval's own harness
	// does with exec): an answer's `if __name__ == "__main__":` demo block is
	// not part of the test and must not end the program before it.
	inner := []string{python, "-I", "-B", "-c", "import runpy, sys; runpy.run_path(sys.argv[1], run_name='__code_grader__')",
		sandboxDir + "/program.py"}
	runCtx, cancel := context.WithTimeout(ctx, g.cfg.Timeout)
	defer cancel()
	cmd, closeBox, err := g.box.command(runCtx, dir, inner)
	if err != nil {
		return gradeErr("eval: code grader: %w", err)
	}
	defer closeBox()
	if g.cfg.Prlimit != "" {
		// The limits are set on bwrap and inherited by everything it starts.
		if pl, err := exec.LookPath(g.cfg.Prlimit); err == nil {
			cpu := int(math.Ceil(g.cfg.Timeout.Seconds())) + 1
			cmd.Args = append([]string{pl,
				fmt.Sprintf("--cpu=%d", cpu),
				fmt.Sprintf("--as=%d", int64(g.cfg.MemoryMB)<<20),
				fmt.Sprintf("--fsize=%d", 16<<20),
				"--nofile=256",
				"--"}, cmd.Args...)
			cmd.Path = pl
		}
	}
	cmd.Dir = dir
	out := &capped{max: 64 << 10}
	seen := &sentinelWriter{nonce: []byte(nonce)}
	cmd.Stdout, cmd.Stderr = io.MultiWriter(out, seen), out
	cmd.WaitDelay = time.Second
	isolateProcess(cmd)
	start := time.Now()
	runErr := cmd.Run()
	elapsed := time.Since(start)

	if ctx.Err() != nil {
		return gradeErr("eval: code grader: case %s: %w", c.ID, ctx.Err())
	}
	if runCtx.Err() != nil {
		return fail("timed out after %s (limit %s)", elapsed.Round(time.Millisecond), g.cfg.Timeout)
	}
	if runErr == nil {
		if !seen.found {
			return fail("the program exited with status 0 before its tests finished (an early exit such as sys.exit, os._exit or SystemExit is not a pass): %s", lastLines(out.String(), 6, 600))
		}
		return pass("tests passed in %s", elapsed.Round(time.Millisecond))
	}
	var exitErr *exec.ExitError
	if !errors.As(runErr, &exitErr) {
		return gradeErr("eval: code grader: run %s: %w", python, runErr)
	}
	return fail("tests failed (%s): %s", exitErr.ProcessState.String(), lastLines(out.String(), 6, 600))
}

// Check finds the interpreter and makes sure the sandbox can be made here,
// once; later calls return the first answer. A non-nil error means every
// code grade is refused (a grader error with this reason); serve logs it at
// start. Callers may call it before the first Grade to learn that early.
func (g *CodeGrader) Check(ctx context.Context) error {
	g.once.Do(func() {
		if g.python, g.pyErr = resolvePython(ctx, g.cfg.Python); g.pyErr != nil {
			return
		}
		g.box, g.boxErr = newSandbox(ctx, g.cfg.Bwrap, g.python)
	})
	if g.pyErr != nil {
		return fmt.Errorf("eval: code grader: %w", g.pyErr)
	}
	if g.boxErr != nil {
		return fmt.Errorf("eval: code grader: refused: no OS sandbox for code: %w", g.boxErr)
	}
	return nil
}

// Sandbox describes the sandbox programs run in ("" before Check succeeded).
func (g *CodeGrader) Sandbox() string {
	if g.box == nil {
		return ""
	}
	return g.box.describe()
}

// resolvePython finds the interpreter in PATH and asks it for its real
// executable (sys.executable), so that wrapper scripts such as pyenv shims,
// which can take seconds to start, run once instead of once per test.
func resolvePython(ctx context.Context, name string) (string, error) {
	path, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("interpreter %q not found: %w", name, err)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "-c", "import sys; print(sys.executable)").Output()
	if real := strings.TrimSpace(string(out)); err == nil && filepath.IsAbs(real) {
		if _, err := os.Stat(real); err == nil {
			return real, nil
		}
	}
	return path, nil
}

// BuildProgram assembles the Python test program for a code case: when the
// output's code (answerCode: a fenced block, an indented block or bare code
// after prose, else the whole output) defines the entry point, the
// prompt is kept for its imports and helpers, closed with "pass", and the code
// follows; otherwise the code is taken as the function body completing the
// prompt. Then the case's test and "check(<entry_point>)".
func BuildProgram(c Case, output string) string {
	entry := c.ExtraString("entry_point")
	code := answerCode(output, entry)
	prompt := c.Input
	if !strings.HasSuffix(prompt, "\n") {
		prompt += "\n"
	}
	var b strings.Builder
	if strings.Contains(code, "def "+entry+"(") {
		b.WriteString(prompt)
		b.WriteString("    pass\n\n\n")
		b.WriteString(code)
	} else {
		b.WriteString(prompt)
		b.WriteString(code)
	}
	b.WriteString("\n\n")
	b.WriteString(c.ExtraString("test"))
	b.WriteString("\n\ncheck(")
	b.WriteString(entry)
	b.WriteString(")\n")
	return b.String()
}

// newSentinel returns a random 128-bit hex token, new for every program.
func newSentinel() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "CODE-GRADER-TESTS-COMPLETED-" + hex.EncodeToString(b[:]), nil
}

// sentinelLine is the program's last statement: it writes the sentinel to file
// descriptor 1 directly, so a replaced print or sys.stdout cannot fake or hide
// a pass it did not earn (at worst it makes the case fail).
func sentinelLine(nonce string) string {
	return fmt.Sprintf("\n__import__('os').write(1, b'\\n%s\\n')\n", nonce)
}

// sentinelWriter watches a stream for the sentinel, across write boundaries,
// keeping only the last len(nonce) bytes.
type sentinelWriter struct {
	nonce []byte
	tail  []byte
	found bool
}

func (w *sentinelWriter) Write(p []byte) (int, error) {
	if w.found {
		return len(p), nil
	}
	buf := append(w.tail, p...)
	if bytes.Contains(buf, w.nonce) {
		w.found = true
		w.tail = nil
		return len(p), nil
	}
	if keep := len(w.nonce) - 1; len(buf) > keep {
		buf = buf[len(buf)-keep:]
	}
	w.tail = append(w.tail[:0], buf...)
	return len(p), nil
}

// capped is an io.Writer keeping the first max bytes.
type capped struct {
	buf []byte
	max int
}

func (w *capped) Write(p []byte) (int, error) {
	if room := w.max - len(w.buf); room > 0 {
		w.buf = append(w.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (w *capped) String() string { return string(w.buf) }

// lastLines returns up to n trailing non-empty lines of s, at most max characters.
func lastLines(s string, n, max int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	out := strings.Join(lines, " | ")
	if r := []rune(out); len(r) > max {
		out = "…" + string(r[len(r)-max:])
	}
	if out == "" {
		return "no output"
	}
	return out
}
