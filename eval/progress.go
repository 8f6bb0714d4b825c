package eval

import (
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress reports a suite run's progress to SuiteOptions.Progress: on a
// terminal a live bar with count, ETA, cost so far (USD, all pipelines) and
// errors (failed runs plus grader errors); on any other writer one line each
// time another 10% of cases is done.
type progress struct {
	mu         sync.Mutex
	w          io.Writer
	bar        *progressbar.ProgressBar
	id         string
	total      int
	done       int
	lastDecile int
	costUSD    float64
	errors     int
}

// newProgress returns nil when w is nil. bar forces (true) or forbids (false)
// the live bar; nil decides by whether w is a terminal.
func newProgress(w io.Writer, id string, total int, bar *bool) *progress {
	if w == nil {
		return nil
	}
	p := &progress{w: w, id: id, total: total}
	useBar := isTerminal(w)
	if bar != nil {
		useBar = *bar
	}
	if useBar {
		p.bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription("suite "+id),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionShowDescriptionAtLineEnd(),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(0),
		)
	}
	return p
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// add counts one finished case with its outcomes.
func (p *progress) add(outs []Outcome) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	for _, o := range outs {
		p.costUSD += o.CostUSD
		if o.Status != "ok" || o.GraderError != "" {
			p.errors++
		}
	}
	if p.bar != nil {
		p.bar.Describe(fmt.Sprintf("cost $%.4f, %d errors", p.costUSD, p.errors))
		_ = p.bar.Add(1)
		if p.done == p.total {
			_ = p.bar.Finish()
			fmt.Fprintln(p.w)
		}
		return
	}
	decile := p.done * 10 / p.total
	if decile <= p.lastDecile {
		return
	}
	p.lastDecile = decile
	fmt.Fprintf(p.w, "suite %s: %d/%d cases (%d%%), cost $%.4f, %d errors\n", p.id, p.done, p.total, p.done*100/p.total, p.costUSD, p.errors)
}
