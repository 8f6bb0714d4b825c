package ingest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func postBatch(h http.Handler, body []byte) (*httptest.ResponseRecorder, BatchResponse) {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/v1/tap/batch", bytes.NewReader(body))
	h.ServeHTTP(rec, req)
	var resp BatchResponse
	_ = json.Unmarshal(rec.Body.Bytes(), &resp)
	return rec, resp
}

func TestTapBatchAnswersEachItem(t *testing.T) {
	_, q, stats, h := newTestTap(t, NewDefaultConfig())
	items := []string{
		string(readFile(t, "good_minimal.json")),
		string(readFile(t, "good_full.json")),
		string(readFile(t, "good_minimal.json")), // same request id: duplicate
		string(readFile(t, "bad_empty_messages.json")),
		string(readFile(t, "bad_wrong_type.json")),
	}
	body := []byte(`{"exchanges":[` + strings.Join(items, ",") + `]}`)
	rec, resp := postBatch(h, body)
	if rec.Code != http.StatusOK || len(resp.Results) != len(items) {
		t.Fatalf("got %d %s", rec.Code, rec.Body)
	}
	want := []struct{ status, reason string }{{"queued", ""}, {"queued", ""}, {"duplicate", ""}, {"rejected", ReasonInvalid}, {"rejected", ReasonWrongType}}
	for i, w := range want {
		if r := resp.Results[i]; r.Status != w.status || r.Reason != w.reason {
			t.Errorf("item %d: %+v, want %s %s", i, r, w.status, w.reason)
		}
	}
	if resp.Counts["queued"] != 2 || resp.Counts["rejected"] != 2 || resp.Counts["duplicate"] != 1 {
		t.Errorf("counts %v", resp.Counts)
	}
	// Retrying the whole batch stores nothing twice.
	_, again := postBatch(h, body)
	if again.Counts["duplicate"] != 3 || q.Len() != 2 {
		t.Fatalf("retry: counts %v, queue %d", again.Counts, q.Len())
	}
	if snap := stats.Snapshot(q.Len()); snap.Accepted != 2 || snap.Rejected[ReasonInvalid] != 2 {
		t.Fatalf("stats %+v", snap)
	}
}

// TestTapBatchEnvelopeAsEncodingJSONReadIt: the envelope is read as
// encoding/json decoded it into BatchRequest: other members are skipped
// whatever they hold, the member name matches in any case, the last
// "exchanges" counts.
func TestTapBatchEnvelopeAsEncodingJSONReadIt(t *testing.T) {
	one := string(readFile(t, "good_minimal.json"))
	full := string(readFile(t, "good_full.json"))
	tests := []struct {
		name string
		body string
		want int // exchanges queued
	}{
		{"invalid utf-8 in another member", "{\"note\":\"\xff\",\"exchanges\":[" + one + "]}", 1},
		{"other members, the name in capitals", `{"note":{"a":[1,{}]},"EXCHANGES":[` + one + `]}`, 1},
		{"the last exchanges member counts", `{"exchanges":[` + one + `],"exchanges":[` + full + `,` + one + `]}`, 2},
		{"whitespace around", " \n{ \"exchanges\" :\t[ " + one + " ] }\n", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, q, _, h := newTestTap(t, NewDefaultConfig())
			rec, resp := postBatch(h, []byte(tt.body))
			if rec.Code != http.StatusOK || resp.Counts["queued"] != tt.want || len(resp.Results) != tt.want || q.Len() != tt.want {
				t.Fatalf("status %d, counts %v, queue %d; want 200 and %d queued: %s", rec.Code, resp.Counts, q.Len(), tt.want, rec.Body)
			}
		})
	}
}

