package web

import (
	"bytes"
	"fmt"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
)

// markdown renders suite reports: GitHub-flavoured Markdown (tables,
// strikethrough, autolinks, task lists) to HTML, then sanitized by bluemonday's
// user-content policy, so the result is safe to embed whatever the report holds.
// Raw HTML in the Markdown is dropped by goldmark before sanitizing.
type markdown struct {
	md     goldmark.Markdown
	policy *bluemonday.Policy
}

func newMarkdown() *markdown {
	return &markdown{
		md: goldmark.New(goldmark.WithExtensions(
			extension.NewTable(extension.WithTableCellAlignMethod(extension.TableCellAlignAttribute)),
			extension.Strikethrough,
			extension.Linkify,
			extension.TaskList,
		)),
		policy: bluemonday.UGCPolicy(),
	}
}

// render converts Markdown src to sanitized HTML.
func (m *markdown) render(src string) (string, error) {
	var buf bytes.Buffer
	if err := m.md.Convert([]byte(src), &buf); err != nil {
		return "", fmt.Errorf("web: render report markdown: %w", err)
	}
	return m.policy.Sanitize(buf.String()), nil
}
