package shadow

import (
	"encoding/json"
	"fmt"
)

// MaxUsageTokens bounds every token count of a usage object, in any spelling:
// 0 to 100,000,000 tokens. A count outside is refused by ParseUsage rather than
// stored to skew cost and token figures (a negative cache count would shrink the
// prompt it is added to).
const MaxUsageTokens = 100_000_000

// UsageRangeError is a usage token count outside 0..MaxUsageTokens. Field is the
// key as the provider spelled it, with its parent for nested ones
// ("cache_read_input_tokens", "prompt_tokens_details.cached_tokens").
type UsageRangeError struct {
	Field string
	Value int64
}

func (e *UsageRangeError) Error() string {
	return fmt.Sprintf("usage.%s %d is out of range: want 0 to %d", e.Field, e.Value, MaxUsageTokens)
}

// usageFields is a usage object in every spelling ParseUsage reads. Pointers tell
// a field that is absent from one that is 0.
type usageFields struct {
	// OpenAI chat completions (and most OpenAI-compatible servers).
	PromptTokens        *int64 `json:"prompt_tokens"`
	CompletionTokens    *int64 `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	// OpenAI Responses API (input_tokens include the cached ones) and Anthropic
	// Messages API (input_tokens exclude cache reads and cache writes).
	InputTokens        *int64 `json:"input_tokens"`
	OutputTokens       *int64 `json:"output_tokens"`
	InputTokensDetails *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	// Anthropic: the cache writes by lifetime (their sum is cache_creation_input_tokens).
	CacheCreation *struct {
		Ephemeral5m int64 `json:"ephemeral_5m_input_tokens"`
		Ephemeral1h int64 `json:"ephemeral_1h_input_tokens"`
	} `json:"cache_creation"`
	// DeepSeek: prompt_tokens = hit + miss.
	PromptCacheHitTokens int64 `json:"prompt_cache_hit_tokens"`
	// Moonshot (Kimi): cached tokens at the top of usage.
	CachedTokens int64 `json:"cached_tokens"`
	// Gemini API usageMetadata.
	PromptTokenCount        *int64 `json:"promptTokenCount"`
	CandidatesTokenCount    *int64 `json:"candidatesTokenCount"`
	ThoughtsTokenCount      int64  `json:"thoughtsTokenCount"`
	CachedContentTokenCount int64  `json:"cachedContentTokenCount"`
	// Fugu's orchestration usage.
	OrchestrationInputTokens       int64 `json:"orchestration_input_tokens"`
	OrchestrationInputCachedTokens int64 `json:"orchestration_input_cached_tokens"`
	OrchestrationOutputTokens      int64 `json:"orchestration_output_tokens"`
}

// ParseUsage reads a usage object in any of the spellings providers use and
// returns it in this package's terms (PromptTokens include the cached ones).
// reported is false when raw holds no token count at all (null, {} or unrelated
// keys). The spellings:
//
//   - OpenAI chat completions: prompt_tokens, completion_tokens,
//     prompt_tokens_details.cached_tokens.
//   - OpenAI Responses API: input_tokens (cached included), output_tokens,
//     input_tokens_details.cached_tokens.
//   - Anthropic Messages API: input_tokens (cache reads and writes excluded),
//     output_tokens, cache_read_input_tokens, cache_creation_input_tokens; the
//     prompt is their sum. cache_creation.ephemeral_1h_input_tokens are the
//     writes to the 1-hour cache (CacheWrite1hPromptTokens, priced at
//     Price.CacheWrite1hUSDPerMTok, 2× input); a cache_creation object without
//     cache_creation_input_tokens gives the writes as its 5m + 1h sum. Gateways that put cache_read_input_tokens beside an
//     OpenAI prompt_tokens (which already includes them) are read as OpenAI.
//   - DeepSeek: prompt_cache_hit_tokens (of prompt_tokens). Moonshot: cached_tokens.
//   - Gemini API usageMetadata: promptTokenCount, candidatesTokenCount (+
//     thoughtsTokenCount), cachedContentTokenCount.
//   - Fugu: orchestration_input_tokens, _input_cached_tokens, _output_tokens.
//
// Cache writes (cache_creation_input_tokens, in either reading) are part of the
// prompt and are returned as CacheWritePromptTokens, priced at the model's
// cache-write rate (Price.CacheWriteUSDPerMTok; Anthropic bills a 5-minute write
// at 1.25× input, anthropic.com/pricing). A value of the wrong JSON type is an
// error, and so is any count of any spelling outside 0..MaxUsageTokens (a
// *UsageRangeError naming the first such field).
func ParseUsage(raw []byte) (u Usage, reported bool, err error) {
	if len(raw) == 0 || string(raw) == "null" {
		return Usage{}, false, nil
	}
	var f usageFields
	if err := json.Unmarshal(raw, &f); err != nil {
		return Usage{}, false, fmt.Errorf("usage: %w", err)
	}
	if err := f.checkRange(); err != nil {
		return Usage{}, false, err
	}
	switch {
	case f.PromptTokens != nil || f.CompletionTokens != nil:
		reported = true
		u.PromptTokens = deref(f.PromptTokens)
		u.CompletionTokens = deref(f.CompletionTokens)
	case f.InputTokens != nil || f.OutputTokens != nil:
		reported = true
		u.PromptTokens = deref(f.InputTokens)
		u.CompletionTokens = deref(f.OutputTokens)
		if f.InputTokensDetails == nil {
			// Anthropic: input_tokens exclude what was read from or written to the cache.
			u.PromptTokens += f.CacheReadInputTokens + f.CacheCreationInputTokens
		}
	case f.PromptTokenCount != nil || f.CandidatesTokenCount != nil:
		reported = true
		u.PromptTokens = deref(f.PromptTokenCount)
		u.CompletionTokens = deref(f.CandidatesTokenCount) + f.ThoughtsTokenCount
	}
	for _, c := range []int64{detail(f.PromptTokensDetails), detail(f.InputTokensDetails), f.CacheReadInputTokens,
		f.PromptCacheHitTokens, f.CachedTokens, f.CachedContentTokenCount} {
		if c > 0 {
			u.CachedPromptTokens = c
			break
		}
	}
	u.CacheWritePromptTokens = max(f.CacheCreationInputTokens, 0)
	if cc := f.CacheCreation; cc != nil {
		if f.CacheCreationInputTokens == 0 {
			u.CacheWritePromptTokens = cc.Ephemeral5m + cc.Ephemeral1h
			if f.InputTokens != nil && f.InputTokensDetails == nil && f.PromptTokens == nil {
				u.PromptTokens += u.CacheWritePromptTokens // Anthropic: not counted in input_tokens
			}
		}
		u.CacheWrite1hPromptTokens = min(cc.Ephemeral1h, u.CacheWritePromptTokens)
	}
	u.OrchestrationInputTokens = f.OrchestrationInputTokens
	u.OrchestrationInputCachedTokens = f.OrchestrationInputCachedTokens
	u.OrchestrationOutputTokens = f.OrchestrationOutputTokens
	if u.OrchestrationInputTokens+u.OrchestrationOutputTokens > 0 {
		reported = true
	}
	return u, reported, nil
}

// checkRange returns a *UsageRangeError for the first token count, in the order
// of usageFields, outside 0..MaxUsageTokens.
func (f *usageFields) checkRange() error {
	for _, c := range []struct {
		name string
		v    int64
	}{
		{"prompt_tokens", deref(f.PromptTokens)},
		{"completion_tokens", deref(f.CompletionTokens)},
		{"prompt_tokens_details.cached_tokens", detail(f.PromptTokensDetails)},
		{"input_tokens", deref(f.InputTokens)},
		{"output_tokens", deref(f.OutputTokens)},
		{"input_tokens_details.cached_tokens", detail(f.InputTokensDetails)},
		{"cache_read_input_tokens", f.CacheReadInputTokens},
		{"cache_creation_input_tokens", f.CacheCreationInputTokens},
		{"cache_creation.ephemeral_5m_input_tokens", cacheCreation(f, false)},
		{"cache_creation.ephemeral_1h_input_tokens", cacheCreation(f, true)},
		{"prompt_cache_hit_tokens", f.PromptCacheHitTokens},
		{"cached_tokens", f.CachedTokens},
		{"promptTokenCount", deref(f.PromptTokenCount)},
		{"candidatesTokenCount", deref(f.CandidatesTokenCount)},
		{"thoughtsTokenCount", f.ThoughtsTokenCount},
		{"cachedContentTokenCount", f.CachedContentTokenCount},
		{"orchestration_input_tokens", f.OrchestrationInputTokens},
		{"orchestration_input_cached_tokens", f.OrchestrationInputCachedTokens},
		{"orchestration_output_tokens", f.OrchestrationOutputTokens},
	} {
		if c.v < 0 || c.v > MaxUsageTokens {
			return &UsageRangeError{Field: c.name, Value: c.v}
		}
	}
	return nil
}

// cacheCreation is one lifetime's count of f.CacheCreation (0 when absent).
func cacheCreation(f *usageFields, oneHour bool) int64 {
	switch {
	case f.CacheCreation == nil:
		return 0
	case oneHour:
		return f.CacheCreation.Ephemeral1h
	}
	return f.CacheCreation.Ephemeral5m
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

func detail(d *struct {
	CachedTokens int64 `json:"cached_tokens"`
}) int64 {
	if d == nil {
		return 0
	}
	return d.CachedTokens
}
