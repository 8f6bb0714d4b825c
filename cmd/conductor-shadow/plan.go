package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/conductor-shadow/conductor-shadow/cmd/internal/platform"
	"github.com/conductor-shadow/conductor-shadow/shadow"
)

// maxPlanBytes caps the conductor text `plan parse` reads from stdin.
const maxPlanBytes = 16 << 20

func planCmd() *cobra.Command {
	plan := &cobra.Command{Use: "plan", Short: "Conductor workflows"}
	var workers int
	parse := &cobra.Command{
		Use:   "parse [--workers N]",
		Short: "Parse a conductor's output from stdin and print the workflow as JSON",
		Long: `Parse a conductor's output (the paper's model_id / subtasks / access_list lists after
free text, or the JSON forms) read from stdin, the way the conductor pipeline does, and
print the workflow as JSON: {"steps":[{"worker","model_id","subtask","access"}]}.

With --workers N the plan is also checked against a pool of N workers (Models 0..N-1,
shown as "model-0" ...) and the step limit of the paper (5 steps). On a plan that cannot
be used it exits 1 with an error naming the problem kind (unparsable, unequal_lengths,
forward_reference, model_out_of_range, ...) and where it is: the list, step or index,
and for syntax errors the offset with its line and column.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if workers < 0 {
				return fmt.Errorf("plan parse: --workers must be >= 0, got %d", workers)
			}
			b, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), maxPlanBytes+1))
			if err != nil {
				return fmt.Errorf("plan parse: read stdin: %w", err)
			}
			if len(b) > maxPlanBytes {
				return fmt.Errorf("plan parse: stdin holds more than %d bytes", maxPlanBytes)
			}
			out, err := parsePlanText(string(b), workers)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), out)
			return err
		},
	}
	parse.Flags().IntVar(&workers, "workers", 0, "check model ids against a pool of N workers (0: structure only)")
	plan.AddCommand(platform.WithStore(parse, platform.AccessNone))
	return plan
}

// parsePlanText parses text (and, with workers > 0, resolves it against a pool
// of that many workers) and returns the plan's indented JSON.
func parsePlanText(text string, workers int) (string, error) {
	p, err := shadow.ParsePlan(text)
	if err == nil && workers > 0 {
		pool := make([]string, workers)
		for i := range pool {
			pool[i] = "model-" + strconv.Itoa(i)
		}
		p, err = p.Resolve(pool, "", shadow.DefaultMaxSteps)
	}
	if err != nil {
		var pe *shadow.PlanError
		if errors.As(err, &pe) {
			return "", fmt.Errorf("plan parse: %s: %s", pe.Kind, withLineCol(text, pe.Detail))
		}
		return "", fmt.Errorf("plan parse: %w", err)
	}
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return "", fmt.Errorf("plan parse: encode: %w", err)
	}
	return string(b), nil
}

var offsetRe = regexp.MustCompile(`offset (\d+)`)

// withLineCol adds "(line L, column C)" after every "offset N" in detail, N
// being a byte offset into text; columns count characters from 1.
func withLineCol(text, detail string) string {
	return offsetRe.ReplaceAllStringFunc(detail, func(m string) string {
		n, err := strconv.Atoi(strings.TrimPrefix(m, "offset "))
		if err != nil || n < 0 || n > len(text) {
			return m
		}
		before := text[:n]
		line := strings.Count(before, "\n") + 1
		col := len([]rune(before[strings.LastIndexByte(before, '\n')+1:])) + 1
		return fmt.Sprintf("%s (line %d, column %d)", m, line, col)
	})
}
