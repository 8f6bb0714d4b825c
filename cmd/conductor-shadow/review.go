package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/spf13/cobra"

	"github.com/conductor-shadow/conductor-shadow/cmd/internal/platform"
	"github.com/conductor-shadow/conductor-shadow/eval"
	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/web"
)

// reviewExportPath is the API route of `review export`.
const reviewExportPath = "/api/review/export"

// Trailers of GET /api/review/export: what the stream held and what it left out.
const (
	trailerPairs   = "X-Review-Pairs"
	trailerLabels  = "X-Review-Labels"
	trailerSkipped = "X-Review-Skipped"
)

// reviewQueryOf reads the export's scope: ?suite_run=ID or ?live=1
// (web.ParseReviewScope, as the review page reads it).
func reviewQueryOf(q url.Values) (store.ReviewedQuery, error) {
	suiteRun, live, err := web.ParseReviewScope(q)
	return store.ReviewedQuery{SuiteRunID: suiteRun, Live: live}, err
}

// reviewExport serves GET /api/review/export: the reviewed pairs as JSON
// Lines (eval.LabelledPair, application/x-ndjson), optionally of one suite
// run (?suite_run=) or of live traffic (?live=1); the trailers count the
// lines, the labels and the reviewed pairs left out because their answers
// are no longer stored. 501 without the store role, 400 for a bad scope.
func (a *api) reviewExport(c *gin.Context) {
	if a.reviews == nil {
		c.JSON(http.StatusNotImplemented, gin.H{"error": store.NotSupported("store.ReviewReader").Error()})
		return
	}
	q, err := reviewQueryOf(c.Request.URL.Query())
	if err != nil {
		c.JSON(http.StatusBadRequest, gin.H{"error": err.Error()})
		return
	}
	h := c.Writer.Header()
	h.Set("Content-Type", "application/x-ndjson")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Trailer", trailerPairs+", "+trailerLabels+", "+trailerSkipped)
	c.Status(http.StatusOK)
	sum, err := eval.ExportReviews(c.Request.Context(), a.reviews, q, c.Writer)
	if err != nil {
		// The status is sent: the missing trailers tell the client the stream is incomplete.
		_ = c.Error(fmt.Errorf("api: review export: %w", err))
		return
	}
	h.Set(trailerPairs, strconv.Itoa(sum.Pairs))
	h.Set(trailerLabels, strconv.Itoa(sum.Labels))
	h.Set(trailerSkipped, strconv.Itoa(sum.Skipped))
}

// download GETs path from the server into w and returns the response's
// trailers. A refused connection wraps platform.ErrNoServer; any status but
// 200 an error with the server's message.
func (c *apiClient) download(ctx context.Context, path string, w io.Writer) (http.Header, error) {
	resp, err := c.do(ctx, http.MethodGet, path, nil, "application/x-ndjson")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(w, resp.Body); err != nil {
		return nil, fmt.Errorf("api %s: read answer: %w", path, err)
	}
	if resp.Trailer.Get(trailerPairs) == "" {
		return nil, fmt.Errorf("api %s: the server's export ended early (see its log)", path)
	}
	return resp.Trailer, nil
}

// reviewCmd is `conductor-shadow review export`.
func reviewCmd(load platform.Loader) *cobra.Command {
	review := &cobra.Command{Use: "review", Short: "Human review of judged pairs"}
	var (
		out, suiteRun string
		live, local   bool
	)
	export := &cobra.Command{
		Use:   "export",
		Short: "Write the reviewed pairs as labelled JSON Lines (prompt, both answers, human labels, judge verdicts) to calibrate judges",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := load()
			if err != nil {
				return err
			}
			if live && suiteRun != "" {
				return errors.New("review export: --suite-run and --live go apart")
			}
			ctx := cmd.Context()
			q := url.Values{}
			if suiteRun != "" {
				q.Set("suite_run", suiteRun)
			}
			if live {
				q.Set("live", "1")
			}
			write := func(fn func(w io.Writer) error) error {
				if out == "" || out == "-" {
					bw := bufio.NewWriter(cmd.OutOrStdout())
					if err := fn(bw); err != nil {
						return err
					}
					return bw.Flush()
				}
				return writeFileWith(out, fn)
			}
			var sum eval.ExportSummary
			// The store the flags name (platform.ResolveStore): a running
			// server that holds it answers; else the folder is opened here.
			t, err := resolveStore(cmd, cfg)
			if err != nil {
				return err
			}
			if t.Server {
				client := serverAPI(cfg, t, 10*time.Minute)
				var trailer http.Header
				if err := write(func(w io.Writer) error {
					var err error
					trailer, err = client.download(ctx, reviewExportPath+"?"+q.Encode(), w)
					return err
				}); err != nil {
					return err
				}
				sum.Pairs, _ = strconv.Atoi(trailer.Get(trailerPairs))
				sum.Labels, _ = strconv.Atoi(trailer.Get(trailerLabels))
				sum.Skipped, _ = strconv.Atoi(trailer.Get(trailerSkipped))
				printExport(cmd.ErrOrStderr(), sum, out)
				return nil
			}
			st, _, err := platform.OpenExistingStore(ctx, cfg)
			if err != nil {
				return fmt.Errorf("review export: %w", err)
			}
			defer st.Close()
			rd := store.NewRoles(st).ReviewReader
			if rd == nil {
				return fmt.Errorf("review export: %w", store.NotSupported("store.ReviewReader"))
			}
			rq, err := reviewQueryOf(q)
			if err != nil {
				return err
			}
			if err := write(func(w io.Writer) error {
				var err error
				sum, err = eval.ExportReviews(ctx, rd, rq, w)
				return err
			}); err != nil {
				return err
			}
			printExport(cmd.ErrOrStderr(), sum, out)
			return nil
		},
	}
	export.Flags().StringVar(&out, "out", "", "JSONL file to write (default: stdout)")
	export.Flags().StringVar(&suiteRun, "suite-run", "", "only the pairs of this suite run")
	export.Flags().BoolVar(&live, "live", false, "only live traffic's pairs")
	export.Flags().BoolVar(&local, "local", false, "open the store here instead of asking the running server (refused while a server holds it)")
	review.AddCommand(platform.WithStore(export, platform.AccessEither))
	return review
}

func printExport(w io.Writer, s eval.ExportSummary, out string) {
	if out == "" {
		out = "stdout"
	}
	fmt.Fprintf(w, "review export: %d reviewed pairs, %d human labels to %s", s.Pairs, s.Labels, out)
	if s.Skipped > 0 {
		fmt.Fprintf(w, "; left out %d reviewed pairs whose answers are no longer stored (retention or forget)", s.Skipped)
	}
	fmt.Fprintln(w)
}
