package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v5"

	"github.com/conductor-shadow/conductor-shadow/shadow"
)

// SlackMessage is the webhook's JSON body, in the shape Slack's incoming
// webhooks take (docs.slack.dev, "Sending messages using incoming
// webhooks"; Block Kit): Text is the whole notice in plain words (the
// notification fallback, and what Mattermost-, Teams- or Discord-style
// receivers that read "text" show), Blocks the formatted message.
type SlackMessage struct {
	Text   string       `json:"text"`
	Blocks []SlackBlock `json:"blocks"`
}

// SlackBlock is one Block Kit block: "header" and "section" carry Text,
// "context" carries Elements of SlackText, "actions" of SlackButton.
type SlackBlock struct {
	Type     string     `json:"type"`
	Text     *SlackText `json:"text,omitempty"`
	Elements []any      `json:"elements,omitempty"`
}

// SlackText is a text object: Type "plain_text" or "mrkdwn".
type SlackText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// SlackButton is an actions block's link button.
type SlackButton struct {
	Type     string    `json:"type"` // "button"
	Text     SlackText `json:"text"` // plain_text label
	URL      string    `json:"url"`
	ActionID string    `json:"action_id"`
}

// Block Kit limits (docs.slack.dev/reference/block-kit): a header's text at
// most 150 characters, a section's 3000, a button's label 75 and its URL
// 3000; the message's text is truncated by Slack beyond 40,000.
const (
	slackHeaderMax  = 150
	slackSectionMax = 3000
	slackTextMax    = 39_000
	slackReasonMax  = 300
)

// SlackPayload renders n: a header (verdict, candidate, where), a section
// with the change and the headline, a section listing the gates that did
// not pass with their reasons (at most 10; the rest counted), a button to
// the evidence and a context line with the time. User-visible text is
// escaped for mrkdwn (&, <, >).
func SlackPayload(n Notice) SlackMessage {
	gates := gateLines(n, func(g Gate) string {
		return fmt.Sprintf("• *%s* %s: %s", slackEscape(g.Name), g.Status, slackEscape(cut(oneLine(g.Reason), slackReasonMax)))
	})
	var text strings.Builder
	text.WriteString(slackEscape(oneLine(n.Subject())) + "\n" + slackEscape(n.change()) + "\n" + slackEscape(oneLine(n.Headline)))
	if len(gates) > 0 {
		text.WriteString("\n" + n.gateHeading() + ":\n" + strings.Join(gates, "\n"))
	}
	text.WriteString("\n" + n.Link)

	blocks := []SlackBlock{
		{Type: "header", Text: &SlackText{Type: "plain_text", Text: cut(oneLine(n.Subject()), slackHeaderMax)}},
		{Type: "section", Text: &SlackText{Type: "mrkdwn", Text: cut(slackEscape(n.change())+"\n"+slackEscape(oneLine(n.Headline)), slackSectionMax)}},
	}
	if len(gates) > 0 {
		blocks = append(blocks, SlackBlock{Type: "section", Text: &SlackText{Type: "mrkdwn",
			Text: cut("*"+n.gateHeading()+"*\n"+strings.Join(gates, "\n"), slackSectionMax)}})
	}
	label := "Open the suite run"
	if n.Kind == KindLive {
		label = "Open the overview"
	}
	blocks = append(blocks,
		SlackBlock{Type: "actions", Elements: []any{SlackButton{Type: "button", Text: SlackText{Type: "plain_text", Text: label}, URL: n.Link, ActionID: "open"}}},
		SlackBlock{Type: "context", Elements: []any{SlackText{Type: "mrkdwn", Text: "Verdict reached " + n.At.UTC().Format(time.RFC3339) + " · conductor-shadow"}}},
	)
	return SlackMessage{Text: cut(text.String(), slackTextMax), Blocks: blocks}
}

// gateLines renders the gates that did not pass with line, at most
// maxGates, then one line counting the rest.
func gateLines(n Notice, line func(Gate) string) []string {
	var out []string
	for i, g := range n.Gates {
		if i == maxGates {
			out = append(out, fmt.Sprintf("… and %d more (see the page)", len(n.Gates)-maxGates))
			break
		}
		out = append(out, line(g))
	}
	return out
}

// slackEscape escapes the three characters Slack's mrkdwn reserves
// (docs.slack.dev, "Formatting text for app surfaces": &, <, >).
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// webhook posts SlackPayload to one URL.
type webhook struct {
	url    string // secret: never in an error or log line
	addr   string // the URL's host[:port], which is no secret
	client *http.Client
}

// maxWebhookAnswer caps what is read of a receiver's answer (it is only
// quoted in errors).
const maxWebhookAnswer = 4 << 10

func newWebhook(rawURL string, timeout time.Duration) (*webhook, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("not an http:// or https:// URL") // the URL itself is the secret: not quoted
	}
	return &webhook{url: rawURL, addr: u.Host, client: &http.Client{
		Timeout: timeout,
		// A redirect could send the notice (and the process) anywhere;
		// Slack's webhooks never redirect.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}, nil
}

func (w *webhook) name() string { return SinkWebhook }

func (w *webhook) host() string { return w.addr }

// send posts n once. A 2xx answer is success. 429, 408, 5xx and transport
// errors may be retried; a 429 or 503 with Retry-After waits that long
// (backoff.RetryAfterError). Any other answer (400 invalid_payload, 403,
// 404 no_service, a redirect) is permanent. Errors never name the URL.
// The body's bytes count as sent once the receiver answered.
func (w *webhook) send(ctx context.Context, n Notice) (int64, error) {
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	enc.SetEscapeHTML(false) // "&amp;" stays readable; JSON needs no HTML escaping
	if err := enc.Encode(SlackPayload(n)); err != nil {
		return 0, backoff.Permanent(fmt.Errorf("webhook: encode: %w", err))
	}
	size := int64(body.Len())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, &body)
	if err != nil {
		return 0, backoff.Permanent(errors.New("webhook: bad URL"))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "conductor-shadow")
	resp, err := w.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) { // url.Error quotes the URL: keep only its cause
			err = ue.Err
		}
		return 0, fmt.Errorf("webhook: post: %w", err)
	}
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, maxWebhookAnswer))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // let the connection be reused
	resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return size, nil
	}
	failed := fmt.Errorf("webhook: HTTP %d %s", resp.StatusCode, cut(strings.TrimSpace(oneLine(string(answer))), 200))
	switch {
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable:
		if d := shadow.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); d > 0 {
			return size, fmt.Errorf("%w: %w", failed, &backoff.RetryAfterError{Duration: d})
		}
		return size, failed
	case resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode >= 500:
		return size, failed
	}
	return size, backoff.Permanent(failed)
}

func (w *webhook) close() { w.client.CloseIdleConnections() }
