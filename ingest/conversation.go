package ingest

import (
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	openai "github.com/sashabaranov/go-openai"
)

// maxConversationTurns bounds the walk back through previous_response_id links
// (a chain longer than this is taken as not rebuilt).
const maxConversationTurns = 10_000

// conversations remembers, per Responses API response id, the turns that
// response added (its request's input and its answer) and the response it
// continued, within a byte budget (least recently used turns go first), so a
// later request naming it as previous_response_id is shadowed with the whole
// conversation, as the provider answered it. Each turn is held once (the chain
// is walked back at rebuild), so memory grows with the turns, not with their
// square. A nil *conversations remembers nothing. Safe for concurrent use.
type conversations struct {
	mu       sync.Mutex
	maxBytes int64
	used     int64
	turns    *simplelru.LRU[string, convTurn]
}

type convTurn struct {
	prev  string // the response this one continued; "" for the first
	msgs  []openai.ChatCompletionMessage
	bytes int64
}

// newConversations returns a store of at most maxBytes of message text; nil
// when maxBytes is 0 (off).
func newConversations(maxBytes int64) *conversations {
	if maxBytes <= 0 {
		return nil
	}
	c := &conversations{maxBytes: maxBytes}
	// The count cap is never what evicts: the byte budget is.
	c.turns, _ = simplelru.NewLRU[string, convTurn](1<<30, func(_ string, t convTurn) { c.used -= t.bytes })
	return c
}

// messagesBytes is the text and media URL bytes of msgs: what a turn costs.
func messagesBytes(msgs []openai.ChatCompletionMessage) int64 {
	var n int64
	for _, m := range msgs {
		n += int64(len(m.Content) + len(m.Role) + 64)
		for _, p := range m.MultiContent {
			n += int64(len(p.Text))
			if p.ImageURL != nil {
				n += int64(len(p.ImageURL.URL))
			}
		}
		for _, tc := range m.ToolCalls {
			n += int64(len(tc.ID) + len(tc.Function.Name) + len(tc.Function.Arguments))
		}
	}
	return n
}

// remember keeps the turn of response id: the input msgs of its request and
// its answer, continuing prev. A turn larger than the whole budget is not kept.
func (c *conversations) remember(id, prev string, msgs []openai.ChatCompletionMessage) {
	if c == nil || id == "" {
		return
	}
	t := convTurn{prev: prev, msgs: msgs, bytes: messagesBytes(msgs)}
	if t.bytes > c.maxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.turns.Remove(id)
	c.turns.Add(id, t)
	c.used += t.bytes
	for c.used > c.maxBytes {
		c.turns.RemoveOldest()
	}
}

// rebuild returns the conversation up to and including response id's answer,
// oldest turn first; ok is false when a turn of the chain is not held.
func (c *conversations) rebuild(id string) ([]openai.ChatCompletionMessage, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var chain [][]openai.ChatCompletionMessage
	for n := 0; id != ""; n++ {
		t, ok := c.turns.Get(id)
		if !ok || n >= maxConversationTurns {
			return nil, false
		}
		chain = append(chain, t.msgs)
		id = t.prev
	}
	var out []openai.ChatCompletionMessage
	for i := len(chain) - 1; i >= 0; i-- {
		out = append(out, chain[i]...)
	}
	return out, true
}
