package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// timeLayout renders instants in the pages: UTC, millisecond precision.
const timeLayout = "2006-01-02 15:04:05.000 UTC"

// fmtTime renders t in UTC with ms, or "—" for the zero time.
func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format(timeLayout)
}

// fmtISO renders t as RFC 3339 with nanoseconds in UTC (for <time datetime>).
func fmtISO(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// preText returns s for a <pre> element: HTML drops one newline right after the
// <pre> tag, so a text that starts with a line break gets one more.
func preText(s string) string {
	if strings.HasPrefix(s, "\n") || strings.HasPrefix(s, "\r") {
		return "\n" + s
	}
	return s
}

// fmtMs renders a duration in ms: whole ms from 10 ms up, one decimal below.
func fmtMs(ms float64) string {
	if ms < 10 {
		return strconv.FormatFloat(ms, 'f', 1, 64)
	}
	return strconv.FormatFloat(ms, 'f', 0, 64)
}

// fmtLatency renders a latency with its unit, or "unknown" when it was not
// measured (stored as 0).
func fmtLatency(ms float64) string {
	if ms <= 0 {
		return "unknown"
	}
	return fmtMs(ms) + " ms"
}

// fmtMsOrUnknown is fmtMs, or "unknown" when the latency was not measured (0),
// for cells under a "ms" heading.
func fmtMsOrUnknown(ms float64) string {
	if ms <= 0 {
		return "unknown"
	}
	return fmtMs(ms)
}

// fmtMsOrDash is fmtMs, or "—" when ms is 0 (no such run).
func fmtMsOrDash(ms float64) string {
	if ms == 0 {
		return "—"
	}
	return fmtMs(ms)
}

// fmtUSD renders an amount in USD with "$", six decimals with trailing zeros
// trimmed down to two: 0.02384 → "$0.02384", 1.5 → "$1.50".
func fmtUSD(v float64) string {
	s := strconv.FormatFloat(v, 'f', 6, 64)
	for strings.HasSuffix(s, "0") && len(s)-strings.IndexByte(s, '.') > 3 {
		s = s[:len(s)-1]
	}
	if strings.HasPrefix(s, "-") {
		return "-$" + s[1:]
	}
	return "$" + s
}

// fmtUSDOrDash is fmtUSD, or "—" when v is 0 and the row has no such run.
func fmtUSDOrDash(v float64, present bool) string {
	if !present {
		return "—"
	}
	return fmtUSD(v)
}

// fmtInt renders a count (tokens, calls).
func fmtInt[T ~int | ~int32 | ~int64](n T) string {
	return strconv.FormatInt(int64(n), 10)
}

// fmtScore renders a grader value in 0..1 with three decimals.
func fmtScore(v float64) string {
	return strconv.FormatFloat(v, 'f', 3, 64)
}

// shortID shortens a hash or id to its first n characters.
func shortID(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// accessLabel renders a step's access list (store.Step.Access, JSON "all", [] or
// [0,2]) for people: "all", "none", "step 1", "steps 0, 2". An empty value (a
// planning call has no access list) renders "—"; anything else is shown as stored.
func accessLabel(access string) string {
	a := strings.TrimSpace(access)
	switch a {
	case "":
		return "—"
	case `"all"`, "all":
		return "all"
	}
	var idx []int
	if err := json.Unmarshal([]byte(a), &idx); err != nil {
		return a
	}
	switch len(idx) {
	case 0:
		return "none"
	case 1:
		return "step " + strconv.Itoa(idx[0])
	}
	parts := make([]string, len(idx))
	for i, n := range idx {
		parts[i] = strconv.Itoa(n)
	}
	return "steps " + strings.Join(parts, ", ")
}

// statusClass maps a run or step status to a CSS class; unknown statuses share one.
func statusClass(status string) string {
	switch status {
	case store.StatusOK:
		return "status status-ok"
	case store.StatusError:
		return "status status-error"
	case store.StatusPlanUnparsable, store.StatusBudgetExceeded, store.StatusCancelledByClient:
		return "status status-warn"
	case store.StatusSkipped, store.StatusCancelled:
		return "status status-skipped"
	case "running":
		return "status status-running"
	case "done":
		return "status status-ok"
	}
	return "status status-other"
}

// chatMessage is one message of a request's input, as shown.
type chatMessage struct {
	Role    string
	Content string
}

// parseMessages decodes a request input (JSON chat messages) for display. Text
// parts of multi-part content are joined with newlines, media parts are named in
// brackets by type, size and hash ("[image image/png, 146,000 bytes, sha256 …]",
// shadow.Media.Label), other parts by their type, and a message without
// content shows its JSON. ok is
// false when input is not a JSON array of objects.
func parseMessages(input string) (msgs []chatMessage, ok bool) {
	var raw []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(input), &raw); err != nil {
		return nil, false
	}
	for _, m := range raw {
		var role string
		_ = json.Unmarshal(m["role"], &role)
		msgs = append(msgs, chatMessage{Role: role, Content: messageContent(m)})
	}
	return msgs, true
}

func messageContent(m map[string]json.RawMessage) string {
	c := bytes.TrimSpace(m["content"])
	var s string
	if len(c) > 0 && c[0] == '"' && json.Unmarshal(c, &s) == nil {
		return s
	}
	var msg []openai.ChatCompletionMessage
	if c[0] == '[' && shadow.UnmarshalMessages([]byte(`[{"content":`+string(c)+`}]`), &msg) == nil && len(msg[0].MultiContent) > 0 {
		parts := msg[0].MultiContent
		out := make([]string, len(parts))
		for i, p := range parts {
			md, media := shadow.PartMedia(p)
			switch {
			case p.Type == openai.ChatMessagePartTypeText:
				out[i] = p.Text
			case media:
				out[i] = "[" + md.Label() + "]"
			default:
				out[i] = "[" + string(p.Type) + "]"
			}
		}
		return strings.Join(out, "\n")
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return ""
	}
	return string(b)
}

// planStep is one step of a parsed workflow (store.Run.Plan).
type planStep struct {
	Index   int
	Worker  string
	Subtask string
	Access  string // as accessLabel renders it
}

// parsePlan decodes store.Run.Plan ({"steps":[{"worker","subtask","access"}]}).
// ok is false when plan is empty or not that shape.
func parsePlan(plan string) (steps []planStep, ok bool) {
	if strings.TrimSpace(plan) == "" {
		return nil, false
	}
	var p struct {
		Steps []struct {
			Worker  string          `json:"worker"`
			Subtask string          `json:"subtask"`
			Access  json.RawMessage `json:"access"`
		} `json:"steps"`
	}
	if err := json.Unmarshal([]byte(plan), &p); err != nil || p.Steps == nil {
		return nil, false
	}
	steps = make([]planStep, len(p.Steps))
	for i, s := range p.Steps {
		steps[i] = planStep{Index: i, Worker: s.Worker, Subtask: s.Subtask, Access: accessLabel(string(s.Access))}
	}
	return steps, true
}

// traceQuery is the traces list's URL state: filters and the keyset cursor.
type traceQuery struct {
	App      string
	Source   string
	Q        string // text filter: the input or any run's final output
	Limit    int    // rows per page as asked in the URL; 0 means the store default
	Before   time.Time
	BeforeID string

	// Search filters (store.TraceSearch, applied by store.TraceReader).
	Candidate string    // a candidate pipeline that ran
	Worker    string    // a worker some step called
	Status    string    // a run status
	MinCost   float64   // summed cost of the runs, USD
	MaxCost   float64   // USD
	MinMs     float64   // slowest run, ms
	MaxMs     float64   // ms
	From      time.Time // received at or after
	To        time.Time // received before
	Grade     string    // store.GradePassed, store.GradeFailed or ""
	Seg       store.SegmentFilter

	// Sort by a pair figure (store.TraceSort*), descending unless Asc; After
	// and AfterID are the sorted keyset cursor.
	Sort       string
	Asc        bool
	AfterValue float64
	AfterID    string
}

// searching reports whether q uses a filter beyond app, source and text.
func (q traceQuery) searching() bool {
	return q.Candidate != "" || q.Worker != "" || q.Status != "" || q.MinCost != 0 || q.MaxCost != 0 ||
		q.MinMs != 0 || q.MaxMs != 0 || !q.From.IsZero() || !q.To.IsZero() || q.Grade != "" || !q.Seg.Empty()
}

// search turns q into the store's search.
func (q traceQuery) search() store.TraceSearch {
	return store.TraceSearch{TraceFilter: q.filter(), Candidate: q.Candidate, Worker: q.Worker, Status: q.Status,
		MinCostUSD: q.MinCost, MaxCostUSD: q.MaxCost, MinLatencyMs: q.MinMs, MaxLatencyMs: q.MaxMs,
		From: q.From, To: q.To, Grade: q.Grade, Segments: q.Seg,
		Sort: q.Sort, Asc: q.Asc, AfterValue: q.AfterValue, AfterID: q.AfterID}
}

// formTimeLayout is the value format of <input type="datetime-local"> (UTC here).
const formTimeLayout = "2006-01-02T15:04:05"

// fmtFormTime renders t for a datetime-local input and the URL, "" for zero.
func fmtFormTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(formTimeLayout)
}

