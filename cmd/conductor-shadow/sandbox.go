package main

import (
	"context"

	"github.com/conductor-shadow/conductor-shadow/eval"
)

// readyCodeRefused is /readyz's detail when code graders are refused: fixed
// words, the reason goes to the server log.
const readyCodeRefused = "refused: no OS sandbox for code graders (see server log); code cases are graded as errors"

// checkCodeSandbox finds out at start whether code graders can run here (the
// bubblewrap sandbox of suite.code) and logs the answer: the sandbox in use,
// or why every code grade will be a grader error. The refusal is also a
// detail of /readyz (the server stays ready: only code grading is off).
func (s *server) checkCodeSandbox(ctx context.Context) {
	g, err := eval.NewCodeGrader(s.cfg.Suite.Code)
	if err == nil {
		err = g.Check(ctx)
	}
	if err != nil {
		s.codeNote = readyCodeRefused
		s.log.Warn("code graders refused: test programs run only in an OS sandbox, and none can be made here", "err", err)
		return
	}
	s.log.Info("code grader sandbox ready", "sandbox", g.Sandbox())
}
