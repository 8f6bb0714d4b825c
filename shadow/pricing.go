package shadow

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// Price is a model's list price in USD per 1,000,000 tokens.
type Price struct {
	InputUSDPerMTok  float64 // USD per 1M prompt tokens (not served from cache)
	OutputUSDPerMTok float64 // USD per 1M completion tokens
	// CachedInputUSDPerMTok is USD per 1M prompt tokens served from the
	// provider's prompt cache; 0 means no cached price is known and cached tokens
	// are charged at InputUSDPerMTok.
	CachedInputUSDPerMTok float64
	// CacheWriteUSDPerMTok is USD per 1M prompt tokens written to the provider's
	// prompt cache (Anthropic's cache_creation_input_tokens); 0 means the provider
	// does not bill writes apart and they are charged at InputUSDPerMTok.
	// Anthropic bills a 5-minute cache write at 1.25× the base input price
	// (AnthropicCacheWriteMultiplier, anthropic.com/pricing).
	CacheWriteUSDPerMTok float64
	// CacheWrite1hUSDPerMTok is USD per 1M prompt tokens written to a 1-hour
	// prompt cache (Anthropic's usage.cache_creation.ephemeral_1h_input_tokens);
	// 0 means they are charged at the cache-write rate above. Anthropic bills
	// them at 2× the base input price (AnthropicCacheWrite1hMultiplier).
	CacheWrite1hUSDPerMTok float64
	AsOf                   string // date the price is valid from, YYYY-MM-DD
	Estimate               bool   // true when no single provider list price exists (open models)
	Source                 string // where the figure comes from
}

// Usage is the token usage of one call, as the API reported it.
type Usage struct {
	PromptTokens       int64 // input tokens, cached ones included
	CompletionTokens   int64 // output tokens, reasoning tokens included
	CachedPromptTokens int64 // of PromptTokens, those served from the prompt cache (usage.prompt_tokens_details.cached_tokens)
	// CacheWritePromptTokens are, of PromptTokens, those written to the prompt
	// cache on this call (Anthropic's usage.cache_creation_input_tokens).
	CacheWritePromptTokens int64
	// CacheWrite1hPromptTokens are, of CacheWritePromptTokens, those written to
	// a 1-hour cache (Anthropic's usage.cache_creation.ephemeral_1h_input_tokens),
	// priced at the 1-hour cache-write rate.
	CacheWrite1hPromptTokens int64
	// Orchestration* are the extra usage fields a black-box orchestrator API
	// (Sakana's Fugu) reports for its own planning: usage.orchestration_input_tokens,
	// orchestration_input_cached_tokens (a subset of the former) and
	// orchestration_output_tokens. They are taken to be in addition to
	// prompt_tokens / completion_tokens and priced at the same rates.
	OrchestrationInputTokens       int64
	OrchestrationInputCachedTokens int64
	OrchestrationOutputTokens      int64
}

// AnthropicCacheWriteMultiplier is the price of writing a prompt to Anthropic's
// 5-minute cache relative to the model's base input price (1.25×); a cache read
// costs 0.1× (the cached-input price of DefaultPrices). Source: Anthropic's
// pricing page, anthropic.com/pricing ("5m cache writes", "cache hits & refreshes").
const AnthropicCacheWriteMultiplier = 1.25

// AnthropicCacheWrite1hMultiplier is the price of writing a prompt to
// Anthropic's 1-hour cache relative to the base input price (2×), from the same
// page ("1h cache writes").
const AnthropicCacheWrite1hMultiplier = 2

