package ingest

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestProxyRequestParts: a request of each mirrored API becomes the chat
// messages and tools candidates get — the system prompt, text, images (data:
// and remote URLs), files and audio as content parts, tool calls and tool
// results as turns, function tools — and the JSON the queue and the store
// carry reads back to the same request.
func TestProxyRequestParts(t *testing.T) {
	tests := []struct {
		name string
		kind api
		body string
		want string // the ExchangeRequest as JSON
	}{
		{"anthropic: system blocks, media, tool turns, server tools left out", apiMessages,
			`{"model":"claude-sonnet-4-5","max_tokens":10,"system":[{"type":"text","text":"Be terse.","cache_control":{"type":"ephemeral"}}],
			 "tools":[{"name":"get_weather","description":"d","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}},{"type":"web_search_20250305","name":"web_search"}],
			 "messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}},
			   {"type":"image","source":{"type":"url","url":"https://example.com/a.png"}},
			   {"type":"document","source":{"type":"text","media_type":"text/plain","data":"plain doc"},"title":"T"},
			   {"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0="},"title":"a.pdf"},
			   {"type":"document","source":{"type":"file","file_id":"file_011"}},{"type":"text","text":"What?"}]},
			  {"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"s"},{"type":"text","text":"Let me check."},
			   {"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city": "Paris"}}]},
			  {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"sunny"}]},{"type":"text","text":"And now?"}]}]}`,
			`{"model":"claude-sonnet-4-5","messages":[{"role":"system","content":"Be terse."},
			  {"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}},
			   {"type":"image_url","image_url":{"url":"https://example.com/a.png"}},{"type":"text","text":"T:\nplain doc"},
			   {"type":"file","file":{"filename":"a.pdf","file_data":"data:application/pdf;base64,JVBERi0="}},
			   {"type":"file","file":{"file_id":"file_011"}},{"type":"text","text":"What?"}]},
			  {"role":"assistant","content":"Let me check.","tool_calls":[{"id":"toolu_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},
			  {"role":"tool","content":"sunny","tool_call_id":"toolu_1"},{"role":"user","content":"And now?"}],
			 "tools":[{"type":"function","function":{"name":"get_weather","description":"d","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]}`},
		{"anthropic: a plain string content", apiMessages,
			`{"model":"claude-haiku-4-5","max_tokens":10,"system":"S","messages":[{"role":"user","content":"hi"}]}`,
			`{"model":"claude-haiku-4-5","messages":[{"role":"system","content":"S"},{"role":"user","content":"hi"}]}`},
		{"responses: input parts, function call turns, item references noted", apiResponses,
			`{"model":"gpt-5","instructions":"Be terse.","tools":[{"type":"function","name":"f","parameters":{"type":"object"}},{"type":"web_search"}],
			 "input":[{"role":"user","content":[{"type":"input_text","text":"Look"},{"type":"input_image","image_url":"data:image/png;base64,iVBORw0KGgo=","detail":"high"},
			   {"type":"input_file","filename":"a.pdf","file_data":"data:application/pdf;base64,JVBERi0="},{"type":"input_file","file_id":"file-abc"}]},
			  {"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":"42"},{"type":"item_reference","id":"msg_9"}]}`,
			`{"model":"gpt-5","messages":[{"role":"system","content":"Be terse."},
			  {"role":"user","content":[{"type":"text","text":"Look"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo=","detail":"high"}},
			   {"type":"file","file":{"filename":"a.pdf","file_data":"data:application/pdf;base64,JVBERi0="}},{"type":"file","file":{"file_id":"file-abc"}}]},
			  {"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","content":"42","tool_call_id":"c1"}],
			 "tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],
			 "input_reduced":"1 item_reference input item(s): the items they name are held by the provider"}`},
		{"responses: previous_response_id never seen", apiResponses,
			`{"model":"gpt-5","previous_response_id":"resp_gone","input":"and then?"}`,
			`{"model":"gpt-5","messages":[{"role":"user","content":"and then?"}],
			 "input_reduced":"previous_response_id resp_gone: the conversation before it was not seen by this tap (or no longer held); candidates got only this request's input"}`},
		{"chat: input_audio and file parts, tools", apiChat,
			`{"model":"gpt-4o-audio-preview","messages":[{"role":"user","content":[{"type":"text","text":"Hear"},{"type":"input_audio","input_audio":{"data":"UklGRg==","format":"wav"}},
			  {"type":"file","file":{"filename":"x.pdf","file_data":"data:application/pdf;base64,JVBERi0="}}]}],
			 "tools":[{"type":"function","function":{"name":"g","parameters":{"type":"object"}}}],"input_reduced":"sent by the client"}`,
			`{"model":"gpt-4o-audio-preview","messages":[{"role":"user","content":[{"type":"text","text":"Hear"},{"type":"input_audio","input_audio":{"data":"UklGRg==","format":"wav"}},
			  {"type":"file","file":{"filename":"x.pdf","file_data":"data:application/pdf;base64,JVBERi0="}}]}],
			 "tools":[{"type":"function","function":{"name":"g","parameters":{"type":"object"}}}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got ExchangeRequest
			var err error
			if tt.kind == apiResponses {
				var rr responsesRequest
				rr, err = parseResponsesRequest([]byte(tt.body))
				got = rr.exchangeRequest(nil)
			} else {
				got, err = parseProxyRequest([]byte(tt.body), tt.kind)
			}
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if !jsonEqual(t, b, []byte(tt.want)) {
				t.Errorf("request\n got %s\nwant %s", b, tt.want)
			}
			var back ExchangeRequest
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if b2, _ := json.Marshal(back); !jsonEqual(t, b2, b) {
				t.Errorf("JSON round trip changed the request:\n got %s\nwant %s", b2, b)
			}
		})
	}
}

// jsonEqual compares two JSON texts by value.
func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%v: %s", err, a)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return reflect.DeepEqual(x, y)
}

// TestStoredRequestKeepsWhatCandidatesGet: the request row keeps the content
// parts (audio and files too), the tools and what the input lacks, so work
// recovered from the store after a restart runs on the same request.
func TestStoredRequestKeepsWhatCandidatesGet(t *testing.T) {
	r, err := parseProxyRequest([]byte(`{"model":"gpt-4o","messages":[{"role":"user","content":[{"type":"text","text":"Hear"},`+
		`{"type":"input_audio","input_audio":{"data":"UklGRg==","format":"wav"}},{"type":"file","file":{"filename":"x.pdf","file_data":"data:application/pdf;base64,JVBERi0="}}]}],`+
		`"tools":[{"type":"function","function":{"name":"g","parameters":{"type":"object"}}}]}`), apiChat)
	if err != nil {
		t.Fatal(err)
	}
	r.InputReduced = "previous_response_id resp_x: not seen"
	ex := Exchange{RequestID: "stored-1", Request: r}
	row, err := RequestRecord(ex)
	if err != nil {
		t.Fatal(err)
	}
	back, err := exchangeFromStored(row)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(ex.ShadowRequest())
	b, _ := json.Marshal(back.ShadowRequest())
	if !jsonEqual(t, a, b) || len(back.Request.Tools) != 1 || back.Request.Messages[0].MultiContent[1].ImageURL == nil {
		t.Errorf("recovered request differs:\n got %s\nwant %s", b, a)
	}
}
