package store

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stuckShutdownEnv makes the test binary run stuckShutdownMain instead of
// the tests: a process of its own, whose engine nothing else shares.
const stuckShutdownEnv = "STORE_TEST_STUCK_SHUTDOWN"

// stuckStatement is one hasAll call over 400,000 elements: well over a
// minute inside the engine, which cannot interrupt it.
const stuckStatement = "SELECT hasAll(a, arrayMap(x -> x + 1, a)) FROM (SELECT groupArray(number) AS a FROM numbers(400000))"

// stuckShutdownMain is a program as serve is one: it opens the store in dir,
// puts a statement inside the engine that does not end, says "stuck" once it
// is in, and on SIGTERM shuts the store down within 1 s and returns (only
// main exits), printing what Shutdown returned.
func stuckShutdownMain(dir string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	s, err := open(context.Background(), testConfig(dir, "stuck"))
	if err != nil {
		fmt.Println("open:", err)
		return 1
	}
	go func() { _, _ = s.t.queryText(context.Background(), stuckStatement) }()
	for {
		if _, running, _, _ := s.t.(*embedded).ref.InFlight(); running {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A tap write waits for the engine until its own deadline.
	wctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	err = tapAccept(wctx, s, "late")
	cancel()
	fmt.Println("stuck; a tap write behind it:", err)
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	fmt.Println("shutdown:", s.Shutdown(sctx))
	return 0
}

// TestShutdownAbandonsAStuckStatement: a process whose engine is inside a
// statement that does not end still exits on SIGTERM within its drain
// deadline: a tap write behind the statement gives up at its own deadline,
// and Shutdown gives up on the statement at its deadline, naming and
// counting what it abandoned.
func TestShutdownAbandonsAStuckStatement(t *testing.T) {
	needEngine(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), stuckShutdownEnv+"="+t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(out)
	if !lines.Scan() || !strings.HasPrefix(lines.Text(), "stuck; a tap write behind it: ") {
		t.Fatalf("the child said %q; want it stuck", lines.Text())
	}
	if !strings.Contains(lines.Text(), "context deadline exceeded") {
		t.Errorf("a tap write behind the stuck statement: %q; want its own deadline", lines.Text())
	}
	signalled := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var said []string
	for lines.Scan() {
		said = append(said, lines.Text())
	}
	err = cmd.Wait()
	took := time.Since(signalled)
	t.Logf("exit %v after %v: %q", err, took.Round(time.Millisecond), said)
	if err != nil {
		t.Fatalf("the child ended with %v; want exit 0 from main", err)
	}
	if len(said) != 1 || !strings.Contains(said[0], "abandoned a statement still inside the engine: 1 statement abandoned") ||
		!strings.Contains(said[0], "SELECT hasAll(a, arrayMap(x -> x + 1, a))") {
		t.Errorf("Shutdown said %q; want it to name and count the abandoned statement", said)
	}
	// The statement needs over a minute; the exit came at the 1 s deadline.
	if took > 20*time.Second {
		t.Errorf("exit %v after SIGTERM; want it at the 1 s drain deadline, not when the statement ends", took)
	}
}