// Cost returns the USD cost of u at price p:
//
//	( (prompt − cached − written + orchIn − orchCached) × input
//	+ (cached + orchCached) × cachedInput
//	+ (written − written1h) × cacheWrite
//	+ written1h × cacheWrite1h
//	+ (completion + orchOut) × output ) / 1e6
//
// where cachedInput is InputUSDPerMTok when CachedInputUSDPerMTok is 0,
// cacheWrite is InputUSDPerMTok when CacheWriteUSDPerMTok is 0 and cacheWrite1h
// is cacheWrite when CacheWrite1hUSDPerMTok is 0. cached is clamped to prompt,
// written to what remains of prompt after cached, written1h to written.
func (p Price) Cost(u Usage) float64 {
	cachedRate := p.CachedInputUSDPerMTok
	if cachedRate == 0 {
		cachedRate = p.InputUSDPerMTok
	}
	writeRate := p.CacheWriteUSDPerMTok
	if writeRate == 0 {
		writeRate = p.InputUSDPerMTok
	}
	write1hRate := p.CacheWrite1hUSDPerMTok
	if write1hRate == 0 {
		write1hRate = writeRate
	}
	promptCached := min(max(u.CachedPromptTokens, 0), u.PromptTokens)
	written := min(max(u.CacheWritePromptTokens, 0), u.PromptTokens-promptCached)
	written1h := min(max(u.CacheWrite1hPromptTokens, 0), written)
	cached := promptCached + min(u.OrchestrationInputCachedTokens, u.OrchestrationInputTokens)
	fresh := u.PromptTokens + u.OrchestrationInputTokens - cached - written
	out := u.CompletionTokens + u.OrchestrationOutputTokens
	return (float64(fresh)*p.InputUSDPerMTok + float64(cached)*cachedRate + float64(written-written1h)*writeRate +
		float64(written1h)*write1hRate + float64(out)*p.OutputUSDPerMTok) / 1e6
}

// PriceTableVersion identifies a set of prices: "pt-" and the first 12 hex
// characters of sha256 over the prices as JSON, by name in sorted order (the
// input, cached-input, cache-write, 1-hour cache-write and output rates and the
// valid-from date; a zero cache-write rate is left out, so tables without one
// keep the version they had before that rate existed). It is stored on
// every step so a cost can be traced to the prices it was computed with.
func PriceTableVersion(prices map[string]Price) string {
	type row struct {
		Name            string
		In, Cached, Out float64
		Write           float64 `json:",omitempty"`
		AsOf            string
		Write1h         float64 `json:",omitempty"`
	}
	rows := make([]row, 0, len(prices))
	for _, n := range slices.Sorted(maps.Keys(prices)) {
		p := prices[n]
		rows = append(rows, row{n, p.InputUSDPerMTok, p.CachedInputUSDPerMTok, p.OutputUSDPerMTok, p.CacheWriteUSDPerMTok, p.AsOf, p.CacheWrite1hUSDPerMTok})
	}
	b, _ := json.Marshal(rows) // plain structs: cannot fail
	sum := sha256.Sum256(b)
	return "pt-" + hex.EncodeToString(sum[:])[:12]
}

