package simpool

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"go.uber.org/goleak"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// setsDir is the shipped regression-sets folder.
var setsDir = filepath.Join("..", "..", "regression-sets")

var (
	casesOnce sync.Once
	casesAll  []Case
	casesErr  error
)

// shipped returns the shipped cases, optionally only those whose id has prefix.
func shipped(t *testing.T, prefix string) []Case {
	t.Helper()
	casesOnce.Do(func() { casesAll, casesErr = LoadSets(setsDir) })
	if casesErr != nil {
		t.Fatalf("load shipped sets: %v", casesErr)
	}
	var out []Case
	for _, c := range casesAll {
		if strings.HasPrefix(c.ID, prefix) {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no shipped case with prefix %q", prefix)
	}
	return out
}

// posOf returns the position of case id among the shipped cases as a server
// loading setsDir indexes them.
func posOf(t *testing.T, id string) int {
	t.Helper()
	for i, c := range shipped(t, "") {
		if c.ID == id {
			return i
		}
	}
	t.Fatalf("no case %s", id)
	return -1
}

func caseByID(t *testing.T, id string) Case {
	t.Helper()
	for _, c := range shipped(t, "") {
		if c.ID == id {
			return c
		}
	}
	t.Fatalf("no case %s", id)
	return Case{}
}

// start serves cfg on an httptest server and returns a go-openai client for it.
func start(t *testing.T, cfg Config) (*openai.Client, *httptest.Server) {
	t.Helper()
	if cfg.Cases == nil && cfg.SetsDir == "" {
		cfg.Cases = shipped(t, "")
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(func() {
		hc.CloseIdleConnections()
		ts.Close()
	})
	oc := openai.DefaultConfig("sim-key")
	oc.BaseURL = ts.URL + "/v1"
	oc.HTTPClient = hc
	return openai.NewClientWithConfig(oc), ts
}

// instant is the default config without delays.
func instant() Config {
	cfg := NewDefaultConfig()
	cfg.LatencyScale = 0
	return cfg
}

func userMsg(text string) []openai.ChatCompletionMessage {
	return []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: text}}
}

// askCase formats a case the way an evaluation harness would send it.
func askCase(c Case) string {
	q := c.Input
	for i, ch := range c.Choices {
		q += fmt.Sprintf("\n%c. %s", 'A'+i, ch)
	}
	return q
}

var boxedEndRE = regexp.MustCompile(`\\boxed\{(.*)\}\s*$`)

// gradedCorrect is the test's own grader for numeric answers: the boxed value at
// the end equals the reference.
func gradedCorrect(content, ref string) bool {
	m := boxedEndRE.FindStringSubmatch(content)
	return m != nil && strings.ReplaceAll(m[1], ",", "") == ref
}

// withinBinomial reports whether k successes of n are within z standard
// deviations of probability p (plus one count of slack).
func withinBinomial(k, n int, p, z float64) bool {
	sd := math.Sqrt(float64(n) * p * (1 - p))
	return math.Abs(float64(k)-float64(n)*p) <= z*sd+1
}

// parsedPlan is the paper's three lists parsed by the test's own strict parser.
type parsedPlan struct {
	IDs      []int
	Subtasks []string
	Access   []any
}

var planRE = regexp.MustCompile(`(?m)^(model_id|subtasks|access_list)\s*=\s*(.*)$`)

// parsePlan parses the three lists (they are valid JSON by construction of the
// simulator) and checks the rules of the format.
func parsePlan(text string, poolSize int) (parsedPlan, error) {
	var p parsedPlan
	found := map[string]bool{}
	for _, m := range planRE.FindAllStringSubmatch(text, -1) {
		var err error
		switch m[1] {
		case "model_id":
			err = json.Unmarshal([]byte(m[2]), &p.IDs)
		case "subtasks":
			err = json.Unmarshal([]byte(m[2]), &p.Subtasks)
		case "access_list":
			err = json.Unmarshal([]byte(m[2]), &p.Access)
		}
		if err != nil {
			return p, fmt.Errorf("%s: %w", m[1], err)
		}
		found[m[1]] = true
	}
	if len(found) != 3 {
		return p, fmt.Errorf("found lists %v, want all three", found)
	}
	if len(p.IDs) != len(p.Subtasks) || len(p.IDs) != len(p.Access) {
		return p, fmt.Errorf("lengths %d/%d/%d differ", len(p.IDs), len(p.Subtasks), len(p.Access))
	}
	for i, id := range p.IDs {
		if id < 0 || id >= poolSize {
			return p, fmt.Errorf("model_id[%d] = %d outside the pool", i, id)
		}
		switch a := p.Access[i].(type) {
		case string:
			if a != "all" {
				return p, fmt.Errorf("access_list[%d] = %q", i, a)
			}
		case []any:
			for _, x := range a {
				if f, ok := x.(float64); !ok || int(f) >= i || f < 0 {
					return p, fmt.Errorf("access_list[%d] names step %v, not an earlier one", i, x)
				}
			}
		default:
			return p, fmt.Errorf("access_list[%d] has type %T", i, a)
		}
	}
	return p, nil
}

// conductorPrompt lists the pool and the question as the platform might.
func conductorPrompt(pool []string, question string) string {
	var b strings.Builder
	b.WriteString("You coordinate a team of models. Write a workflow.\n\nAvailable models:\n")
	for i, m := range pool {
		fmt.Fprintf(&b, "Model %d: %s (price and strengths omitted)\n", i, m)
	}
	b.WriteString("\nQuestion:\n")
	b.WriteString(question)
	return b.String()
}

func readGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(want) != string(got) {
		t.Fatalf("%s differs from the golden file:\ngot:\n%s\nwant:\n%s", name, got, want)
	}
}
