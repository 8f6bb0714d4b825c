package ingest

import (
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

// TestConversationsBudget: turns are chained back through their previous
// response; past the byte budget the least recently used turn goes, and a chain
// missing a turn is not rebuilt (the request is then input_reduced).
func TestConversationsBudget(t *testing.T) {
	msg := func(s string) []openai.ChatCompletionMessage {
		return []openai.ChatCompletionMessage{{Role: "user", Content: s}, {Role: "assistant", Content: "ok " + s}}
	}
	one := messagesBytes(msg(strings.Repeat("a", 100)))
	c := newConversations(3 * one)
	c.remember("r1", "", msg(strings.Repeat("a", 100)))
	c.remember("r2", "r1", msg(strings.Repeat("b", 100)))
	c.remember("r3", "r2", msg(strings.Repeat("c", 100)))
	c.remember("r4", "r3", msg(strings.Repeat("d", 100))) // evicts r1, the least recently used
	if _, ok := c.rebuild("r4"); ok {
		t.Error("r4 rebuilt although r1 was evicted")
	}
	// A rebuild uses every turn of its chain: they stay, the others go first.
	c = newConversations(3 * one)
	c.remember("r1", "", msg(strings.Repeat("a", 100)))
	c.remember("r2", "r1", msg(strings.Repeat("b", 100)))
	c.remember("r3", "r2", msg(strings.Repeat("c", 100)))
	got, ok := c.rebuild("r2")
	if !ok || len(got) != 4 || got[0].Content != strings.Repeat("a", 100) || got[3].Content != "ok "+strings.Repeat("b", 100) {
		t.Fatalf("rebuild r2: %v %d messages", ok, len(got))
	}
	c.remember("r2b", "r2", msg(strings.Repeat("e", 100))) // evicts r3
	if _, ok := c.rebuild("r3"); ok {
		t.Error("r3 kept although it was the least recently used")
	}
	if got, ok := c.rebuild("r2b"); !ok || len(got) != 6 {
		t.Errorf("rebuild r2b: %v %d messages", ok, len(got))
	}
	if c.used > c.maxBytes {
		t.Errorf("%d bytes held, budget %d", c.used, c.maxBytes)
	}
	var off *conversations = newConversations(0)
	off.remember("x", "", msg("x"))
	if _, ok := off.rebuild("x"); ok || off != nil {
		t.Error("a zero budget keeps turns")
	}
}
