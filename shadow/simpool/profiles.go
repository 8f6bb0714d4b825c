package simpool

import (
	"sort"
	"strings"
	"time"
)

// Family is the accuracy column a question is scored against. A regression-set case
// maps to exactly one family (see FamilyOf).
type Family string

const (
	// FamilyGSM8K is grade-school word problems. Profiles without their own GSM8K
	// figure use the MATH500 column: real GSM8K accuracies are usually a few points
	// higher than MATH-500 ones, so the simulation is conservative here.
	FamilyGSM8K Family = "gsm8k"
	// FamilyMath is MATH-500 subjects (Table 1 column MATH500).
	FamilyMath Family = "math500"
	// FamilyMMLU is MMLU subjects (Table 1 column MMLU).
	FamilyMMLU Family = "mmlu"
	// FamilyAIME is AIME problems (Table 1 column AIME25).
	FamilyAIME Family = "aime25"
	// FamilyCode is HumanEval tasks, scored with the LiveCodeBench v6 column: like
	// HumanEval it asks for standalone algorithmic functions from a description,
	// whereas BigCodeBench measures library/API usage and its spread across models
	// (14.9–37.5) is so compressed that it would hide the differences HumanEval
	// shows. HumanEval is easier than LiveCodeBench, so absolute scores are low.
	FamilyCode Family = "code"
	// FamilyGeneral is everything else: the mean of the seven Table 1 columns.
	FamilyGeneral Family = "general"
)

// Profile is one simulated model: accuracy by family, latency and verbosity.
//
// Latency of one call = TTFT + CompletionTokens / TokensPerSecond, multiplied by
// Config.LatencyScale. For Thinking models the hidden reasoning tokens are billed as
// completion tokens (usage.completion_tokens_details.reasoning_tokens) and delay the
// first visible token.
type Profile struct {
	Name string `yaml:"name"`
	// Accuracy is the probability in [0,1] of a correct answer per family.
	Accuracy map[Family]float64 `yaml:"accuracy"`
	// TTFT is the time to the first token before any reasoning.
	TTFT time.Duration `yaml:"ttft"`
	// TokensPerSecond is the decode speed in output tokens per second.
	TokensPerSecond float64 `yaml:"tokens_per_second"`
	// OutputTokens is the mean number of completion tokens (reasoning included) for
	// a MATH-500 question; other families scale it (see verbosityFactor).
	OutputTokens int `yaml:"output_tokens"`
	// Thinking marks reasoning models: most completion tokens are hidden reasoning.
	Thinking bool `yaml:"thinking"`
	// BudgetTokens is the completion-token cap the accuracy figures were measured
	// at; a correct answer fits within it (see answerWorker). 0: no budget.
	// Default PaperBudgetTokens.
	BudgetTokens int `yaml:"budget_tokens"`
	// Source says where the figures come from.
	Source string `yaml:"source"`
	// RefuseHarmful is the probability of refusing a harmful request (a refusal
	// probe expecting "refuse"); OverRefuse of refusing a harmless one that
	// sounds harmful (expecting "comply").
	RefuseHarmful float64 `yaml:"refuse_harmful"`
	OverRefuse    float64 `yaml:"over_refuse"`
	// InjectionObey is the probability of obeying an instruction carried by an
	// earlier step's response shown as a plain chat turn; shown delimited as
	// data (shadow.StepOutput with the data note) it is DelimitedObeyFactor
	// times that.
	InjectionObey float64 `yaml:"injection_obey"`
	// InputModalities are the input kinds the model takes besides text:
	// "image", "audio", "file". A request carrying another kind is answered
	// 400, as text-only servers do. Empty: text only.
	InputModalities []string `yaml:"input_modalities"`
}

// inputModalities are the simulated models that take more than text, from
// the providers' model cards (the same as shadow.DefaultInputModalities):
// gpt-5 and claude-sonnet-4 images and PDF files, gemini-2.5-pro images,
// audio and files, gemma-3-27b images. The others take text only.
var inputModalities = map[string][]string{
	"gpt-5":           {"text", "image", "file"},
	"claude-sonnet-4": {"text", "image", "file"},
	"gemini-2.5-pro":  {"text", "image", "audio", "file"},
	"gemma-3-27b":     {"text", "image"},
}

// Takes reports whether the profile takes input of modality m (text always).
func (p Profile) Takes(m string) bool {
	if m == "text" {
		return true
	}
	for _, x := range p.InputModalities {
		if x == m {
			return true
		}
	}
	return false
}

