package eval

import (
	"regexp"
	"strings"
)

var fenceRe = regexp.MustCompile("(?s)```[ \\t]*(?:python3?|py)?[ \\t]*\\n(.*?)```")

// topLevelCodeRe matches a line of Python at column 0: a definition, an
// import, a decorator, a comment, a statement keyword, or an assignment, call,
// attribute or index on a name ("x = 1", "print(x)", "sys.path", "xs[0] = 1").
// A line of prose ("This works because …", "Note: …") does not match.
var topLevelCodeRe = regexp.MustCompile(`^(?:def |async def |class |import |from \S+ import |@|#|if |elif |else:|for |while |try:|except|finally:|with |return\b|raise |assert |pass$|[A-Za-z_][A-Za-z0-9_]*\s*(?:=[^=]|\(|\.|\[|\+=|-=))`)

// codeStartRe matches the line a bare answer's code starts with.
var codeStartRe = regexp.MustCompile(`^(?:def |async def |class |import |from \S+ import |@)`)

// answerCode returns the Python code of a code answer. In order: the first
// fenced block that defines entry (def entry(), else the first fenced block;
// else, when the answer defines entry outside a fence, the code around that
// definition: a Markdown indented block (every line indented by four spaces
// or a tab, dedented) or bare code after prose ("Here is the function:\ndef
// f(x): …"), from the first definition or import before it to the first line
// of prose after it; else the whole answer (a function body completing the
// prompt, as HumanEval's completions are).
func answerCode(output, entry string) string {
	def := "def " + entry + "("
	if blocks := fenceRe.FindAllStringSubmatch(output, -1); len(blocks) > 0 {
		for _, b := range blocks {
			if strings.Contains(b[1], def) {
				return b[1]
			}
		}
		return blocks[0][1]
	}
	if !strings.Contains(output, def) {
		return output
	}
	lines := strings.Split(strings.ReplaceAll(output, "\r\n", "\n"), "\n")
	at := -1
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimLeft(l, " \t"), def) {
			at = i
			break
		}
	}
	if at < 0 {
		return output
	}
	if indent := leadingSpace(lines[at]); indent != "" {
		return indentedBlock(lines, at, indent)
	}
	return bareCode(lines, at)
}

// leadingSpace is the whitespace a line starts with.
func leadingSpace(l string) string { return l[:len(l)-len(strings.TrimLeft(l, " \t"))] }

// indentedBlock returns the lines around at that start with indent (blank
// lines inside kept), with indent removed: a Markdown indented code block.
func indentedBlock(lines []string, at int, indent string) string {
	in := func(l string) bool { return strings.HasPrefix(l, indent) || strings.TrimSpace(l) == "" }
	start, end := at, at
	for start > 0 && in(lines[start-1]) {
		start--
	}
	for end+1 < len(lines) && in(lines[end+1]) {
		end++
	}
	out := make([]string, 0, end-start+1)
	for _, l := range lines[start : end+1] {
		out = append(out, strings.TrimPrefix(l, indent))
	}
	return strings.Trim(strings.Join(out, "\n"), "\n") + "\n"
}

// bareCode returns the code of an unfenced answer whose definition of the
// entry point is on line at: back to the first definition or import of the
// code run it belongs to, forward to the first line of prose at column 0.
func bareCode(lines []string, at int) string {
	code := func(l string) bool {
		return strings.TrimSpace(l) == "" || leadingSpace(l) != "" || topLevelCodeRe.MatchString(l)
	}
	start := at
	for i := at - 1; i >= 0 && code(lines[i]); i-- {
		if codeStartRe.MatchString(lines[i]) {
			start = i
		}
	}
	end := at
	for end+1 < len(lines) && code(lines[end+1]) {
		end++
	}
	return strings.Trim(strings.Join(lines[start:end+1], "\n"), "\n") + "\n"
}
