package incumbenttest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// StreamAfterDecode is an upstream that decodes its JSON request body (which
// reads every byte but need not see the body's end) and then streams lines
// lines of NDJSON ({"line":i}), each flushed and 1 ms apart, so the answer
// starts while a proxy may still be forwarding the body's end: a streamed LLM
// answer, or a suite run's progress. A body that is not JSON is answered 400.
func StreamAfterDecode(lines int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var v map[string]any
		if err := json.NewDecoder(r.Body).Decode(&v); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		for i := range lines {
			fmt.Fprintf(w, "{\"line\":%d}\n", i)
			w.(http.Flusher).Flush()
			time.Sleep(time.Millisecond)
		}
	})
}
