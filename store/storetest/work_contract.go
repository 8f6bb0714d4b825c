package storetest

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// contractWorkBacklog: pending work rows without a stored candidate run (or with
// only a cancelled one) are the backlog, oldest first, paged by cursor; a done
// mark or a stored run settles the work; StoredRequests finds stored ids.
func contractWorkBacklog(t *testing.T, st store.Store) {
	ctx := context.Background()
	t0 := T0()
	var reqs []store.Request
	var work []store.Work
	for i := range 5 {
		id := fmt.Sprintf("w%d", i)
		at := t0.Add(time.Duration(i) * time.Second)
		if i == 4 {
			at = t0 // same instant as w0: the request id breaks the tie
		}
		reqs = append(reqs, store.Request{RequestID: id, ReceivedAt: at, Source: store.SourceTap, Input: `[{"role":"user","content":"q` + id + `"}]`})
		for _, p := range []string{"conductor", "single:gpt-5"} {
			work = append(work, store.Work{RequestID: id, Pipeline: p, PipelineVersion: "v1", Status: store.WorkPending, ReceivedAt: at})
		}
	}
	if err := st.InsertRequests(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	if err := st.InsertWork(ctx, work); err != nil {
		t.Fatal(err)
	}
	// w1: conductor done by a done mark; w2: conductor run stored, mark lost;
	// w3: conductor run cancelled (still owed) and single stored.
	run := func(req, pipeline, status string) store.Run {
		return store.Run{RunID: req + "/" + pipeline, RequestID: req, Pipeline: pipeline, PipelineVersion: "v1",
			Mode: store.ModeCandidate, StartedAt: t0, Status: status}
	}
	if err := st.InsertRuns(ctx, []store.Run{
		run("w1", "conductor", store.StatusOK), run("w2", "conductor", store.StatusError),
		run("w3", "conductor", store.StatusCancelled), run("w3", "single:gpt-5", store.StatusOK),
		// a run of another version settles nothing
		{RunID: "w0/old", RequestID: "w0", Pipeline: "conductor", PipelineVersion: "v0", Mode: store.ModeCandidate, StartedAt: t0, Status: store.StatusOK},
	}); err != nil {
		t.Fatal(err)
	}
	if err := st.InsertWork(ctx, []store.Work{{RequestID: "w1", Pipeline: "conductor", PipelineVersion: "v1", Status: store.WorkDone, ReceivedAt: reqs[1].ReceivedAt}}); err != nil {
		t.Fatal(err)
	}
	// Work rows of refused copies (no request row), older than everything: they
	// must not fill a page.
	var orphans []store.Work
	for i := range 3 {
		orphans = append(orphans, store.Work{RequestID: fmt.Sprintf("orphan%d", i), Pipeline: "conductor", PipelineVersion: "v1",
			Status: store.WorkPending, ReceivedAt: t0.Add(-time.Hour)})
	}
	if err := st.InsertWork(ctx, orphans); err != nil {
		t.Fatal(err)
	}
	both := []store.WorkKey{{Pipeline: "conductor", PipelineVersion: "v1"}, {Pipeline: "single:gpt-5", PipelineVersion: "v1"}}
	single := []store.WorkKey{{Pipeline: "single:gpt-5", PipelineVersion: "v1"}}
	conductor := []store.WorkKey{{Pipeline: "conductor", PipelineVersion: "v1"}}
	want := []struct {
		id   string
		owed []store.WorkKey
	}{{"w0", both}, {"w4", both}, {"w1", single}, {"w2", single}, {"w3", conductor}}

	var got []store.PendingRequest
	var cur store.WorkCursor
	for range 10 {
		page, err := st.PendingWork(ctx, cur, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		if len(page) > 2 {
			t.Fatalf("page of %d; want at most 2", len(page))
		}
		got = append(got, page...)
		last := page[len(page)-1].Request
		cur = store.WorkCursor{ReceivedAt: last.ReceivedAt, RequestID: last.RequestID}
	}
	if len(got) != len(want) {
		t.Fatalf("backlog has %d requests; want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		if got[i].Request.RequestID != w.id || !reflect.DeepEqual(got[i].Owed, w.owed) {
			t.Errorf("backlog[%d] = %s owing %v; want %s owing %v", i, got[i].Request.RequestID, got[i].Owed, w.id, w.owed)
		}
	}
	if got[0].Request.Input != reqs[0].Input {
		t.Errorf("backlog request input = %q; want the stored %q", got[0].Request.Input, reqs[0].Input)
	}

	ids, err := st.StoredRequests(ctx, []string{"w0", "nope", "w3"})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(ids)
	if !reflect.DeepEqual(ids, []string{"w0", "w3"}) {
		t.Errorf("StoredRequests = %v; want [w0 w3]", ids)
	}
	if ids, err := st.StoredRequests(ctx, nil); err != nil || len(ids) != 0 {
		t.Errorf("StoredRequests(nil) = %v, %v; want none", ids, err)
	}

	// Ids are found byte for byte, whatever they hold, and a lookup larger
	// than one statement binds (hundreds of KiB of ids) finds each.
	odd := []string{"tab\tid", "new\nline", `back\slash`, `back\\n`, "quote'd", `dq"id`, "ünï-ˇ", " spaced ", "nul\x00id", "cr\rid"}
	var oddReqs []store.Request
	for _, id := range odd {
		oddReqs = append(oddReqs, store.Request{RequestID: id, ReceivedAt: t0, Source: store.SourceTap, Input: "[]"})
	}
	if err := st.InsertRequests(ctx, oddReqs); err != nil {
		t.Fatal(err)
	}
	lookup := slices.Clone(odd)
	for i := range 20000 {
		lookup = append(lookup, fmt.Sprintf("never-stored-request-id-%06d", i))
	}
	lookup = append(lookup, "w4", "tab", "new", `back\`)
	ids, err = st.StoredRequests(ctx, lookup)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(ids)
	found := append(slices.Clone(odd), "w4")
	slices.Sort(found)
	if !reflect.DeepEqual(ids, found) {
		t.Errorf("StoredRequests of %d ids = %q; want %q", len(lookup), ids, found)
	}
}
