package platform

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCandidatePipelinesAndBudgetFromYAML loads a config with candidate_pipelines
// and a budget section and builds every candidate: the string candidates and the
// new kinds shadow side by side.
func TestCandidatePipelinesAndBudgetFromYAML(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	yml := `
pipelines:
  incumbent: gpt-5
  candidates: [conductor, "single:gpt-5"]
  candidate_pipelines:
    - {name: moa-3, kind: moa, workers: [gemma-3-27b, qwen3-32b, claude-sonnet-4], aggregator: gpt-5}
    - {kind: self_refine, workers: [gemini-2.5-pro], rounds: 1}
    - {kind: chain, steps: [{worker: qwen3-32b, prompt: "Draft: {question}"}, {worker: gpt-5, prompt: "Final: {question}", access: all}]}
    - {name: fugu, kind: blackbox, workers: [gpt-5]}
shadow:
  budget:
    per_run: {deadline: 30s, max_cost_usd: 0.05, max_steps: 8}
    fallback: gpt-5
    daily_usd: 10
`
	if err := os.WriteFile(path, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(path, map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := BuildPipelines(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var names []string
	for _, c := range p.Candidates {
		names = append(names, c.Name())
	}
	want := "conductor,single:gpt-5,moa-3,self_refine:gemini-2.5-pro,chain:qwen3-32b>gpt-5,fugu"
	if got := strings.Join(names, ","); got != want {
		t.Errorf("candidates %s, want %s", got, want)
	}

	bad := strings.Replace(yml, "kind: moa", "kind: magic", 1)
	if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfig(path, map[string]string{}); err == nil || !strings.Contains(err.Error(), `"magic"`) {
		t.Errorf("unknown kind: err = %v", err)
	}
}
