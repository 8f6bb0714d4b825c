// Package progress draws a command's progress bar on stderr: only when stderr
// is a terminal or the command was given --progress, so logs, pipes and
// --json output never carry one. The bar is schollz/progressbar's.
package progress

import (
	"io"
	"os"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// FlagUsage is the usage line of every command's --progress flag.
const FlagUsage = "draw the progress bar on stderr even when it is not a terminal"

// Wanted reports whether a bar goes to w: forced (--progress) or w is a
// terminal.
func Wanted(w io.Writer, forced bool) bool {
	if forced {
		return true
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Bar is one progress bar; a nil *Bar (no bar wanted) does nothing.
type Bar struct {
	w io.Writer
	b *progressbar.ProgressBar
}

// New returns a bar over total steps (total < 0: unknown, a spinner) titled
// what, written to w, or nil when on is false.
func New(w io.Writer, on bool, total int64, what string) *Bar {
	if !on {
		return nil
	}
	return &Bar{w: w, b: progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionShowDescriptionAtLineEnd(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(0),
		progressbar.OptionOnCompletion(func() { _, _ = io.WriteString(w, "\n") }),
	)}
}

// Add counts n more steps done; safe for concurrent use.
func (b *Bar) Add(n int) {
	if b != nil {
		_ = b.b.Add(n)
	}
}

// Describe replaces the text after the bar (counts so far).
func (b *Bar) Describe(s string) {
	if b != nil {
		b.b.Describe(s)
	}
}

// Finish completes the bar and ends its line; a stopped run's bar ends where
// it stood.
func (b *Bar) Finish() {
	if b != nil && !b.b.IsFinished() {
		_ = b.b.Exit()
		_, _ = io.WriteString(b.w, "\n")
	}
}
