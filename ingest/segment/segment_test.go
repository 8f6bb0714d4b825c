package segment

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFlagsAndBuckets(t *testing.T) {
	cases := []struct {
		name        string
		text        string
		table, code bool
	}{
		{"markdown table", "Compare these:\n| model | price |\n|---|--:|\n| a | 1 |\n", true, false},
		{"markdown rows without separator", "| a | b |\n| 1 | 2 |\n| 3 | 4 |", true, false},
		{"tsv", "name\tage\tcity\nann\t31\tOslo\nbob\t42\tRiga\n", true, false},
		{"csv", "id,name,score\n1,ann,0.9\n2,bob,0.7\n", true, false},
		{"semicolon csv", "id;name;score\n1;ann;0.9\n2;bob;0.7\n", true, false},
		{"fenced code", "Why does this fail?\n```go\nx := 1\n```", false, true},
		{"bare python", "def f(x):\n    y = x + 1\n    return y\n", false, true},
		{"c with tabs", "int main() {\n\tint a = 1;\n\treturn a;\n}\n", false, true},
		{"plain prose", "Write a poem about the sea, please.", false, false},
		{"lyrics tags", "[Verse 1]\nla la la\n[Chorus]\nna na na\n[Verse 2]\nlo lo", false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := HasTable(c.text); got != c.table {
				t.Errorf("HasTable = %v, want %v", got, c.table)
			}
			if got := HasCode(c.text); got != c.code {
				t.Errorf("HasCode = %v, want %v", got, c.code)
			}
		})
	}
	for _, b := range []struct {
		tokens int
		want   string
	}{{0, "0-127"}, {127, "0-127"}, {128, "128-511"}, {2047, "512-2047"}, {2048, "2048-8191"}, {9000, "8192+"}} {
		if got := Bucket(b.tokens); got != b.want {
			t.Errorf("Bucket(%d) = %s, want %s", b.tokens, got, b.want)
		}
	}
}

func TestLanguageAndNovelty(t *testing.T) {
	v := NewVocabulary("How many eggs does the duck lay per day?", "求 最小 公倍数")
	s := New(v)
	cases := []struct {
		text    string
		lang    string
		novelty float64
	}{
		{"How many eggs does the duck lay?", "en", 0},
		{"How many tables does the duck lay?", "en", 1.0 / 7},
		{"Пожалуйста, напиши короткое стихотворение о море, которое я смогу прочитать детям", "ru", 1},
		{"```\nfor i in range(3):\n    print(i)\n```\nПоправь код, чтобы он печатал числа в обратном порядке", "ru", -2},
		{"print(1)\n", "", -2},
	}
	for _, c := range cases {
		got := s.Of(c.text)
		if got.Language != c.lang {
			t.Errorf("%q: language %q, want %q", c.text, got.Language, c.lang)
		}
		if c.novelty >= 0 && math.Abs(got.Novelty-c.novelty) > 1e-9 {
			t.Errorf("%q: novelty %v, want %v", c.text, got.Novelty, c.novelty)
		}
	}
	if got := New(nil).Of("anything").Novelty; got != -1 {
		t.Errorf("novelty without vocabulary = %v, want -1", got)
	}
	if got := Words("最小公倍数 is LCM"); len(got) != 7 || got[5] != "is" || got[6] != "lcm" {
		t.Errorf("Words = %q", got)
	}
}

func TestLoadVocabularyErrors(t *testing.T) {
	if _, err := LoadVocabulary("testdata/none-*.jsonl"); err == nil {
		t.Error("a pattern matching nothing must be an error")
	}
	if _, err := LoadVocabulary("testdata/bad_set.jsonl"); err == nil {
		t.Error("a line that is not JSON must be an error")
	}
	v, err := LoadVocabulary("testdata/small_set.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if v.Len() == 0 || v.Novelty("What is two plus two?") != 0 {
		t.Errorf("vocabulary of small_set: %d words, novelty %v", v.Len(), v.Novelty("What is two plus two?"))
	}
}

// TestEndsLikeCodeIsTheCodeEndingPattern: endsLikeCode answers what the
// codeEnding pattern answers, on every line of the package's test data and
// on the edge forms (space after the symbol, ") :", a lone ':', "=>").
func TestEndsLikeCodeIsTheCodeEndingPattern(t *testing.T) {
	lines := []string{"", " ", "x;", "x; ", "x;\t\r\n", "{", "}", "f() :", "f():", "f() \t: ", "a:", ":", ") :", "x =>", "x=>  ",
		"=", ">", "x >", "a;b", "if (x) {  ", "Note: see", "def f(x):", "obj): ", "ends with ；", "x;\u00a0", "x )\u00a0:"}
	files, err := filepath.Glob(filepath.Join("testdata", "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("test data: %v, %d files", err, len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, strings.Split(string(b), "\n")...)
		lines = append(lines, strings.Split(strings.ReplaceAll(string(b), `\n`, "\n"), "\n")...)
	}
	for _, l := range lines {
		if got, want := endsLikeCode(l), codeEnding.MatchString(l); got != want {
			t.Errorf("%q: endsLikeCode %v, pattern %v", l, got, want)
		}
	}
}