// DelimitedObeyFactor scales Profile.InjectionObey when the earlier response
// is delimited as data. An estimate: delimiting lowers but does not remove
// indirect prompt injection (Hines et al. 2024, "Defending Against Indirect
// Prompt Injection Attacks With Spotlighting", arXiv 2403.14720).
const DelimitedObeyFactor = 0.3

// safety holds the refusal and injection figures per model: estimates in the
// range reported for frontier and open 27–32B models by refusal benchmarks
// (XSTest, Röttger et al. 2024, for over-refusal) and agent injection
// benchmarks (AgentDojo, Debenedetti et al. 2024, attack success 10–50%);
// not measurements of these models.
var safety = map[string]struct{ refuse, over, obey float64 }{
	"gpt-5":                        {0.98, 0.03, 0.10},
	"gemini-2.5-pro":               {0.95, 0.04, 0.15},
	"claude-sonnet-4":              {0.99, 0.06, 0.08},
	"deepseek-r1-distill-qwen-32b": {0.80, 0.03, 0.35},
	"qwen3-32b":                    {0.88, 0.04, 0.30},
	"qwen3-32b-thinking":           {0.90, 0.04, 0.30},
	"gemma-3-27b":                  {0.92, 0.08, 0.40},
	"gpt-4-1106-preview":           {0.95, 0.08, 0.30},
}

// AccuracyFor returns the probability of a correct answer for family f. GSM8K falls
// back to MATH500 and any missing family to FamilyGeneral.
func (p Profile) AccuracyFor(f Family) float64 {
	if a, ok := p.Accuracy[f]; ok {
		return a
	}
	if f == FamilyGSM8K {
		if a, ok := p.Accuracy[FamilyMath]; ok {
			return a
		}
	}
	return p.Accuracy[FamilyGeneral]
}

// table1 is the Conductor paper's (arXiv 2512.04388) Table 1, accuracy % with each
// model at its full budget: MATH500, MMLU, RLPR, LiveCodeBench v6, AIME25,
// BigCodeBench, GPQA-Diamond.
var table1 = map[string][7]float64{
	"gemma-3-27b":                  {39.8, 81.3, 16.67, 13.14, 20.7, 14.86, 38.4},
	"qwen3-32b":                    {73.5, 83.5, 31.00, 21.21, 20.0, 30.41, 64.1},
	"qwen3-32b-thinking":           {80.7, 84.1, 37.25, 25.86, 72.9, 28.38, 66.8},
	"deepseek-r1-distill-qwen-32b": {82.5, 84.4, 33.50, 26.86, 63.0, 33.07, 58.1},
	"claude-sonnet-4":              {96.0, 91.4, 36.70, 46.54, 74.3, 37.16, 77.7},
	"gemini-2.5-pro":               {96.0, 92.4, 40.55, 67.24, 78.3, 37.51, 84.8},
	"gpt-5":                        {99.0, 93.5, 42.20, 82.90, 90.8, 32.75, 82.3},
}

// speed holds the latency and verbosity figures per model. They are estimates in the
// range of public provider dashboards and benchmark sites in 2025 (time to first
// token, decode speed on a hosted endpoint), not measurements: TTFT in seconds,
// tokens per second, mean completion tokens on a MATH-500 question, thinking.
var speed = map[string]struct {
	ttftS    float64
	tps      float64
	tokens   int
	thinking bool
}{
	"gpt-5":                        {1.5, 90, 1800, true},  // reasoning hidden, billed as output
	"gemini-2.5-pro":               {2.0, 140, 1500, true}, // thinking on by default
	"claude-sonnet-4":              {1.2, 60, 550, false},  // extended thinking off
	"deepseek-r1-distill-qwen-32b": {0.5, 40, 2600, true},  // 32B on one GPU node
	"gemma-3-27b":                  {0.4, 50, 380, false},
	"qwen3-32b":                    {0.5, 45, 450, false}, // non-thinking mode
	"qwen3-32b-thinking":           {0.5, 45, 2400, true},
	"gpt-4-1106-preview":           {0.8, 35, 300, false}, // GPT-4 Turbo, 2023
}

// PaperBudgetTokens is the output cap of the Conductor paper's workers ("at most
// 4,096 output tokens"), the budget its Table 1 accuracies were measured at.
const PaperBudgetTokens = 4096

// workerModels are the Conductor paper's seven workers, strongest on MATH500 first
// (the order /v1/models lists them in).
var workerModels = []string{
	"gpt-5", "gemini-2.5-pro", "claude-sonnet-4", "deepseek-r1-distill-qwen-32b",
	"qwen3-32b-thinking", "qwen3-32b", "gemma-3-27b",
}

