package web

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/conductor-shadow/conductor-shadow/eval"
	"github.com/conductor-shadow/conductor-shadow/eval/shift"
	"github.com/conductor-shadow/conductor-shadow/store"
)

const navShift = "shift"

// defaultShiftWindow is the live traffic the shift page looks at by default.
const defaultShiftWindow = 7 * 24 * time.Hour

func (u urls) shift() string { return u.base + "/shift" }

// shiftView is the shift page: each regression set in use against the live
// traffic's segment mix.
type shiftView struct {
	Meta      pageMeta
	Window    time.Duration
	WindowArg string // the window as typed, for the form
	Supported bool   // the store can read the segment mix
	Sets      []shiftSet
}

// shiftSet is one set's comparison, or why it is missing.
type shiftSet struct {
	Path   string
	Report *shift.Report
	Error  string
}

// shift renders the shift page: every configured set (Config.ShiftSets)
// against the live requests of the last `window` (Go duration, default 168h).
func (s *server) shift(c *gin.Context) {
	v := shiftView{Meta: s.meta("Shift", navShift), Window: defaultShiftWindow, WindowArg: "168h"}
	if w := strings.TrimSpace(c.Query("window")); w != "" {
		d, err := time.ParseDuration(w)
		if err != nil || d <= 0 {
			s.fail(c, http.StatusBadRequest, fmt.Sprintf("Bad window %q: give a positive duration such as 24h or 168h.", w), nil)
			return
		}
		v.Window, v.WindowArg = d, w
	}
	an := s.read.Segments
	v.Supported = true
	{
		to := time.Now().UTC()
		for _, p := range s.cfg.ShiftSets {
			ss := shiftSet{Path: p}
			set, err := eval.LoadSet(p)
			if err == nil {
				ss.Report, err = eval.ShiftOf(c.Request.Context(), an, set, to.Add(-v.Window), to)
			}
			if err != nil {
				ss.Error = err.Error()
			}
			v.Sets = append(v.Sets, ss)
		}
	}
	s.render(c, http.StatusOK, shiftPage(v))
}

func setLabel(p string) string { return strings.TrimSuffix(filepath.Base(p), ".jsonl") }

func fmtShare(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) }

func fmtF3(f float64) string { return fmt.Sprintf("%.3f", f) }

func fmtP(f float64) string { return fmt.Sprintf("%.3g", f) }

func bandClass(b string) string {
	switch b {
	case "significant":
		return statusClass(store.StatusError)
	case "moderate":
		return statusClass(store.StatusBudgetExceeded)
	}
	return statusClass(store.StatusOK)
}
