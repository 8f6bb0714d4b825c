package main

import (
	"strings"
	"testing"

	"github.com/conductor-shadow/conductor-shadow/cmd/internal/platform"
)

// The default config judges with the incumbent's model: serve warns at start,
// naming the judge, its family and the pipelines that share it.
func TestJudgeFamilyWarnings(t *testing.T) {
	cfg := platform.NewDefaultConfig()
	ws := judgeFamilyWarnings(cfg)
	if len(ws) != 2 || !strings.Contains(ws[0], "suite and live judge gpt-5 (gpt-5, family openai) shares its model family with the incumbent gpt-5 (gpt-5)") ||
		!strings.Contains(ws[1], "the candidate conductor (a conductor may call any worker of the pool) (gpt-5") {
		t.Errorf("default config: %q", ws)
	}
	cfg.Suite.Judge.Worker = "gemini-2.5-pro"
	cfg.Pipelines.Candidates = []string{"single:claude-sonnet-4"}
	if ws := judgeFamilyWarnings(cfg); len(ws) != 0 {
		t.Errorf("a judge of another family: %q", ws)
	}
	cfg.Suite.Judge.Worker = "gemma-3-27b"
	if ws := judgeFamilyWarnings(cfg); len(ws) != 0 {
		t.Errorf("gemma judge, gpt-5 incumbent, claude candidate: %q", ws)
	}
	cfg.Pipelines.Candidates = []string{"single:gemini-2.5-pro"}
	if ws := judgeFamilyWarnings(cfg); len(ws) != 1 || !strings.Contains(ws[0], "family google") {
		t.Errorf("gemma judge, gemini candidate: %q", ws)
	}
	// Live judging with its own worker is checked on its own.
	cfg.Pipelines.Candidates = []string{"single:claude-sonnet-4"}
	cfg.Judge.Live.Worker = "claude-sonnet-4"
	if ws := judgeFamilyWarnings(cfg); len(ws) != 1 || !strings.HasPrefix(ws[0], "live judge claude-sonnet-4 (claude-sonnet-4, family anthropic) shares its model family with the candidate single:claude-sonnet-4") {
		t.Errorf("live judge of the candidate's family: %q", ws)
	}
	cfg.Judge.Live.Share = 0
	if ws := judgeFamilyWarnings(cfg); len(ws) != 0 {
		t.Errorf("live judging off: %q", ws)
	}
}
