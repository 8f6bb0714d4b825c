package ingest

import "bytes"

// sseEvents calls fn with the data of every event of an SSE stream (the
// text/event-stream format of the HTML Living Standard, §9.2 "Server-sent events"):
//
//   - lines end in CRLF, LF or a bare CR — all three, mixed in one stream;
//   - a blank line dispatches the event; "data" lines are joined with "\n";
//   - "field: value" drops one space after the colon, a line without a colon is a
//     field with an empty value, lines starting with ":" are comments, and
//     fields other than data (event, id, retry) are ignored here;
//   - a UTF-8 byte order mark at the very start is skipped.
//
// An event whose data is "[DONE]" (OpenAI's end marker) is skipped. The last
// event is dispatched even without its closing blank line; last tells fn that
// the event was not closed, so a caller reading a cut-off stream can skip it.
// The first error from fn stops the walk and is returned.
func sseEvents(body []byte, fn func(data []byte, last bool) error) error {
	body = bytes.TrimPrefix(body, []byte("\xef\xbb\xbf"))
	var data []byte
	hasData := false
	dispatch := func(unclosed bool) error {
		if !hasData {
			return nil
		}
		d := data
		data, hasData = nil, false
		if string(d) == "[DONE]" {
			return nil
		}
		return fn(d, unclosed)
	}
	for len(body) > 0 {
		i := bytes.IndexAny(body, "\r\n")
		var line []byte
		if i < 0 {
			line, body = body, nil
		} else {
			line = body[:i]
			n := 1
			if body[i] == '\r' && i+1 < len(body) && body[i+1] == '\n' {
				n = 2
			}
			body = body[i+n:]
		}
		if len(line) == 0 {
			if err := dispatch(false); err != nil {
				return err
			}
			continue
		}
		if line[0] == ':' {
			continue
		}
		name, value, found := bytes.Cut(line, []byte(":"))
		if found {
			value = bytes.TrimPrefix(value, []byte(" "))
		}
		if string(name) != "data" {
			continue
		}
		if hasData {
			data = append(data, '\n')
		}
		data = append(data, value...)
		hasData = true
		if i < 0 {
			break
		}
	}
	return dispatch(true)
}
