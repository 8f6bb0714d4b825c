package dataflow

import (
	"net"
	"net/netip"
	"strings"
)

// ProviderSimulated names the simulated worker pool (cmd/simllm): every call
// of the recipient was answered by it.
const ProviderSimulated = "simulated worker pool (cmd/simllm)"

// providerHosts are the API hosts of known model providers (their documented
// OpenAI-compatible or native endpoints), matched exactly or, with a leading
// "." or "-", as a suffix.
func providerHosts() []struct{ host, name string } {
	return []struct{ host, name string }{
		{"api.openai.com", "OpenAI"},
		{".openai.azure.com", "Azure OpenAI"},
		{".services.ai.azure.com", "Azure AI Foundry"},
		{"api.anthropic.com", "Anthropic"},
		{"generativelanguage.googleapis.com", "Google (Gemini API)"},
		{"-aiplatform.googleapis.com", "Google Vertex AI"},
		{"aiplatform.googleapis.com", "Google Vertex AI"},
		{".amazonaws.com", "AWS (Bedrock)"},
		{"api.deepseek.com", "DeepSeek"},
		{"api.mistral.ai", "Mistral AI"},
		{"api.x.ai", "xAI"},
		{"api.groq.com", "Groq"},
		{"api.together.xyz", "Together AI"},
		{"api.fireworks.ai", "Fireworks AI"},
		{"openrouter.ai", "OpenRouter"},
		{"api.cohere.com", "Cohere"},
		{"api.cohere.ai", "Cohere"},
		{"api.perplexity.ai", "Perplexity"},
		{"api.moonshot.ai", "Moonshot AI"},
		{"api.moonshot.cn", "Moonshot AI"},
		{"dashscope.aliyuncs.com", "Alibaba Cloud (DashScope)"},
		{"dashscope-intl.aliyuncs.com", "Alibaba Cloud (DashScope)"},
		{"api-inference.huggingface.co", "Hugging Face"},
		{"router.huggingface.co", "Hugging Face"},
		{"api.sakana.ai", "Sakana AI"},
	}
}

// Provider names who runs the model endpoint at host (host[:port]): a known
// provider's API host, a self-hosted endpoint on loopback or a private
// network, else "unknown provider (OpenAI-compatible API)". simulated (every
// call answered by the simulated pool) wins.
func Provider(host string, simulated bool) string {
	if simulated {
		return ProviderSimulated
	}
	h := strings.ToLower(host)
	if hh, _, err := net.SplitHostPort(h); err == nil {
		h = hh
	}
	h = strings.Trim(h, "[]")
	for _, p := range providerHosts() {
		if h == p.host || (strings.HasPrefix(p.host, ".") || strings.HasPrefix(p.host, "-")) && strings.HasSuffix(h, p.host) {
			return p.name
		}
	}
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return "self-hosted (loopback)"
	}
	if a, err := netip.ParseAddr(h); err == nil {
		switch {
		case a.IsLoopback():
			return "self-hosted (loopback)"
		case a.IsPrivate() || a.IsLinkLocalUnicast():
			return "self-hosted (private network)"
		}
	}
	if h == "" {
		return "unknown"
	}
	return "unknown provider (OpenAI-compatible API)"
}
