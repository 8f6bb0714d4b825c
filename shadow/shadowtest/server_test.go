package shadowtest

import (
	"context"
	"errors"
	"reflect"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestServerNonStreamAndErrors(t *testing.T) {
	s := NewServer(func(r Request) Reply {
		if r.LastUserContent() == "fail" {
			return Reply{Status: 429, ErrorMessage: "slow down"}
		}
		return Reply{Content: "hello " + r.LastUserContent(), PromptTokens: 3, CompletionTokens: 2, Fingerprint: "simllm-x"}
	})
	defer s.Close()
	cfg := openai.DefaultConfig("")
	cfg.BaseURL = s.BaseURL()
	c := openai.NewClientWithConfig(cfg)
	resp, err := c.CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{
		Model: "m", Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "you"}}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Choices[0].Message.Content != "hello you" || resp.Usage.TotalTokens != 5 || resp.SystemFingerprint != "simllm-x" {
		t.Errorf("response %+v", resp)
	}
	_, err = c.CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{
		Model: "m", Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "fail"}}})
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 429 || apiErr.Message != "slow down" {
		t.Errorf("err = %v", err)
	}
	reqs := s.Requests()
	if len(reqs) != 2 || reqs[0].Seq != 0 || reqs[1].Seq != 1 || string(reqs[0].Messages) != `[{"role":"user","content":"you"}]` {
		t.Errorf("recorded %+v", reqs)
	}
	if reqs[0].FinishedAt.Before(reqs[0].ReceivedAt) {
		t.Error("finished before received")
	}
	if len(s.RequestsFor("m")) != 2 || len(s.RequestsFor("other")) != 0 {
		t.Error("RequestsFor")
	}
}

func TestSplit(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want []string
	}{
		{"", 3, nil},
		{"abcdefg", 3, []string{"abc", "def", "g"}},
		{"ab", 5, []string{"a", "b"}},
		{"héllo", 0, []string{"hé", "ll", "o"}},
	}
	for _, tt := range tests {
		if got := split(tt.s, tt.n); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("split(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}
