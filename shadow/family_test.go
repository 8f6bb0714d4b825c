package shadow

import "testing"

func TestModelFamily(t *testing.T) {
	for id, want := range map[string]string{
		"gpt-5":                        "openai",
		"gpt-4o-2024-08-06":            "openai",
		"openai/gpt-4o-mini":           "openai",
		"o3":                           "openai",
		"o4-mini":                      "openai",
		"claude-sonnet-4-20250514":     "anthropic",
		"claude-opus-4-1":              "anthropic",
		"anthropic/claude-3-5-haiku":   "anthropic",
		"gemini-2.5-pro":               "google",
		"models/gemini-2.5-flash":      "google",
		"gemma-3-27b":                  "google",
		"qwen3-32b":                    "qwen",
		"Qwen/Qwen2.5-72B-Instruct":    "qwen",
		"qwen3-32b-thinking":           "qwen",
		"deepseek-r1-distill-qwen-32b": "deepseek",
		"deepseek-chat":                "deepseek",
		"llama-3.3-70b":                "meta",
		"meta-llama/Llama-3.1-8B":      "meta",
		"mixtral-8x7b":                 "mistral",
		"grok-4":                       "xai",
		"fugu-ultra":                   "sakana",
		"conductor":                    "",
		"my-finetune":                  "",
		"":                             "",
	} {
		if got := ModelFamily(id); got != want {
			t.Errorf("ModelFamily(%q) = %q, want %q", id, got, want)
		}
	}
}
