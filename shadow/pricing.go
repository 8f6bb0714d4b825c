package shadow

// Price is a model's list price in USD per 1,000,000 tokens.
type Price struct {
	InputUSDPerMTok  float64 // USD per 1M prompt tokens
	OutputUSDPerMTok float64 // USD per 1M completion tokens
	AsOf             string  // date the price is valid from, YYYY-MM-DD
	Estimate         bool    // true when no single provider list price exists (open models)
	Source           string  // where the figure comes from
}

// Usage is the token usage of one call, as the API reported it.
type Usage struct {
	PromptTokens     int64 // input tokens
	CompletionTokens int64 // output tokens, reasoning tokens included
}

// Cost returns the USD cost of u at price p:
// (prompt tokens × input price + completion tokens × output price) / 1e6.
func (p Price) Cost(u Usage) float64 {
	return (float64(u.PromptTokens)*p.InputUSDPerMTok + float64(u.CompletionTokens)*p.OutputUSDPerMTok) / 1e6
}

// DefaultPrices returns the default list prices by worker name, used by
// NewDefaultConfig; configuration overrides them. Figures are those of DESIGN.md
// "Figures from the sources":
//
//   - gpt-5: 1.25 / 10, OpenAI API pricing (openai.com/api/pricing), from the
//     model's release on 2025-08-07.
//   - claude-sonnet-4: 3 / 15, Anthropic API pricing (anthropic.com/pricing), from
//     the model's release on 2025-05-22.
//   - gemini-2.5-pro: 1.25 / 10 for prompts up to 200k tokens (2.50 / 15 above;
//     not modelled), Gemini API pricing (ai.google.dev/gemini-api/docs/pricing),
//     from general availability on 2025-06-17.
//   - gemma-3-27b, qwen3-32b, qwen3-32b-thinking, deepseek-r1-distill-qwen-32b:
//     ESTIMATES. Open 27–32B models cost roughly 0.1–0.3 / 0.3–0.6 at hosting
//     providers (late 2025); there is no single list price.
//   - gpt-4-1106-preview: 10 / 30, OpenAI API pricing for GPT-4 Turbo, from its
//     announcement on 2023-11-06 (the incumbent model of the shipped replay file).
//   - conductor (the 7B conductor model): ESTIMATE, priced like a hosted 7B open
//     model; the paper publishes no price for it.
func DefaultPrices() map[string]Price {
	const openEstimate = "estimate: hosted open 27-32B models cost roughly 0.1-0.3 / 0.3-0.6 USD per 1M tokens (DESIGN.md)"
	return map[string]Price{
		"gpt-5":           {InputUSDPerMTok: 1.25, OutputUSDPerMTok: 10, AsOf: "2025-08-07", Source: "OpenAI API pricing, openai.com/api/pricing"},
		"claude-sonnet-4": {InputUSDPerMTok: 3, OutputUSDPerMTok: 15, AsOf: "2025-05-22", Source: "Anthropic API pricing, anthropic.com/pricing"},
		"gemini-2.5-pro":  {InputUSDPerMTok: 1.25, OutputUSDPerMTok: 10, AsOf: "2025-06-17", Source: "Gemini API pricing (prompts <= 200k tokens), ai.google.dev/gemini-api/docs/pricing"},

		"gemma-3-27b":                  {InputUSDPerMTok: 0.10, OutputUSDPerMTok: 0.30, AsOf: "2025-12-01", Estimate: true, Source: openEstimate},
		"qwen3-32b":                    {InputUSDPerMTok: 0.20, OutputUSDPerMTok: 0.60, AsOf: "2025-12-01", Estimate: true, Source: openEstimate},
		"qwen3-32b-thinking":           {InputUSDPerMTok: 0.20, OutputUSDPerMTok: 0.60, AsOf: "2025-12-01", Estimate: true, Source: openEstimate},
		"deepseek-r1-distill-qwen-32b": {InputUSDPerMTok: 0.30, OutputUSDPerMTok: 0.60, AsOf: "2025-12-01", Estimate: true, Source: openEstimate},

		"gpt-4-1106-preview": {InputUSDPerMTok: 10, OutputUSDPerMTok: 30, AsOf: "2023-11-06", Source: "OpenAI API pricing for GPT-4 Turbo, announced at DevDay 2023-11-06"},

		"conductor": {InputUSDPerMTok: 0.05, OutputUSDPerMTok: 0.10, AsOf: "2025-12-01", Estimate: true, Source: "estimate: hosted 7B open model; no published price"},
	}
}
