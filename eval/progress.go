package eval

import (
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// SuiteProgress is a suite run's state after one more finished case, as
// SuiteOptions.OnProgress gets it and the suite-run API streams it (one NDJSON
// line per case).
type SuiteProgress struct {
	SuiteRunID string  `json:"suite_run_id"`
	Done       int     `json:"done"`     // cases finished
	Total      int     `json:"total"`    // cases the run holds
	CostUSD    float64 `json:"cost_usd"` // cost so far, USD, all pipelines
	Errors     int     `json:"errors"`   // failed runs plus grader errors so far
}

// progress counts a suite run's finished cases and hands each new state to
// the printer (SuiteOptions.Progress) and to SuiteOptions.OnProgress, in
// order.
type progress struct {
	mu      sync.Mutex
	state   SuiteProgress
	printer *ProgressPrinter
	on      func(SuiteProgress)
}

// newProgress returns nil when there is neither a writer nor a callback. bar
// forces (true) or forbids (false) the live bar on w; nil decides by whether
// w is a terminal.
func newProgress(w io.Writer, id string, total int, bar *bool, on func(SuiteProgress)) *progress {
	if w == nil && on == nil {
		return nil
	}
	return &progress{state: SuiteProgress{SuiteRunID: id, Total: total}, printer: NewProgressPrinter(w, bar), on: on}
}

// add counts one finished case with its outcomes.
func (p *progress) add(outs []Outcome) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.state.Done++
	for _, o := range outs {
		p.state.CostUSD += o.CostUSD
		if o.Status != "ok" || o.GraderError != "" {
			p.state.Errors++
		}
	}
	p.printer.Update(p.state)
	if p.on != nil {
		p.on(p.state)
	}
}

// ProgressPrinter draws a suite run's progress on a writer: on a terminal
// (or with the bar forced) a live bar with count, ETA, cost so far (USD, all
// pipelines) and errors (failed runs plus grader errors); on any other writer
// one line each time another 10% of cases is done. The CLI draws both a
// local suite run and one streamed from the server with it.
type ProgressPrinter struct {
	mu         sync.Mutex
	w          io.Writer
	useBar     bool
	bar        *progressbar.ProgressBar
	lastDecile int
}

// NewProgressPrinter returns nil (whose Update does nothing) for a nil w.
// bar forces (true) or forbids (false) the live bar; nil decides by whether
// w is a terminal.
func NewProgressPrinter(w io.Writer, bar *bool) *ProgressPrinter {
	if w == nil {
		return nil
	}
	p := &ProgressPrinter{w: w, useBar: isTerminal(w)}
	if bar != nil {
		p.useBar = *bar
	}
	return p
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Update draws s; states of one suite run arrive in order of Done.
func (p *ProgressPrinter) Update(s SuiteProgress) {
	if p == nil || s.Total <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.useBar {
		if p.bar == nil {
			p.bar = progressbar.NewOptions(s.Total,
				progressbar.OptionSetWriter(p.w),
				progressbar.OptionSetDescription("suite "+s.SuiteRunID),
				progressbar.OptionShowCount(),
				progressbar.OptionSetPredictTime(true),
				progressbar.OptionSetElapsedTime(true),
				progressbar.OptionShowDescriptionAtLineEnd(),
				progressbar.OptionSetWidth(30),
				progressbar.OptionThrottle(0),
			)
		}
		p.bar.Describe(fmt.Sprintf("cost $%.4f, %d errors", s.CostUSD, s.Errors))
		_ = p.bar.Set(s.Done)
		if s.Done == s.Total {
			_ = p.bar.Finish()
			fmt.Fprintln(p.w)
		}
		return
	}
	decile := s.Done * 10 / s.Total
	if decile <= p.lastDecile {
		return
	}
	p.lastDecile = decile
	fmt.Fprintf(p.w, "suite %s: %d/%d cases (%d%%), cost $%.4f, %d errors\n", s.SuiteRunID, s.Done, s.Total, s.Done*100/s.Total, s.CostUSD, s.Errors)
}
