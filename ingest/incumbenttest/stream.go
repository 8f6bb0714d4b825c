package incumbenttest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
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

// BrokenStreams POSTs body to url tries times with c, one after another, and
// counts the answers that did not arrive whole: fewer than lines lines (the
// stream of StreamAfterDecode(lines) broke off). An error is a POST that got
// no answer at all.
func BrokenStreams(c *http.Client, url, body string, lines, tries int) (int, error) {
	broken := 0
	for range tries {
		resp, err := c.Post(url, "application/json", strings.NewReader(body))
		if err != nil {
			return broken, fmt.Errorf("incumbenttest: post %s: %w", url, err)
		}
		n := 0
		for sc := bufio.NewScanner(resp.Body); sc.Scan(); {
			n++
		}
		resp.Body.Close()
		if n != lines {
			broken++
		}
	}
	return broken, nil
}
