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
//
// Model output (a step's answer) gets a stricter policy, outputPolicy: text
// formatting, lists, tables, code and links only — no images, so an untrusted
// answer cannot make the browser fetch anything.
type markdown struct {
	md           goldmark.Markdown
	policy       *bluemonday.Policy
	outputPolicy *bluemonday.Policy
}

func newMarkdown() *markdown {
	return &markdown{
		md: goldmark.New(goldmark.WithExtensions(
			extension.NewTable(extension.WithTableCellAlignMethod(extension.TableCellAlignAttribute)),
			extension.Strikethrough,
			extension.Linkify,
			extension.TaskList,
		)),
		policy:       bluemonday.UGCPolicy(),
		outputPolicy: newOutputPolicy(),
	}
}

// newOutputPolicy allows the elements Markdown produces for text, except images;
// links keep http(s) and mailto URLs only, with rel="nofollow noreferrer noopener".
func newOutputPolicy() *bluemonday.Policy {
	p := bluemonday.NewPolicy()
	p.AllowElements("p", "br", "hr", "strong", "em", "b", "i", "del", "code", "pre", "blockquote",
		"ul", "ol", "li", "h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr")
	p.AllowAttrs("align").Matching(bluemonday.CellAlign).OnElements("th", "td")
	p.AllowElements("th", "td")
	p.AllowAttrs("href").OnElements("a")
	p.AllowURLSchemes("http", "https", "mailto")
	p.RequireParseableURLs(true)
	p.RequireNoReferrerOnLinks(true)
	p.RequireNoFollowOnLinks(true)
	p.AddTargetBlankToFullyQualifiedLinks(false)
	p.AllowAttrs("type", "checked", "disabled").OnElements("input")
	return p
}

// renderOutput converts a model's Markdown answer to HTML sanitized by outputPolicy.
func (m *markdown) renderOutput(src string) (string, error) {
	var buf bytes.Buffer
	if err := m.md.Convert([]byte(src), &buf); err != nil {
		return "", fmt.Errorf("web: render output markdown: %w", err)
	}
	return m.outputPolicy.Sanitize(buf.String()), nil
}

// render converts Markdown src to sanitized HTML.
func (m *markdown) render(src string) (string, error) {
	var buf bytes.Buffer
	if err := m.md.Convert([]byte(src), &buf); err != nil {
		return "", fmt.Errorf("web: render report markdown: %w", err)
	}
	return m.policy.Sanitize(buf.String()), nil
}
