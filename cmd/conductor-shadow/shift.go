package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/conductor-shadow/conductor-shadow/cmd/internal/platform"
	"github.com/conductor-shadow/conductor-shadow/eval"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// shiftCmd is `conductor-shadow shift`: the regression sets in use against the
// live traffic's segment mix.
func shiftCmd(load platform.Loader) *cobra.Command {
	var (
		sets   []string
		window time.Duration
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "shift",
		Short: "Compare the segment mix of live traffic with the regression sets' (PSI, chi-square) and flag a set that no longer represents production",
		Long: `For each regression set (--set, default: the suite's set and the scheduled suites' sets),
segments every case (language, table, code, length bucket) and compares the mix with the
live requests received in the last --window: population stability index per dimension
(Siddiqi 2006; flag at PSI >= 0.25) and Pearson's chi-square test, plus the share of live
prompts that are mostly words the regression sets do not hold. Exit status 0 either way;
the output says which sets are flagged.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := load()
			if err != nil {
				return err
			}
			if window <= 0 {
				return fmt.Errorf("shift: --window must be positive, got %v", window)
			}
			if len(sets) == 0 {
				sets = setsInUse(cfg)
			}
			if len(sets) == 0 {
				return fmt.Errorf("shift: no regression set: give --set or configure suite.set")
			}
			ctx := cmd.Context()
			// While a server holds the store, the live mix comes from it
			// (POST /api/segment-mix); the sets are read here.
			t, err := resolveStore(cmd, cfg)
			if err != nil {
				return err
			}
			var an store.SegmentReader
			if t.Server {
				an = remoteSegments{serverAPI(cfg, t, 5*time.Minute)}
			} else {
				st, _, err := platform.OpenExistingStore(ctx, cfg)
				if err != nil {
					return fmt.Errorf("shift: %w", err)
				}
				defer st.Close()
				if an = store.NewRoles(st).SegmentReader; an == nil {
					return fmt.Errorf("shift: %w", store.NotSupported("store.SegmentReader"))
				}
			}
			to := time.Now().UTC()
			var reports []any
			for _, p := range sets {
				set, err := eval.LoadSet(p)
				if err != nil {
					return fmt.Errorf("shift: %w", err)
				}
				r, err := eval.ShiftOf(ctx, an, set, to.Add(-window), to)
				if err != nil {
					return err
				}
				if asJSON {
					reports = append(reports, r)
					continue
				}
				fmt.Fprint(cmd.OutOrStdout(), r.Markdown())
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(reports)
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&sets, "set", nil, "regression-set JSONL file (repeatable; default: the sets in use)")
	cmd.Flags().DurationVar(&window, "window", 7*24*time.Hour, "live traffic received within this long")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the reports as JSON")
	cmd.Flags().Bool("local", false, "open the store here instead of asking the running server (refused while a server holds it)")
	return platform.WithStore(cmd, platform.AccessEither)
}

// remoteSegments reads the live segment mix from a running server's
// POST /api/segment-mix: store.SegmentReader over the API.
type remoteSegments struct{ c *apiClient }

func (r remoteSegments) SegmentMix(ctx context.Context, q store.SegmentMixQuery) ([]store.SegmentCount, error) {
	var res segmentMixResponse
	if err := r.c.post(ctx, "/api/segment-mix", segmentMixRequest{From: q.From, To: q.To, App: q.App}, &res); err != nil {
		return nil, fmt.Errorf("shift: segment mix: %w", err)
	}
	return res.Segments, nil
}