// parseFormTime reads a time filter: RFC 3339, or a datetime-local value
// (minutes or seconds) taken as UTC.
func parseFormTime(name, s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, formTimeLayout, "2006-01-02T15:04"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("%s %q is not a time (use 2006-01-02T15:04 in UTC or RFC 3339)", name, s)
}

// fmtFormFloat renders a bound for an input, "" for 0 (no bound).
func fmtFormFloat(v float64) string {
	if v == 0 {
		return ""
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// values encodes q as URL query parameters, leaving out empty ones.
func (q traceQuery) values() url.Values {
	v := url.Values{}
	set := func(k, val string) {
		if val != "" {
			v.Set(k, val)
		}
	}
	set("app", q.App)
	set("source", q.Source)
	set("q", q.Q)
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	set("candidate", q.Candidate)
	set("worker", q.Worker)
	set("status", q.Status)
	set("min_cost", fmtFormFloat(q.MinCost))
	set("max_cost", fmtFormFloat(q.MaxCost))
	set("min_ms", fmtFormFloat(q.MinMs))
	set("max_ms", fmtFormFloat(q.MaxMs))
	set("from", fmtFormTime(q.From))
	set("to", fmtFormTime(q.To))
	set("grade", q.Grade)
	setSegmentValues(v, q.Seg)
	if !q.Before.IsZero() {
		v.Set("before", q.Before.UTC().Format(time.RFC3339Nano))
		set("before_id", q.BeforeID)
	}
	set("sort", q.Sort)
	if q.Sort != "" && q.Asc != defaultAsc(q.Sort) {
		v.Set("dir", map[bool]string{true: "asc", false: "desc"}[q.Asc])
	}
	if q.AfterID != "" {
		v.Set("after", strconv.FormatFloat(q.AfterValue, 'g', -1, 64))
		v.Set("after_id", q.AfterID)
	}
	return v
}

// defaultAsc is a sort key's first direction: the most expensive and the
// slowest pairs first, disagreements and losses first.
func defaultAsc(key string) bool {
	return key == store.TraceSortAgreement || key == store.TraceSortJudgment
}

// sorted returns q sorted by key: the key's first direction, or the other
// one when q is already sorted by it that way; the cursor is dropped.
func (q traceQuery) sorted(key string) traceQuery {
	asc := defaultAsc(key)
	if q.Sort == key {
		asc = !q.Asc
	}
	q.Sort, q.Asc, q.AfterValue, q.AfterID, q.Before, q.BeforeID = key, asc, 0, "", time.Time{}, ""
	return q
}

// parseTraceQuery reads the traces list's URL parameters: app, source, q, limit
// (1..store.MaxListLimit), before (RFC 3339) and before_id (needs before), sort
// (a store.TraceSort* key) with dir (asc|desc) and the sorted cursor after and
// after_id, and
// the search filters candidate, worker, status, grade (passed|failed), min_cost
// and max_cost (USD), min_ms and max_ms (slowest run, ms), from and to (UTC),
// and the segment filters language, has_table, has_code and length_bucket.
func parseTraceQuery(v url.Values) (traceQuery, error) {
	q := traceQuery{
		App:      strings.TrimSpace(v.Get("app")),
		Source:   strings.TrimSpace(v.Get("source")),
		Q:        strings.TrimSpace(v.Get("q")),
		BeforeID: v.Get("before_id"),
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > store.MaxListLimit {
			return q, fmt.Errorf("limit %q must be a whole number from 1 to %d", s, store.MaxListLimit)
		}
		q.Limit = n
	}
	q.Candidate = strings.TrimSpace(v.Get("candidate"))
	q.Worker = strings.TrimSpace(v.Get("worker"))
	q.Status = strings.TrimSpace(v.Get("status"))
	q.Grade = strings.TrimSpace(v.Get("grade"))
	for _, f := range []struct {
		name string
		dst  *float64
	}{{"min_cost", &q.MinCost}, {"max_cost", &q.MaxCost}, {"min_ms", &q.MinMs}, {"max_ms", &q.MaxMs}} {
		s := strings.TrimSpace(v.Get(f.name))
		if s == "" {
			continue
		}
		n, err := strconv.ParseFloat(s, 64)
		if err != nil || n < 0 || math.IsInf(n, 0) || math.IsNaN(n) {
			return q, fmt.Errorf("%s %q must be a number of at least 0", f.name, s)
		}
		*f.dst = n
	}
	for _, f := range []struct {
		name string
		dst  *time.Time
	}{{"from", &q.From}, {"to", &q.To}} {
		if s := strings.TrimSpace(v.Get(f.name)); s != "" {
			t, err := parseFormTime(f.name, s)
			if err != nil {
				return q, err
			}
			*f.dst = t
		}
	}
	seg, err := parseSegmentFilter(v)
	if err != nil {
		return q, err
	}
	q.Seg = seg
	if q.Sort = strings.TrimSpace(v.Get("sort")); q.Sort != "" {
		q.Asc = defaultAsc(q.Sort)
		switch d := v.Get("dir"); d {
		case "":
		case "asc", "desc":
			q.Asc = d == "asc"
		default:
			return q, fmt.Errorf("dir %q must be asc or desc", d)
		}
	}
	if s := v.Get("after"); s != "" {
		n, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(n) || math.IsInf(n, 0) {
			return q, fmt.Errorf("after %q must be a number", s)
		}
		q.AfterValue = n
		if q.AfterID = v.Get("after_id"); q.AfterID == "" {
			return q, errors.New("after needs after_id")
		}
	}
	if err := q.search().Validate(); err != nil {
		return q, errors.New(strings.TrimPrefix(err.Error(), "store: trace search: "))
	}
	if s := v.Get("before"); s != "" {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return q, fmt.Errorf("before %q is not an RFC 3339 time", s)
		}
		q.Before = t.UTC()
	} else if q.BeforeID != "" {
		return q, fmt.Errorf("before_id needs before")
	}
	return q, nil
}

// filter turns q into the store's filter.
func (q traceQuery) filter() store.TraceFilter {
	return store.TraceFilter{
		App: q.App, Source: q.Source, Text: q.Q,
		Before: q.Before, BeforeID: q.BeforeID, Limit: q.Limit,
	}
}

// planStepIndex returns the position of steps[i] in its workflow: the count of
// earlier "worker" steps with the same parent and depth. Access lists name these
// positions (the paper's step indices), not store.Step.Index. -1 for steps that are
// not workflow steps (the conductor's planning call, a fallback, an incumbent call).
func planStepIndex(steps []store.Step, i int) int {
	s := steps[i]
	if s.Role != "worker" {
		return -1
	}
	n := 0
	for _, p := range steps[:i] {
		if p.RunID == s.RunID && p.Role == "worker" && p.Parent == s.Parent && p.Depth == s.Depth {
			n++
		}
	}
	return n
}

// failureText is how a run failed, for the comparison table: the HTTP status the
// incumbent answered with (when not 2xx), "partial" for an answer cut off, and the
// error text; "" for a run that did not fail.
func failureText(r store.Run) string {
	var parts []string
	if r.HTTPStatus != 0 && (r.HTTPStatus < 200 || r.HTTPStatus > 299) {
		parts = append(parts, "HTTP "+strconv.Itoa(int(r.HTTPStatus)))
	}
	if r.Partial {
		parts = append(parts, "partial")
	}
	if r.Error != "" {
		parts = append(parts, r.Error)
	}
	return strings.Join(parts, " · ")
}