// DefaultPrices returns the default list prices by worker/model name: the
// paper's seven workers, the conductor, the replay file's incumbent, and common
// OpenAI, Anthropic, Google and open models. NewDefaultConfig uses the first
// nine; configuration overrides them. Figures are list prices (USD per 1M
// tokens: input / output, cached input) from the providers' pricing pages,
// valid from AsOf (the model's release or the last price change known):
//
//   - OpenAI (openai.com/api/pricing): gpt-5 1.25/10, cached 0.125 (2025-08-07);
//     gpt-5-mini 0.25/2, 0.025 and gpt-5-nano 0.05/0.40, 0.005 (2025-08-07);
//     gpt-4.1 2/8, 0.50; gpt-4.1-mini 0.40/1.60, 0.10 (2025-04-14); gpt-4o
//     2.50/10, 1.25 (2024-10-01); gpt-4o-mini 0.15/0.60, 0.075 (2024-10-01); o3
//     2/8, 0.50 (price cut 2025-06-10); o4-mini 1.10/4.40, 0.275 (2025-04-16);
//     gpt-4-1106-preview 10/30, no cache (DevDay 2023-11-06; the incumbent of the
//     shipped replay file).
//   - Anthropic (anthropic.com/pricing; cached = cache-read price, 0.1× input;
//     cache write = 5-minute cache write, 1.25× input, AnthropicCacheWriteMultiplier;
//     1-hour cache write 2× input, AnthropicCacheWrite1hMultiplier):
//     claude-sonnet-4
//     3/15, 0.30 (2025-05-22); claude-opus-4 15/75, 1.50 (2025-05-22);
//     claude-opus-4.1 15/75, 1.50 (2025-08-05); claude-sonnet-4.5 3/15, 0.30
//     (2025-09-29); claude-haiku-4.5 1/5, 0.10 (2025-10-15); claude-3.5-haiku
//     0.80/4, 0.08 (2024-11-04).
//   - Google (ai.google.dev/gemini-api/docs/pricing; prompts up to 200k tokens,
//     longer prompts cost more and are not modelled): gemini-2.5-pro 1.25/10,
//     cached 0.31 (GA 2025-06-17); gemini-2.5-flash 0.30/2.50, 0.075
//     (2025-06-17); gemini-2.5-flash-lite 0.10/0.40, 0.025 (2025-07-22).
//   - DeepSeek API (api-docs.deepseek.com/quick_start/pricing; cached = cache
//     hit): deepseek-chat (V3) 0.27/1.10, 0.07 and deepseek-reasoner (R1)
//     0.55/2.19, 0.14 (standard hours, from 2025-02-09).
//   - ESTIMATES (no single list price; hosted open models at inference providers,
//     late 2025): gemma-3-27b 0.10/0.30; qwen3-32b and qwen3-32b-thinking
//     0.20/0.60; deepseek-r1-distill-qwen-32b 0.30/0.60; llama-3.3-70b 0.60/0.60;
//     llama-3.1-8b 0.05/0.08; conductor (the paper's 7B conductor model; the paper
//     publishes no price) 0.05/0.10. No cached prices.
func DefaultPrices() map[string]Price {
	const (
		openEstimate = "estimate: hosted open 27-32B models cost roughly 0.1-0.3 / 0.3-0.6 USD per 1M tokens (DESIGN.md)"
		hosted       = "estimate: hosted open model at inference providers, late 2025"
		oai          = "OpenAI API pricing, openai.com/api/pricing"
		anth         = "Anthropic API pricing (cached = cache read 0.1x input, cache write = 5-minute write 1.25x input, 1-hour write 2x input), anthropic.com/pricing"
		goog         = "Gemini API pricing (prompts <= 200k tokens), ai.google.dev/gemini-api/docs/pricing"
		dsk          = "DeepSeek API pricing (cached = cache hit), api-docs.deepseek.com/quick_start/pricing"
	)
	p := func(in, out, cached float64, asOf, src string) Price {
		return Price{InputUSDPerMTok: in, OutputUSDPerMTok: out, CachedInputUSDPerMTok: cached, AsOf: asOf, Source: src}
	}
	// a prices an Anthropic model: its cache write costs AnthropicCacheWriteMultiplier × input
	// (5 minutes), AnthropicCacheWrite1hMultiplier × input (1 hour).
	a := func(in, out, cached float64, asOf string) Price {
		pr := p(in, out, cached, asOf, anth)
		pr.CacheWriteUSDPerMTok = in * AnthropicCacheWriteMultiplier
		pr.CacheWrite1hUSDPerMTok = in * AnthropicCacheWrite1hMultiplier
		return pr
	}
	est := func(in, out float64, src string) Price {
		return Price{InputUSDPerMTok: in, OutputUSDPerMTok: out, AsOf: "2025-12-01", Estimate: true, Source: src}
	}
	return map[string]Price{
		// The paper's seven workers.
		"gpt-5":                        p(1.25, 10, 0.125, "2025-08-07", oai),
		"claude-sonnet-4":              a(3, 15, 0.30, "2025-05-22"),
		"gemini-2.5-pro":               p(1.25, 10, 0.31, "2025-06-17", goog),
		"gemma-3-27b":                  est(0.10, 0.30, openEstimate),
		"qwen3-32b":                    est(0.20, 0.60, openEstimate),
		"qwen3-32b-thinking":           est(0.20, 0.60, openEstimate),
		"deepseek-r1-distill-qwen-32b": est(0.30, 0.60, openEstimate),
		// The conductor and the replay file's incumbent.
		"conductor":          est(0.05, 0.10, "estimate: hosted 7B open model; no published price"),
		"gpt-4-1106-preview": p(10, 30, 0, "2023-11-06", "OpenAI API pricing for GPT-4 Turbo, announced at DevDay 2023-11-06"),
		// Common OpenAI models.
		"gpt-5-mini":   p(0.25, 2, 0.025, "2025-08-07", oai),
		"gpt-5-nano":   p(0.05, 0.40, 0.005, "2025-08-07", oai),
		"gpt-4.1":      p(2, 8, 0.50, "2025-04-14", oai),
		"gpt-4.1-mini": p(0.40, 1.60, 0.10, "2025-04-14", oai),
		"gpt-4o":       p(2.50, 10, 1.25, "2024-10-01", oai),
		"gpt-4o-mini":  p(0.15, 0.60, 0.075, "2024-10-01", oai),
		"o3":           p(2, 8, 0.50, "2025-06-10", oai),
		"o4-mini":      p(1.10, 4.40, 0.275, "2025-04-16", oai),
		// Common Anthropic models.
		"claude-opus-4":     a(15, 75, 1.50, "2025-05-22"),
		"claude-opus-4.1":   a(15, 75, 1.50, "2025-08-05"),
		"claude-sonnet-4.5": a(3, 15, 0.30, "2025-09-29"),
		"claude-haiku-4.5":  a(1, 5, 0.10, "2025-10-15"),
		"claude-3.5-haiku":  a(0.80, 4, 0.08, "2024-11-04"),
		// Common Google models.
		"gemini-2.5-flash":      p(0.30, 2.50, 0.075, "2025-06-17", goog),
		"gemini-2.5-flash-lite": p(0.10, 0.40, 0.025, "2025-07-22", goog),
		// Open models.
		"deepseek-chat":     p(0.27, 1.10, 0.07, "2025-02-09", dsk),
		"deepseek-reasoner": p(0.55, 2.19, 0.14, "2025-02-09", dsk),
		"llama-3.3-70b":     est(0.60, 0.60, hosted),
		"llama-3.1-8b":      est(0.05, 0.08, hosted),
	}
}

