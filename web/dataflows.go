package web

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/conductor-shadow/conductor-shadow/store/dataflow"
)

const navDataFlows = "data-flows"

func (u urls) dataFlows() string { return u.base + "/data-flows" }

// dataFlowsView is the data-flows page: the record of one window.
type dataFlowsView struct {
	Meta      pageMeta
	SinceArg  string // the window as typed, for the form
	Record    dataflow.Record
	Simulated bool // some recipient is the simulated pool
}

// dataFlows renders the record of data flows of the last `since` (a Go
// duration, default 168h; dataflow.ParseWindow) with the configured
// recipients of Config.DataFlows.
func (s *server) dataFlows(c *gin.Context) {
	since, err := dataflow.ParseWindow(c.Query("since"))
	if err != nil {
		s.fail(c, http.StatusBadRequest, "Bad since: "+err.Error()+".", nil)
		return
	}
	to := time.Now().UTC()
	rec, err := dataflow.Build(c.Request.Context(), s.read.Flows, s.cfg.DataFlows, to.Add(-since), to)
	if err != nil {
		s.fail(c, http.StatusInternalServerError, "The record of data flows could not be read from the store.", err)
		return
	}
	s.render(c, http.StatusOK, dataFlowsPage(newDataFlowsView(s.meta("Data flows", navDataFlows), since, rec)))
}

func newDataFlowsView(meta pageMeta, since time.Duration, rec dataflow.Record) dataFlowsView {
	v := dataFlowsView{Meta: meta, SinceArg: windowArg(since), Record: rec}
	for _, r := range rec.Recipients {
		v.Simulated = v.Simulated || r.Provider == dataflow.ProviderSimulated
	}
	return v
}

// windowArg prints a window as the form takes it: "168h", "90m".
func windowArg(d time.Duration) string {
	if d%time.Hour == 0 {
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	}
	return d.String()
}

// flowRowID is a recipient row's data-testid: "flow:worker:gpt-5@api.openai.com".
func flowRowID(r dataflow.Recipient) string { return "flow:" + r.Kind + ":" + r.Name + "@" + r.Host }

// flowStatusClass colours a recipient's status.
func flowStatusClass(status string) string {
	switch status {
	case dataflow.StatusSent:
		return "status status-ok"
	case dataflow.StatusNotConfigured:
		return "status status-warn"
	}
	return "status status-other"
}
