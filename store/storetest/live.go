package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// InsertLiveTraffic stores, from at on, en English short prompts that the
// candidate "conductor" answers as the incumbent "incumbent:gpt-5" does, and
// ru Russian longer prompts with tables ("ru-<i>") where it answers differently
// on every third (i = 2, 5, 8, …). Requests alternate one a minute (en-0, ru-0,
// en-1, …), all tapped for app "bot": the live agreement pairs that the
// running verdicts read, with their segment columns.
func InsertLiveTraffic(t testing.TB, st store.TraceWriter, at time.Time, en, ru int) {
	t.Helper()
	var reqs []store.Request
	var runs []store.Run
	add := func(id string, i int, req store.Request, agree bool) {
		started := at.Add(time.Duration(i) * time.Minute)
		req.RequestID, req.ReceivedAt, req.Source, req.App, req.Input = id, started, store.SourceTap, "bot", "[]"
		reqs = append(reqs, req)
		out := "42"
		if !agree {
			out = "41"
		}
		runs = append(runs,
			store.Run{RunID: id + "-inc", RequestID: id, Pipeline: "incumbent:gpt-5", Mode: store.ModeIncumbent, StartedAt: started, Status: store.StatusOK, FinalOutput: "42"},
			store.Run{RunID: id + "-cand", RequestID: id, Pipeline: "conductor", Mode: store.ModeCandidate, StartedAt: started, Status: store.StatusOK, FinalOutput: out})
	}
	for i := range en {
		add(fmt.Sprint("en-", i), 2*i, store.Request{Language: "en", LengthBucket: "0-127"}, true)
	}
	for i := range ru {
		add(fmt.Sprint("ru-", i), 2*i+1, store.Request{Language: "ru", HasTable: true, LengthBucket: "128-511"}, (i+1)%3 != 0)
	}
	ctx := context.Background()
	if err := st.InsertRequests(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	if err := st.InsertRuns(ctx, runs); err != nil {
		t.Fatal(err)
	}
}