// IncumbentModel is an extra, non-worker profile standing in for a production
// incumbent (the model whose real answers the shipped replay file carries).
const IncumbentModel = "gpt-4-1106-preview"

// WorkerModels returns the names of the seven simulated workers of the Conductor
// paper's pool.
func WorkerModels() []string { return append([]string(nil), workerModels...) }

// DefaultProfiles returns the profiles of the seven workers and of IncumbentModel,
// sorted by name. Accuracy comes from Table 1 of the Conductor paper (the general
// default is the mean of its seven columns); IncumbentModel's accuracy comes from
// the RouteLLM labels shipped with the datasets (GSM8K 126/150, MMLU 75/95) and
// OpenAI's simple-evals figures for gpt-4-1106-preview (MATH 64.1, HumanEval 83.7,
// scaled down to a LiveCodeBench-like 30 as an estimate); its AIME figure (3%) is
// an estimate.
func DefaultProfiles() []Profile {
	out := make([]Profile, 0, len(table1)+1)
	for name, row := range table1 {
		var sum float64
		for _, v := range row {
			sum += v
		}
		acc := map[Family]float64{
			FamilyMath:    row[0] / 100,
			FamilyMMLU:    row[1] / 100,
			FamilyCode:    row[3] / 100,
			FamilyAIME:    row[4] / 100,
			FamilyGeneral: sum / 7 / 100,
		}
		out = append(out, newProfile(name, acc,
			"accuracy: Conductor paper (arXiv 2512.04388) Table 1; latency/verbosity: estimates"))
	}
	out = append(out, newProfile(IncumbentModel, map[Family]float64{
		FamilyGSM8K:   126.0 / 150,
		FamilyMath:    0.641,
		FamilyMMLU:    75.0 / 95,
		FamilyCode:    0.30,
		FamilyAIME:    0.03,
		FamilyGeneral: 0.55,
	}, "accuracy: RouteLLM labels (GSM8K, MMLU) and OpenAI simple-evals (MATH); code, AIME, general and latency: estimates"))
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func newProfile(name string, acc map[Family]float64, source string) Profile {
	s := speed[name]
	return Profile{
		Name:            name,
		Accuracy:        acc,
		TTFT:            time.Duration(s.ttftS * float64(time.Second)),
		TokensPerSecond: s.tps,
		OutputTokens:    s.tokens,
		Thinking:        s.thinking,
		BudgetTokens:    PaperBudgetTokens,
		Source:          source + "; refusal and injection figures: estimates",
		RefuseHarmful:   safety[name].refuse,
		OverRefuse:      safety[name].over,
		InjectionObey:   safety[name].obey,
		InputModalities: inputModalities[name],
	}
}

// conductorProfile is the simulated planner: a 7B model (the paper's Conductor is
// Qwen2.5-7B based); figures are estimates for a small hosted model.
var conductorProfile = Profile{
	Name:            "conductor",
	TTFT:            200 * time.Millisecond,
	TokensPerSecond: 150,
	Source:          "estimate for a 7B planner",
}

// verbosityFactor scales a profile's OutputTokens by the kind of question: short
// for multiple choice, long for competition maths (thinking models spend several
// thousand tokens on AIME), a little longer for code.
func verbosityFactor(f Family) float64 {
	switch f {
	case FamilyMMLU:
		return 0.35
	case FamilyGSM8K:
		return 0.7
	case FamilyAIME:
		return 3.0
	case FamilyCode:
		return 1.2
	default:
		return 1.0
	}
}

// FamilyOf maps a regression-set case to its accuracy family: AIME by id or
// category (any case naming "aime", or category competition_math), multiple
// choice (MMLU) by grader or choices, code by grader or entry point, GSM8K by
// category math_word_problem or an id or category naming "gsm8k", other maths
// by grader or an id or category naming "math"; anything else is
// FamilyGeneral. Ids and categories are compared case-insensitively, so a new
// set ("AIME-2024-I-3", category "AIME 2024") lands in its family.
func FamilyOf(c Case) Family {
	id, cat := strings.ToLower(c.ID), strings.ToLower(c.Category)
	has := func(s string) bool { return strings.Contains(id, s) || strings.Contains(cat, s) }
	switch {
	case cat == "competition_math" || has("aime"):
		return FamilyAIME
	case c.Grader == "choice" || len(c.Choices) > 0:
		return FamilyMMLU
	case c.Grader == "code" || c.EntryPoint != "":
		return FamilyCode
	case cat == "math_word_problem" || has("gsm8k"):
		return FamilyGSM8K
	case c.Grader == "math" || c.Grader == "numeric" || has("math"):
		return FamilyMath
	default:
		return FamilyGeneral
	}
}
