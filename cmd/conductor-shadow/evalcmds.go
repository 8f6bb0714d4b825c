package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/conductor-shadow/conductor-shadow/cmd/internal/platform"
	"github.com/conductor-shadow/conductor-shadow/eval/rewards"
	"github.com/conductor-shadow/conductor-shadow/eval/setbuild"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// setCmd is `conductor-shadow set build`: a regression set from captured
// traffic. It opens the store here (stop `serve` first when the store is
// the embedded one).
func setCmd(load platform.Loader) *cobra.Command {
	set := &cobra.Command{Use: "set", Short: "Regression sets"}
	var (
		n      int
		seed   uint64
		grader string
		out    string
		since  time.Duration
		strat  string
	)
	build := &cobra.Command{
		Use:   "build",
		Short: "Make a regression set (JSONL) from a stratified sample of captured requests, the incumbent's answers as references to review",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := load()
			if err != nil {
				return err
			}
			if out == "" {
				return errors.New("set build: --out is required")
			}
			ctx := cmd.Context()
			st, h, err := openEvalHistory(cmd, cfg)
			if err != nil {
				return err
			}
			defer st.Close()
			q := store.SetSourceQuery{Limit: store.MaxSetSourceLimit}
			if since > 0 {
				q.Since = time.Now().Add(-since)
			}
			src, err := h.ListSetSources(ctx, q)
			if err != nil {
				return err
			}
			by, err := setbuild.ParseStratifyBy(strat)
			if err != nil {
				return err
			}
			lines, strata, err := setbuild.Build(src, setbuild.Options{N: n, Seed: seed, Grader: grader, StratifyBy: by})
			if err != nil {
				return err
			}
			if err := writeFileWith(out, func(w io.Writer) error { return setbuild.Write(w, lines) }); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "set %s: %d cases from %d captured requests\n", out, len(lines), len(src))
			empty := 0
			for _, s := range strata {
				fmt.Fprintf(w, "  %-60s available %5d picked %4d\n", s.Key, s.Available, s.Picked)
				if s.Picked == 0 {
					empty++
				}
			}
			if empty > 0 {
				fmt.Fprintf(w, "%d of %d strata got no case: at n=%d their share of the live traffic rounds to 0 (raise --n to cover them)\n",
					empty, len(strata), n)
			}
			fmt.Fprintf(w, "review each reference (the incumbent's answer) and set reference_status to %q or %q\n",
				setbuild.ReferenceAccepted, setbuild.ReferenceCorrected)
			return nil
		},
	}
	build.Flags().IntVar(&n, "n", 200, "cases to pick (100-300 is usual)")
	build.Flags().Uint64Var(&seed, "seed", 1, "sampling seed")
	build.Flags().StringVar(&grader, "grader", "pairwise", "grader of every case (pairwise, judge, exact, regex, ...)")
	build.Flags().StringVar(&out, "out", "", "JSONL file to write, e.g. regression-sets/traffic-200.jsonl")
	build.Flags().DurationVar(&since, "since", 0, "only requests received within this long (0: all)")
	build.Flags().StringVar(&strat, "stratify-by", "app,category", "columns of the strata, from "+strings.Join(setbuild.StratifyColumns, ",")+
		"; e.g. language,has_table draws a set with the live segment mix")
	set.AddCommand(platform.WithStore(build, platform.AccessHere))
	return set
}

// exportCmd is `conductor-shadow export rewards`.
func exportCmd(load platform.Loader) *cobra.Command {
	export := &cobra.Command{Use: "export", Short: "Export stored data"}
	var (
		suiteRuns []string
		out       string
	)
	rw := &cobra.Command{
		Use:   "rewards",
		Short: "Write JSONL of (task, conductor prompt, raw plan, reward 0/0.5/1) from stored suite runs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := load()
			if err != nil {
				return err
			}
			if len(suiteRuns) == 0 {
				return errors.New("export rewards: name at least one --suite-run")
			}
			ctx := cmd.Context()
			st, h, err := openEvalHistory(cmd, cfg)
			if err != nil {
				return err
			}
			defer st.Close()
			var rows []rewards.Row
			var total rewards.Summary
			for _, id := range suiteRuns {
				if _, err := st.GetSuiteRun(ctx, id); err != nil {
					return err
				}
				d := rewards.SuiteData{SuiteRunID: id}
				if d.Cases, err = h.ListCases(ctx, id); err != nil {
					return err
				}
				if d.Runs, err = h.ListSuiteRunRuns(ctx, id); err != nil {
					return err
				}
				if d.Steps, err = h.ListConductorSteps(ctx, id); err != nil {
					return err
				}
				if d.Scores, err = h.ListSuiteScores(ctx, id); err != nil {
					return err
				}
				r, s := rewards.Build(d)
				rows = append(rows, r...)
				total.Rows += s.Rows
				total.Correct += s.Correct
				total.Wrong += s.Wrong
				total.Unparsable += s.Unparsable
				total.GraderErrors += s.GraderErrors
				total.NoScore += s.NoScore
			}
			write := func(w io.Writer) error { return rewards.Write(w, rows) }
			if out == "" || out == "-" {
				if err := write(cmd.OutOrStdout()); err != nil {
					return err
				}
			} else if err := writeFileWith(out, write); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "rewards: %d rows (%d correct, %d wrong, %d unparsable); left out %d with grader errors, %d ungraded\n",
				total.Rows, total.Correct, total.Wrong, total.Unparsable, total.GraderErrors, total.NoScore)
			return nil
		},
	}
	rw.Flags().StringSliceVar(&suiteRuns, "suite-run", nil, "suite run id (repeatable)")
	rw.Flags().StringVar(&out, "out", "", "JSONL file to write (default: stdout)")
	export.AddCommand(platform.WithStore(rw, platform.AccessHere))
	return export
}

// writeFileWith writes path through fn, leaving no partial file on error.
func writeFileWith(path string, fn func(io.Writer) error) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := fn(f); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// openEvalHistory opens the store here for cmd (these commands read many
// rows, so they do not go through a running server: platform.AccessHere
// refuses a server that holds the store) with its suite-run history
// queries; the caller closes st.
func openEvalHistory(cmd *cobra.Command, cfg platform.Config) (st store.Store, h store.EvalHistory, err error) {
	if _, err := resolveStore(cmd, cfg); err != nil {
		return nil, nil, err
	}
	st, _, err = platform.OpenExistingStore(cmd.Context(), cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", commandName(cmd), err)
	}
	if h = store.NewRoles(st).EvalHistory; h == nil {
		st.Close()
		return nil, nil, fmt.Errorf("%s: %w", commandName(cmd), store.NotSupported("store.EvalHistory"))
	}
	return st, h, nil
}
