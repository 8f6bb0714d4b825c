package ingest

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/ingest/incumbenttest"
)

// npmOpenAIVersion is the official openai npm client version checked.
const npmOpenAIVersion = "7.55.0"

// TestOfficialNodeClientThroughProxy installs the official openai npm client into a
// temporary directory and runs the same script against the fake incumbent directly
// and through the proxy, streaming and not: the outputs must be byte-identical,
// and the four mirrored calls must reach the tap.
func TestOfficialNodeClientThroughProxy(t *testing.T) {
	node, errNode := exec.LookPath("node")
	npm, errNpm := exec.LookPath("npm")
	if errNode != nil || errNpm != nil {
		t.Skip("node and npm are not installed: the official openai client check needs both")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	script, err := os.ReadFile("testdata/npm/openai_check.mjs")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "check.mjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	install := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--silent", "--prefix", dir, "openai@"+npmOpenAIVersion)
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("npm install openai@%s: %v\n%s", npmOpenAIVersion, err, out)
	}

	tap := &recordingTap{}
	f := newProxyFixture(t, &incumbenttest.Handler{Chunks: 5}, tap)
	run := func(base string) []byte {
		cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "check.mjs"), base+"/v1")
		cmd.Dir = dir
		out, err := cmd.Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("node against %s: %v\n%s", base, err, stderr)
		}
		return out
	}
	direct := run(f.incumbent.URL)
	proxied := run(f.front.URL)
	if string(direct) != string(proxied) {
		t.Fatalf("the openai client saw different content:\ndirect:  %s\nproxied: %s", direct, proxied)
	}
	var got struct {
		ChatText       string            `json:"chatText"`
		ChatChunks     []json.RawMessage `json:"chatChunks"`
		ResponsesText  string            `json:"responsesText"`
		ResponsesEvent []json.RawMessage `json:"responsesEvents"`
	}
	if err := json.Unmarshal(direct, &got); err != nil {
		t.Fatal(err)
	}
	if got.ChatText == "" || len(got.ChatChunks) < 5 || got.ResponsesText == "" || len(got.ResponsesEvent) < 5 {
		t.Fatalf("the script saw too little: %s", direct)
	}
	waitFor(t, "4 mirrored exchanges", func() bool { return len(tap.all()) == 4 })
	for _, ex := range tap.all() {
		if ex.Response.Content == "" {
			t.Errorf("exchange %s mirrored without the answer", ex.RequestID)
		}
	}
}