func TestTapBatchRefusesBadEnvelopes(t *testing.T) {
	cfg := NewDefaultConfig()
	cfg.MaxBatchItems = 2
	cfg.MaxBodyBytes = 4096
	cfg.MaxBatchBytes = 64 << 10
	_, q, _, h := newTestTap(t, cfg)
	one := string(readFile(t, "good_minimal.json"))
	tests := []struct {
		name     string
		body     []byte
		code     int
		reason   string
		itemRule string
	}{
		{"malformed", []byte(`{"exchanges":[`), 400, ReasonMalformedJSON, ""},
		{"not an object", []byte(`[1,2]`), 400, ReasonMalformedJSON, ""},
		{"trailing data", []byte(`{"exchanges":[` + one + `]} {}`), 400, ReasonMalformedJSON, ""},
		{"invalid utf-8 in an item", []byte("{\"exchanges\":[\"\xff\"]}"), 200, "", ReasonInvalidUTF8},
		{"empty", []byte(`{"exchanges":[]}`), 400, ReasonInvalid, ""},
		{"too many", []byte(`{"exchanges":[` + one + "," + one + "," + one + `]}`), 413, ReasonTooLarge, ""},
		{"too large", []byte(`{"exchanges":["` + strings.Repeat("a", 70<<10) + `"]}`), 413, ReasonTooLarge, ""},
		{"item too large", []byte(`{"exchanges":[{"request_id":"x","pad":"` + strings.Repeat("a", 5000) + `"}]}`), 200, "", ReasonTooLarge},
		{"item not an object", []byte(`{"exchanges":[42]}`), 200, "", ReasonWrongType},
		{"exchanges not an array", []byte(`{"exchanges":{"request_id":"x"}}`), 400, ReasonMalformedJSON, ""},
		{"exchanges null", []byte(`{"exchanges":null}`), 400, ReasonInvalid, ""},
		{"no exchanges member", []byte(`{"items":[` + one + `]}`), 400, ReasonInvalid, ""},
		{"an object that never ends", []byte(`{"exchanges":[` + one + `]`), 400, ReasonMalformedJSON, ""},
		{"a bad name", []byte(`{exchanges:[` + one + `]}`), 400, ReasonMalformedJSON, ""},
		{"a bad value after the array", []byte(`{"exchanges":[` + one + `],"x":tru}`), 400, ReasonMalformedJSON, ""},
		{"malformed inside an item", []byte(`{"exchanges":[{"request_id":"x",}]}`), 400, ReasonMalformedJSON, ""},
		{"a repeated name inside an item", []byte(`{"exchanges":[{"request_id":"a","request_id":"x"}]}`), 200, "", ReasonInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, resp := postBatch(h, tt.body)
			if rec.Code != tt.code {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.code, rec.Body)
			}
			if tt.reason != "" {
				var tr TapResponse
				_ = json.Unmarshal(rec.Body.Bytes(), &tr)
				if tr.Status != "rejected" || tr.Reason != tt.reason || tr.Error == "" {
					t.Fatalf("answer %+v, want rejected %s", tr, tt.reason)
				}
			}
			if tt.itemRule != "" && (len(resp.Results) != 1 || resp.Results[0].Reason != tt.itemRule) {
				t.Fatalf("results %+v, want one rejected %s", resp.Results, tt.itemRule)
			}
		})
	}
	if q.Len() != 0 {
		t.Fatalf("%d copies queued from refused batches", q.Len())
	}
}

// TestSplitBatchCopiesAtMostMaxItems: past maxItems the exchanges are checked
// and counted, not kept, so an oversized batch is refused with its true size.
func TestSplitBatchCopiesAtMostMaxItems(t *testing.T) {
	body := []byte(`{"exchanges":[{},{"a":1},[],"x",{"b":[2]}]}`)
	items, total, err := splitBatch(body, 2)
	if err != nil || total != 5 || len(items) != 2 || string(items[0]) != `{}` || string(items[1]) != `{"a":1}` {
		t.Fatalf("splitBatch = %q, %d, %v; want the first 2 of 5", items, total, err)
	}
	if _, _, err := splitBatch([]byte(`{"exchanges":[{},{},{,]}`), 1); err == nil {
		t.Fatal("a malformed exchange past maxItems was not an error")
	}
	cfg := NewDefaultConfig()
	cfg.MaxBatchItems = 2
	_, q, _, h := newTestTap(t, cfg)
	rec, _ := postBatch(h, body)
	var tr TapResponse
	_ = json.Unmarshal(rec.Body.Bytes(), &tr)
	if rec.Code != http.StatusRequestEntityTooLarge || !strings.Contains(tr.Error, "holds 5 exchanges, at most 2") || q.Len() != 0 {
		t.Fatalf("status %d, answer %+v, queue %d; want 413 naming 5 of at most 2", rec.Code, tr, q.Len())
	}
}
