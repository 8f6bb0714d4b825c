package shadow

import "strings"

// modelFamilies maps a model id's leading name (after BaseModelID, lower-cased,
// without a provider path such as "openai/" or "models/") to the family of
// models it belongs to: one vendor's line of models, which share training
// data and style. An LLM judge prefers answers of its own family
// (self-preference: Panickssery et al. 2024, "LLM Evaluators Recognize and
// Favor Their Own Generations"; Zheng et al. 2023, MT-Bench §4), so a judge
// should not share a family with the pipelines it compares. The first
// matching prefix wins: "deepseek-r1-distill-qwen-32b" is DeepSeek's.
var modelFamilies = []struct{ prefix, family string }{
	{"gpt-", "openai"}, {"chatgpt", "openai"}, {"o1", "openai"}, {"o3", "openai"}, {"o4", "openai"},
	{"text-davinci", "openai"}, {"davinci", "openai"},
	{"claude", "anthropic"},
	{"gemini", "google"}, {"gemma", "google"}, {"palm", "google"},
	{"qwen", "qwen"}, {"qwq", "qwen"},
	{"deepseek", "deepseek"},
	{"llama", "meta"}, {"meta-llama", "meta"},
	{"mistral", "mistral"}, {"mixtral", "mistral"}, {"codestral", "mistral"}, {"ministral", "mistral"}, {"magistral", "mistral"},
	{"grok", "xai"},
	{"command", "cohere"},
	{"phi-", "microsoft"},
	{"fugu", "sakana"},
	{"kimi", "moonshot"}, {"moonshot", "moonshot"},
	{"glm", "zhipu"},
}

// ModelFamily returns the family of a model id, e.g. "openai" for "gpt-5" and
// "gpt-4o-2024-08-06", "anthropic" for "claude-sonnet-4-20250514", "google"
// for "gemini-2.5-pro" and "gemma-3-27b", "qwen" for "qwen3-32b", "deepseek",
// "meta", "mistral", "xai", "cohere", "microsoft", "sakana", "moonshot",
// "zhipu". The id is read as the price table reads it (BaseModelID: date
// snapshot and "-latest" dropped), lower-cased, after the last "/" of a
// provider path ("openai/gpt-4o", "models/gemini-2.5-pro"). "" when the family
// is unknown (a custom or fine-tuned name): callers say it cannot be checked.
func ModelFamily(id string) string {
	id = strings.ToLower(BaseModelID(id))
	if i := strings.LastIndex(id, "/"); i >= 0 {
		id = id[i+1:]
	}
	for _, f := range modelFamilies {
		if strings.HasPrefix(id, f.prefix) {
			return f.family
		}
	}
	return ""
}
