package ingest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDecodeExchange(t *testing.T) {
	tests := []struct {
		file       string
		wantReason string // "" = accepted
	}{
		{"good_minimal.json", ""},
		{"good_full.json", ""},
		{"good_multicontent.json", ""},
		{"bad_malformed_json.json", ReasonMalformedJSON},
		{"bad_trailing.json", ReasonMalformedJSON},
		{"bad_wrong_type.json", ReasonWrongType},
		{"bad_array.json", ReasonWrongType},
		{"bad_invalid_utf8.json", ReasonInvalidUTF8},
		{"bad_missing_request_id.json", ReasonInvalid},
		{"bad_empty_messages.json", ReasonInvalid},
		{"bad_empty_content.json", ReasonInvalid},
		{"bad_unknown_role.json", ReasonInvalid},
		{"bad_missing_response.json", ReasonInvalid},
		{"bad_negative_latency.json", ReasonInvalid},
		{"bad_schema_version.json", ReasonInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join("testdata", "decode", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			ex, err := DecodeExchange(body, 16, true)
			if tt.wantReason == "" {
				if err != nil {
					t.Fatalf("DecodeExchange: %v", err)
				}
				if ex.RequestID == "" || len(ex.Request.Messages) == 0 || ex.Response == nil {
					t.Fatalf("decoded exchange lost fields: %+v", ex)
				}
				return
			}
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("want *DecodeError with reason %s, got %v", tt.wantReason, err)
			}
			if de.Reason != tt.wantReason {
				t.Fatalf("reason = %s (%v), want %s", de.Reason, de, tt.wantReason)
			}
			if de.Detail == "" {
				t.Fatal("a refusal must say why")
			}
		})
	}
}

func TestDecodeExchangeKeepsTextExactly(t *testing.T) {
	body, err := os.ReadFile("testdata/decode/good_full.json")
	if err != nil {
		t.Fatal(err)
	}
	ex, err := DecodeExchange(body, 16, true)
	if err != nil {
		t.Fatal(err)
	}
	got := ex.Request.Messages[1].Content
	for _, want := range []string{"Ñ¡Ôñ×î¼Ñ¶¯×÷", "| 1 | 2 |", "日本語のテキスト", "\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("content lost %q: %q", want, got)
		}
	}
}

func TestDecodeExchangeLimits(t *testing.T) {
	msg := `{"role":"user","content":"hi"}`
	body := `{"request_id":"r","request":{"messages":[` + strings.Repeat(msg+",", 4) + msg + `]},"response":{"content":"x"}}`
	if _, err := DecodeExchange([]byte(body), 5, true); err != nil {
		t.Fatalf("5 messages with a cap of 5: %v", err)
	}
	if _, err := DecodeExchange([]byte(body), 4, true); err == nil {
		t.Fatal("5 messages with a cap of 4 must be refused")
	}
	long := `{"request_id":"` + strings.Repeat("x", maxRequestIDLen+1) + `","request":{"messages":[` + msg + `]},"response":{"content":"x"}}`
	if _, err := DecodeExchange([]byte(long), 5, true); err == nil {
		t.Fatal("an over-long request_id must be refused")
	}
	if _, err := DecodeExchange([]byte(`{"request_id":"r","request":{"messages":[`+msg+`]}}`), 5, false); err != nil {
		t.Fatalf("a replay line may lack the response: %v", err)
	}
}

func FuzzDecodeExchange(f *testing.F) {
	files, _ := filepath.Glob("testdata/decode/*.json")
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ex, err := DecodeExchange(body, 8, true)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error is not a *DecodeError: %v", err)
			}
			return
		}
		if err := ex.Validate(8, true); err != nil {
			t.Fatalf("accepted an invalid exchange: %v", err)
		}
	})
}
