package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// contractSegments checks SegmentMix and the segment filters of SearchTraces
// on four live requests (two Russian with tables, one English with code, one
// of unknown language) and one suite request that the mix leaves out.
func contractSegments(t *testing.T, st store.Store) {
	ctx := context.Background()
	at := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	reqs := []store.Request{
		{RequestID: "ru-1", ReceivedAt: at, Source: store.SourceTap, App: "bot", Input: "[]", Language: "ru", HasTable: true, LengthBucket: "0-127", Novelty: 0.8},
		{RequestID: "ru-2", ReceivedAt: at.Add(time.Second), Source: store.SourceTap, App: "bot", Input: "[]", Language: "ru", HasTable: true, LengthBucket: "0-127", Novelty: 0.2},
		{RequestID: "en-1", ReceivedAt: at.Add(2 * time.Second), Source: store.SourceReplay, App: "bot", Input: "[]", Language: "en", HasCode: true, LengthBucket: "128-511", Novelty: -1},
		{RequestID: "un-1", ReceivedAt: at.Add(3 * time.Second), Source: store.SourceTap, App: "other", Input: "[]", LengthBucket: "0-127", Novelty: 0},
		{RequestID: "suite-1", ReceivedAt: at.Add(4 * time.Second), Source: store.SourceSuite, App: "suite:x", Input: "[]", Language: "ru", HasTable: true, LengthBucket: "0-127"},
	}
	if err := st.InsertRequests(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	mix, err := st.(store.SegmentReader).SegmentMix(ctx, store.SegmentMixQuery{From: at, To: at.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(mix)
	want := fmt.Sprint([]store.SegmentCount{
		{Language: "ru", HasTable: true, LengthBucket: "0-127", Requests: 2, WithNovelty: 2, NovelRequests: 1, NoveltySum: 1},
		{Language: "", LengthBucket: "0-127", Requests: 1, WithNovelty: 1},
		{Language: "en", HasCode: true, LengthBucket: "128-511", Requests: 1},
	})
	if got != want {
		t.Errorf("segment mix\n got %s\nwant %s", got, want)
	}
	if _, err := st.(store.SegmentReader).SegmentMix(ctx, store.SegmentMixQuery{From: at, To: at}); err == nil {
		t.Error("an empty window must be an error")
	}
	// The live verdict's observations carry their requests' segment columns
	// (what its segments are named from).
	var runs []store.Run
	for _, id := range []string{"ru-1", "ru-2", "en-1"} {
		runs = append(runs,
			store.Run{RunID: id + "-inc", RequestID: id, Pipeline: "incumbent:gpt-5", Mode: store.ModeIncumbent, StartedAt: at.Add(time.Minute), Status: store.StatusOK, FinalOutput: "42"},
			store.Run{RunID: id + "-cand", RequestID: id, Pipeline: "conductor", Mode: store.ModeCandidate, StartedAt: at.Add(time.Minute), Status: store.StatusOK, FinalOutput: "42"})
	}
	if err := st.InsertRuns(ctx, runs); err != nil {
		t.Fatal(err)
	}
	if lr, ok := st.(store.LiveReader); ok {
		obs, err := lr.LiveObservations(ctx, store.LiveQuery{Pipeline: "conductor", From: at, To: at.Add(time.Hour)}, store.LivePage{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, o := range obs {
			got = append(got, fmt.Sprintf("%s %s table=%v code=%v %s", o.RequestID, o.Language, o.HasTable, o.HasCode, o.LengthBucket))
		}
		want := "[en-1 en table=false code=true 128-511 ru-1 ru table=true code=false 0-127 ru-2 ru table=true code=false 0-127]"
		if fmt.Sprint(got) != want {
			t.Errorf("live observations with segments\n got %v\nwant %s", got, want)
		}
	}
	an := st.(store.TraceReader)
	for _, c := range []struct {
		f    store.SegmentFilter
		want []string
	}{
		{store.SegmentFilter{Language: "ru", HasTable: store.SegmentYes}, []string{"suite-1", "ru-2", "ru-1"}},
		{store.SegmentFilter{HasCode: store.SegmentYes}, []string{"en-1"}},
		{store.SegmentFilter{Language: store.SegmentUnknown}, []string{"un-1"}},
		{store.SegmentFilter{HasTable: store.SegmentNo, LengthBucket: "0-127"}, []string{"un-1"}},
		{store.SegmentFilter{MinNovelty: 0.5}, []string{"ru-1"}},
		{store.SegmentFilter{MinNovelty: 0.2, Language: "ru"}, []string{"ru-2", "ru-1"}},
	} {
		rows, err := an.SearchTraces(ctx, store.TraceSearch{Segments: c.f})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range rows {
			ids = append(ids, r.RequestID)
		}
		if fmt.Sprint(ids) != fmt.Sprint(c.want) {
			t.Errorf("filter %+v: got %v, want %v", c.f, ids, c.want)
		}
	}
	for _, bad := range []store.SegmentFilter{{HasTable: "maybe"}, {MinNovelty: 1.5}, {MinNovelty: -0.1}} {
		if _, err := an.SearchTraces(ctx, store.TraceSearch{Segments: bad}); err == nil {
			t.Errorf("filter %+v must be an error", bad)
		}
	}
}