// snapshotSuffix is a trailing date snapshot on a model id: "-20250514"
// (Anthropic, "claude-sonnet-4-20250514") or "-2024-08-06" (OpenAI,
// "gpt-4o-2024-08-06"), and the alias "-latest" ("claude-3-5-haiku-latest").
var snapshotSuffix = regexp.MustCompile(`-(?:\d{8}|\d{4}-\d{2}-\d{2}|latest)$`)

// anthropicMinor is Anthropic's dash spelling of a minor version in a model id:
// "claude-opus-4-1" and "claude-3-5-haiku" are listed as "claude-opus-4.1" and
// "claude-3.5-haiku" on anthropic.com/pricing.
var anthropicMinor = regexp.MustCompile(`(\b\d)-(\d)(-|$)`)

// BaseModelID returns the id a model is priced under: id without a trailing date
// snapshot ("-YYYYMMDD", "-YYYY-MM-DD") or "-latest" alias, and for "claude-"
// models with the minor version spelled with a dot as in the price list
// (claude-opus-4-1 ≡ claude-opus-4.1, claude-3-5-haiku ≡ claude-3.5-haiku).
// Examples: "claude-sonnet-4-20250514" → "claude-sonnet-4",
// "gpt-4o-2024-08-06" → "gpt-4o", "claude-opus-4-1-20250805" → "claude-opus-4.1".
// Other ids are returned unchanged ("gpt-4-1106-preview" keeps its "-1106").
// Leading and trailing space is dropped; case is kept.
func BaseModelID(id string) string {
	id = strings.TrimSpace(id)
	id = snapshotSuffix.ReplaceAllString(id, "")
	if strings.HasPrefix(id, "claude-") {
		// Twice: a replacement consumes the dash after it (claude-3-5-7 is not an id,
		// but claude-3-5-haiku-4-5 would need it).
		for range 2 {
			id = anthropicMinor.ReplaceAllString(id, "$1.$2$3")
		}
	}
	return id
}

// ResolvePrice finds the price of a model in prices (keyed by model or worker
// name). ids are tried in order, typically the model the API answered with
// (response.model) and then the one the client asked for (request.model); each
// first exactly, then by BaseModelID of both the id and the table's keys, so a
// dated snapshot or Anthropic's dash spelling finds its list price. It returns
// the price, the table key it was found under, and false when no id has a
// price (the caller records cost 0 and says so).
func ResolvePrice(prices map[string]Price, ids ...string) (Price, string, bool) {
	for _, id := range ids {
		if id == "" {
			continue
		}
		if p, ok := prices[id]; ok {
			return p, id, true
		}
		base := BaseModelID(id)
		if p, ok := prices[base]; ok {
			return p, base, true
		}
		for _, k := range slices.Sorted(maps.Keys(prices)) {
			if BaseModelID(k) == base {
				return prices[k], k, true
			}
		}
	}
	return Price{}, "", false
}
