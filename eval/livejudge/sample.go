package livejudge

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/conductor-shadow/conductor-shadow/eval"
	"github.com/conductor-shadow/conductor-shadow/eval/judge"
	"github.com/conductor-shadow/conductor-shadow/shadow"
)

// Draw is the pair's uniform draw in [0, 1): HMAC-SHA256(key, request id,
// candidate pipeline, candidate version) read as a 53-bit fraction. The same
// pair draws the same number in every process that shares the key (the PII
// key: taps and workers already share it), so a re-delivered exchange gets
// the same decision; a client cannot pick request ids that are (or are not)
// judged without the key. The pair is sampled when Draw < p.
func Draw(key []byte, requestID, pipeline, version string) float64 {
	m := hmac.New(sha256.New, key)
	for _, s := range []string{requestID, pipeline, version} {
		m.Write([]byte(s))
		m.Write([]byte{0})
	}
	return float64(binary.BigEndian.Uint64(m.Sum(nil))>>11) / (1 << 53)
}

// promptTokenOverhead is what a chat template adds around one message's
// text, in tokens (role markers, separators): generous for every
// OpenAI-compatible template.
const promptTokenOverhead = 32

// UpperBoundUSD is the most one judgment of prompt, incumbent and candidate
// can cost: two calls (both orders), each at most its prompt's UTF-8 bytes +
// promptTokenOverhead prompt tokens (a byte-level BPE token covers at least
// one byte) at the dearer of the worker's input and cache-write rates, plus
// maxOutput completion tokens (the call's max_tokens) at its output rate.
// Retries of a failed attempt are not billed twice (a call's usage is its
// last attempt's), so one attempt's bound is the call's.
func UpperBoundUSD(price shadow.Price, prompt, incumbent, candidate string, maxOutput int) float64 {
	in := float64(len(judge.PairPrompt(prompt, "", incumbent, candidate, eval.LabelsAB)) + promptTokenOverhead)
	rate := max(price.InputUSDPerMTok, price.CacheWriteUSDPerMTok)
	return 2 * (in*rate + float64(maxOutput)*price.OutputUSDPerMTok) / 1e6
}

// PromptOf is the request as the judge is shown it: a single user message's
// text as it is, otherwise every message's text under its role ("user:",
// "system:", …), separated by blank lines. Image parts are named, not
// inlined.
func PromptOf(msgs []openai.ChatCompletionMessage) string {
	text := func(m openai.ChatCompletionMessage) string {
		if len(m.MultiContent) == 0 {
			return m.Content
		}
		var parts []string
		for _, p := range m.MultiContent {
			switch {
			case p.Text != "":
				parts = append(parts, p.Text)
			case p.ImageURL != nil:
				parts = append(parts, "[image]")
			}
		}
		return strings.Join(parts, "\n")
	}
	if len(msgs) == 1 && msgs[0].Role == openai.ChatMessageRoleUser {
		return text(msgs[0])
	}
	var b strings.Builder
	for i, m := range msgs {
		if i > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(m.Role + ": " + text(m))
	}
	return b.String()
}
