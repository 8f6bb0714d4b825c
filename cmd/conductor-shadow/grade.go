package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/conductor-shadow/conductor-shadow/cmd/internal/platform"
	"github.com/conductor-shadow/conductor-shadow/eval"
	"github.com/conductor-shadow/conductor-shadow/eval/judge"
	"github.com/conductor-shadow/conductor-shadow/shadow"
)

// gradeLine is one line of `grade` output: the case id, the verdict, the
// answer the grader read and why.
type gradeLine struct {
	ID        string `json:"id"`
	Passed    bool   `json:"passed"`
	Extracted string `json:"extracted"`
	Reason    string `json:"reason"`
}

// gradeCmd grades recorded outputs: FILE is a regression set (JSONL) whose
// cases each carry an extra "output" key.
func gradeCmd(load platform.Loader) *cobra.Command {
	var casesPath string
	cmd := &cobra.Command{
		Use:   "grade --cases FILE",
		Short: "Grade recorded outputs: FILE is JSONL of regression-set cases, each with an extra \"output\"; prints one JSON line per case",
		Long: `Grade recorded outputs with the platform's graders, to see why a case passed or failed.

FILE is a regression set (JSONL, one case per line: id, input, reference, grader, ...)
where every case also carries "output", the answer to grade. For each case one JSON line
is printed: {"id", "passed", "extracted", "reason"} — the answer the grader read and its
explanation. Cases graded "judge" or "pairwise" call the judge worker of the config
(suite.judge); cases graded "code" run in the configured sandbox (suite.code: interpreter,
timeout, memory cap). Exits 1 when a case has no output or a grader could not judge it (the
reason says why); every other case is still printed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if casesPath == "" {
				return errors.New("grade: --cases FILE is required")
			}
			cfg, err := load()
			if err != nil {
				return err
			}
			set, err := eval.LoadSet(casesPath)
			if err != nil {
				return fmt.Errorf("grade: %w", err)
			}
			pool, err := shadow.NewPool(cfg.Shadow)
			if err != nil {
				return fmt.Errorf("grade: %w", err)
			}
			defer pool.Close()
			graders, err := judge.Graders(pool, cfg.Suite.Judge, cfg.Suite.Code)
			if err != nil {
				return fmt.Errorf("grade: %w", err)
			}
			return gradeCases(cmd, set, graders, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&casesPath, "cases", "", "JSONL file of regression-set cases, each with an extra \"output\"")
	return platform.WithStore(cmd, platform.AccessNone)
}

// gradeCases grades every case of set and writes one gradeLine per case.
func gradeCases(cmd *cobra.Command, set *eval.Set, graders func(string) (eval.Grader, error), w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	cache := map[string]eval.Grader{}
	failed := 0
	for _, c := range set.Cases {
		line := gradeLine{ID: c.ID}
		output, ok := c.Extra["output"].(string)
		switch {
		case !ok:
			failed++
			line.Reason = fmt.Sprintf("case %s has no \"output\" string to grade", c.ID)
		default:
			g, ok := cache[c.Grader]
			if !ok {
				var err error
				if g, err = graders(c.Grader); err != nil {
					return fmt.Errorf("grade: case %s: %w", c.ID, err)
				}
				cache[c.Grader] = g
			}
			gr := g.Grade(cmd.Context(), c, output)
			line.Passed, line.Extracted, line.Reason = gr.Passed, gr.Extracted, gr.Explanation
			if gr.Err != nil {
				failed++
				line.Passed, line.Reason = false, "grader error: "+gr.Err.Error()
			}
		}
		if err := enc.Encode(line); err != nil {
			return fmt.Errorf("grade: write: %w", err)
		}
	}
	if failed > 0 {
		return fmt.Errorf("grade: %d of %d cases could not be graded (see their reason)", failed, len(set.Cases))
	}
	return nil
}
