package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/spf13/cobra"

	"github.com/conductor-shadow/conductor-shadow/cmd/internal/platform"
	"github.com/conductor-shadow/conductor-shadow/ingest"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// forgetRequest is the body of POST /api/forget.
type forgetRequest struct {
	Subject string `json:"subject"` // the data subject's value as the tap received it
}

// forgetResponse answers POST /api/forget: the rows removed per table and the
// audit entry; Warning is set when no stored request carried the subject's hash.
type forgetResponse struct {
	store.ForgetReport
	Warning string `json:"warning,omitempty"`
}

// forgetter erases a data subject's rows: it hashes the subject with the PII
// secret (as the tap does) and asks the store to delete that hash's rows.
type forgetter struct {
	eraser     store.SubjectEraser // nil: the store cannot erase (501)
	hash       func(subject string) string
	sweepAfter time.Duration // wait before the second sweep (forgetSweepAfter)
}

// forgetSweepMargin is added to the writer's MaxWriteDelay: room for the
// INSERTs themselves, which that bound does not count.
const forgetSweepMargin = time.Second

// forgetSweepAfter is how long forget waits before its second sweep: the
// longest a record handed to the store writer before the erasure began can
// take to reach the store (store.WriterConfig.MaxWriteDelay) plus
// forgetSweepMargin; 6.65 s with the default writer keys.
func forgetSweepAfter(w store.WriterConfig) time.Duration {
	return w.MaxWriteDelay() + forgetSweepMargin
}

// newForgetter hashes subjects with secret, the PII secret the taps of this
// deployment use (ingest.LoadPIISecret: $<ingest.pii.secret_env>, else the key
// kept in the data folder).
// sweepAfter is the wait before the second sweep (see store.SubjectEraser).
func newForgetter(eraser store.SubjectEraser, secret []byte, sweepAfter time.Duration) *forgetter {
	return &forgetter{eraser: eraser, hash: func(s string) string { return ingest.SubjectHash(secret, s) }, sweepAfter: sweepAfter}
}

func (f *forgetter) forget(ctx context.Context, subject, actor string) (forgetResponse, error) {
	if strings.TrimSpace(subject) == "" {
		return forgetResponse{}, errBadSubject
	}
	if f.eraser == nil {
		return forgetResponse{}, fmt.Errorf("forget: %w", store.NotSupported("store.SubjectEraser"))
	}
	rep, err := f.eraser.ForgetSubject(ctx, f.hash(subject), actor, f.sweepAfter)
	if err != nil {
		return forgetResponse{}, err
	}
	resp := forgetResponse{ForgetReport: rep}
	if rep.Requests == 0 {
		resp.Warning = "no stored request carries this subject's hash; the taps hash subjects with their PII secret (the environment's, else their data folder's pii.key): if theirs differs from this process's, give this one the same"
	}
	return resp, nil
}

var errBadSubject = errors.New("forget: want a non-empty subject")

func (a *api) forgetHandler(c *gin.Context) {
	var req forgetRequest
	if err := c.ShouldBindJSON(&req); err != nil || strings.TrimSpace(req.Subject) == "" {
		c.JSON(http.StatusBadRequest, gin.H{"error": "want a JSON body {\"subject\": \"...\"}"})
		return
	}
	res, err := a.forget.forget(c.Request.Context(), req.Subject, "api "+c.ClientIP())
	if errors.Is(err, store.ErrNotSupported) {
		c.JSON(http.StatusNotImplemented, gin.H{"error": err.Error()})
		return
	}
	if err != nil {
		c.JSON(http.StatusInternalServerError, gin.H{"error": err.Error()})
		return
	}
	c.JSON(http.StatusOK, res)
}

func printForget(w io.Writer, r forgetResponse) {
	fmt.Fprintf(w, "removed: %d requests, %d runs, %d steps, %d scores, %d shadow work rows (%d of these rows by the second sweep)\naudit entry %s at %s\n",
		r.Requests, r.Runs, r.Steps, r.Scores, r.Work, r.Swept, r.AuditID, r.At.Format(time.RFC3339))
	if r.Warning != "" {
		fmt.Fprintln(w, "warning:", r.Warning)
	}
}

func forgetCmd(load platform.Loader) *cobra.Command {
	var (
		subject string
		local   bool
	)
	cmd := &cobra.Command{
		Use:   "forget --subject VALUE",
		Short: "Delete every stored row of one data subject's requests (all tables) and record an audit entry",
		Long: `Delete every stored row of one data subject's requests (all tables) and record an audit entry.

The subject is recorded as forgotten first, so shadow workers drop the records of
its requests that are still being shadowed (counted as dropped "forgotten"). After
the first deletion, forget waits for the store writer's longest delay
(writer.flush_interval plus its retry backoffs, plus 1 s; 6.65 s by default) and
sweeps again for rows that arrived meanwhile ("second sweep" in the printout).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if strings.TrimSpace(subject) == "" {
				return errBadSubject
			}
			cfg, err := load()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			// The subject is erased from the store the flags name, never from
			// whatever server answers (platform.ResolveStore).
			t, err := resolveStore(cmd, cfg)
			if err != nil {
				return err
			}
			var res forgetResponse
			if t.Server {
				if err := serverAPI(cfg, t, 5*time.Minute).post(ctx, "/api/forget", forgetRequest{Subject: subject}, &res); err != nil {
					return err
				}
				printForget(cmd.OutOrStdout(), res)
				return nil
			}
			// The folder is checked before LoadPIISecret, which would
			// create a key in it.
			if err := platform.CheckStoreFolder(cfg); err != nil {
				return fmt.Errorf("forget: %w", err)
			}
			secret, err := ingest.LoadPIISecret(cfg.Ingest.PII.SecretEnv, cfg.Store.Path)
			if err != nil {
				return fmt.Errorf("forget: %w", err)
			}
			st, _, err := platform.OpenExistingStore(ctx, cfg)
			if err != nil {
				return fmt.Errorf("forget: %w", err)
			}
			defer st.Close()
			res, err = newForgetter(store.NewRoles(st).SubjectEraser, secret.Key, forgetSweepAfter(cfg.Writer)).forget(ctx, subject, "cli")
			if err != nil {
				return err
			}
			printForget(cmd.OutOrStdout(), res)
			return nil
		},
	}
	cmd.Flags().StringVar(&subject, "subject", "", "the data subject's value (as sent in the exchange's subject field or the X-Conductor-Shadow-Subject header)")
	cmd.Flags().BoolVar(&local, "local", false, "open the store here instead of asking the running server (refused while a server holds it)")
	return platform.WithStore(cmd, platform.AccessEither)
}
