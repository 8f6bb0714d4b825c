package web

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/conductor-shadow/conductor-shadow/eval"
	"github.com/conductor-shadow/conductor-shadow/eval/gate"
	"github.com/conductor-shadow/conductor-shadow/ingest"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// The review page shows one pair of the review sample at a time, blinded:
// the request's prompt and the two answers as A and B, in an order shuffled
// per reviewer and pair, without pipeline names, the judge's outcome or the
// canary kind (canaries are never in the sample). The reviewer presses A, B,
// T (tie) or S (skip), or a button; the page's script posts the label as
// JSON to /review/labels. What the label means is carried by a sealed pair
// token (AES-256-GCM with a key derived from the PII key): the pair's key,
// whose answer was A, the inclusion probability and the reviewer it was
// shown to, so the page holds no pipeline name and a label cannot be forged
// for another pair, another order or another reviewer.

const navReview = "review"

// reviewPolicy is the review page's Content-Security-Policy: the page's own
// script (from /static) and same-origin requests, nothing inline.
const reviewPolicy = "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"form-action 'self'; base-uri 'none'; frame-ancestors 'self'"

// Reviewer identity.
const (
	// reviewerCookie holds the name a reviewer entered (URL-escaped), when
	// web auth names no user.
	reviewerCookie = "cs_reviewer"
	// maxReviewerName is the longest name accepted (runes).
	maxReviewerName = 64
	// maxReviewBody bounds the review endpoints' JSON bodies.
	maxReviewBody = 8 << 10
)

func (u urls) review() string          { return u.base + "/review" }
func (u urls) reviewLabels() string    { return u.base + "/review/labels" }
func (u urls) reviewReviewer() string  { return u.base + "/review/reviewer" }
func (u urls) reviewAgreement() string { return u.base + "/review/agreement" }

// setReviewKey keeps the PII key and derives the token key from it.
func (s *server) setReviewKey(key []byte) {
	if len(key) == 0 {
		return
	}
	s.reviewKey = key
	m := hmac.New(sha256.New, key)
	m.Write([]byte("review-token\x00"))
	s.tokenKey = m.Sum(nil)
}

// registerReview mounts the review routes on g.
func (s *server) registerReview(g *gin.RouterGroup, get func(string, gin.HandlerFunc)) {
	rd := pageRole{"store.ReviewReader", s.read.Reviews != nil}
	wr := pageRole{"store.ReviewWriter", s.write.Reviews != nil}
	get("/review", s.needsKey(s.needs("human review", s.review, rd, wr)))
	get("/review/agreement", s.needs("judge–human agreement", s.agreement, rd))
	post := func(h gin.HandlerFunc) gin.HandlerFunc {
		if !wr.present {
			return func(c *gin.Context) {
				c.JSON(http.StatusNotImplemented, gin.H{"error": store.NotSupported("store.ReviewWriter").Error()})
			}
		}
		if len(s.reviewKey) == 0 {
			return func(c *gin.Context) { c.JSON(http.StatusNotImplemented, gin.H{"error": errNoReviewKey.Error()}) }
		}
		return jsonOnly(h)
	}
	g.POST("/review/labels", post(s.reviewLabel))
	g.POST("/review/reviewer", post(s.reviewReviewer))
}

// errNoReviewKey: the UI was registered without WithReviewerKey.
var errNoReviewKey = errors.New("web: the review page needs the platform's PII key for reviewer pseudonyms (web.WithReviewerKey)")

// needsKey answers 501 instead of h when the UI has no reviewer key.
func (s *server) needsKey(h gin.HandlerFunc) gin.HandlerFunc {
	if len(s.reviewKey) == 0 {
		return func(c *gin.Context) {
			s.fail(c, http.StatusNotImplemented, "This server cannot show human review: "+errNoReviewKey.Error()+".", nil)
		}
	}
	return h
}

// jsonOnly refuses a body that is not JSON (415) and bounds it, before h:
// a cross-site form cannot send JSON without a CORS preflight, which the
// server never grants (serve's browser guard also checks the origin).
func jsonOnly(h gin.HandlerFunc) gin.HandlerFunc {
	return func(c *gin.Context) {
		mt, _, err := mime.ParseMediaType(c.GetHeader("Content-Type"))
		if err != nil || mt != "application/json" {
			c.AbortWithStatusJSON(http.StatusUnsupportedMediaType, gin.H{"error": "send the body as JSON with Content-Type: application/json"})
			return
		}
		c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, maxReviewBody)
		h(c)
	}
}

// reviewScope narrows the review sample: one suite run's pairs or live
// traffic's; neither is every judged pair.
type reviewScope struct {
	SuiteRunID string
	Live       bool
}

// ParseReviewScope reads a review scope from a query: suite_run=ID (one
// suite run's pairs) or live=1 (live traffic's); neither is every judged
// pair. Both at once, or live other than 1 or 0, is an error. The review
// page and GET /api/review/export read it alike.
func ParseReviewScope(q url.Values) (suiteRun string, live bool, err error) {
	suiteRun = strings.TrimSpace(q.Get("suite_run"))
	switch q.Get("live") {
	case "", "0":
	case "1":
		live = true
	default:
		return "", false, fmt.Errorf("live must be 1 or 0, got %q", q.Get("live"))
	}
	if live && suiteRun != "" {
		return "", false, errors.New("name a suite run or live traffic, not both")
	}
	return suiteRun, live, nil
}

// String says what the scope covers.
func (sc reviewScope) String() string {
	switch {
	case sc.SuiteRunID != "":
		return "the pairs of suite run " + sc.SuiteRunID
	case sc.Live:
		return "live traffic's pairs"
	}
	return "every judged pair"
}

// reviewerName is who is reviewing: the user web auth authenticated (the
// basic-auth user name), else the name kept in the reviewer cookie; "" when
// neither. fromAuth says it came from auth.
func reviewerName(c *gin.Context) (name string, fromAuth bool) {
	if u, _, ok := c.Request.BasicAuth(); ok && validName(u) == nil {
		return strings.TrimSpace(u), true
	}
	ck, err := c.Cookie(reviewerCookie)
	if err != nil {
		return "", false
	}
	n, err := url.QueryUnescape(ck)
	if err != nil || validName(n) != nil {
		return "", false
	}
	return strings.TrimSpace(n), false
}

// validName reports an empty name, one longer than maxReviewerName runes or
// one holding a control character.
func validName(n string) error {
	n = strings.TrimSpace(n)
	switch {
	case n == "":
		return errors.New("enter a name")
	case !utf8.ValidString(n) || utf8.RuneCountInString(n) > maxReviewerName:
		return fmt.Errorf("a name has at most %d characters", maxReviewerName)
	case strings.IndexFunc(n, unicode.IsControl) >= 0:
		return errors.New("a name holds no control characters")
	}
	return nil
}

// pairToken is what the review page's token seals.
type pairToken struct {
	Key            store.PairKey `json:"k"`
	IncumbentRunID string        `json:"i"`
	SuiteRunID     string        `json:"s"`
	ShownFirst     string        `json:"f"` // store.VerdictCandidate or VerdictIncumbent: the answer shown as A
	JudgedProb     float64       `json:"p"`
	Share          float64       `json:"h"`
	Reviewer       string        `json:"r"` // the pseudonym it was shown to
}

// seal encrypts t (AES-256-GCM, random nonce) as base64url.
func (s *server) seal(t pairToken) (string, error) {
	plain, err := json.Marshal(t)
	if err != nil {
		return "", err
	}
	aead, err := s.aead()
	if err != nil {
		return "", err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(aead.Seal(nonce, nonce, plain, []byte("review"))), nil
}

// open decrypts and checks a token made by seal.
func (s *server) open(tok string) (pairToken, error) {
	var t pairToken
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return t, errors.New("the pair token is not valid: reload the page")
	}
	aead, err := s.aead()
	if err != nil {
		return t, err
	}
	if len(raw) < aead.NonceSize() {
		return t, errors.New("the pair token is not valid: reload the page")
	}
	plain, err := aead.Open(nil, raw[:aead.NonceSize()], raw[aead.NonceSize():], []byte("review"))
	if err != nil || json.Unmarshal(plain, &t) != nil {
		return t, errors.New("the pair token is not valid: reload the page")
	}
	return t, nil
}

func (s *server) aead() (cipher.AEAD, error) {
	block, err := aes.NewCipher(s.tokenKey)
	if err != nil {
		return nil, fmt.Errorf("web: review token: %w", err)
	}
	return cipher.NewGCM(block)
}

// shownFirst is whose answer a reviewer sees as A on a pair: a bit of an
// HMAC of the reviewer and the pair (the token key), so the order is random
// per pair and reviewer, unpredictable without the key, and the same on a
// reload.
func (s *server) shownFirst(reviewer string, k store.PairKey) string {
	m := hmac.New(sha256.New, s.tokenKey)
	m.Write([]byte("shuffle\x00" + reviewer + "\x00" + k.RequestID + "\x00" + k.Pipeline + "\x00" + k.CandidateRunID))
	if m.Sum(nil)[0]&1 == 1 {
		return store.VerdictCandidate
	}
	return store.VerdictIncumbent
}

// reviewView is the review page.
type reviewView struct {
	Meta     pageMeta
	Scope    reviewScope
	Name     string // "" until the reviewer entered one
	FromAuth bool
	Share    float64
	Sample   int64
	Reviewed int64
	Pair     *reviewPairView // nil when nothing is left to review
	// LabelURL and ReviewerURL are the endpoints the page's script posts to.
	LabelURL, ReviewerURL, AgreementURL, ScriptURL string
}

// reviewPairView is one blinded pair: the prompt and the answers as A and B.
type reviewPairView struct {
	Token       string
	Messages    []chatMessage
	InputParsed bool
	Input       string
	A, B        string
}

func (s *server) review(c *gin.Context) {
	var scope reviewScope
	var err error
	if scope.SuiteRunID, scope.Live, err = ParseReviewScope(c.Request.URL.Query()); err != nil {
		s.fail(c, http.StatusBadRequest, "Bad filter: "+err.Error()+".", nil)
		return
	}
	u := s.urls()
	v := reviewView{Meta: s.meta("Review", navReview), Scope: scope, Share: s.cfg.Review.share(),
		LabelURL: u.reviewLabels(), ReviewerURL: u.reviewReviewer(), AgreementURL: u.reviewAgreement(), ScriptURL: u.static("review.js")}
	v.Name, v.FromAuth = reviewerName(c)
	c.Header("Cache-Control", "no-store")
	if v.Name == "" {
		s.renderWith(c, http.StatusOK, reviewPage(v), reviewPolicy)
		return
	}
	reviewer := ingest.ReviewerID(s.reviewKey, v.Name)
	q, err := s.read.Reviews.ReviewQueue(c.Request.Context(), store.ReviewQueueQuery{Reviewer: reviewer, Share: v.Share,
		SuiteRunID: scope.SuiteRunID, Live: scope.Live, Limit: 1})
	if err != nil {
		s.storeFailed(c, "review sample", "", err)
		return
	}
	v.Sample, v.Reviewed = q.Sample, q.Reviewed
	if len(q.Pairs) > 0 {
		p := q.Pairs[0]
		t := pairToken{Key: p.Key(), IncumbentRunID: p.IncumbentRunID, SuiteRunID: p.SuiteRunID, JudgedProb: p.JudgedProb,
			Share: v.Share, Reviewer: reviewer, ShownFirst: s.shownFirst(reviewer, p.Key())}
		tok, err := s.seal(t)
		if err != nil {
			s.fail(c, http.StatusInternalServerError, "The pair could not be prepared for review.", err)
			return
		}
		pv := &reviewPairView{Token: tok, Input: p.Input, A: p.IncumbentAnswer, B: p.CandidateAnswer}
		if t.ShownFirst == store.VerdictCandidate {
			pv.A, pv.B = pv.B, pv.A
		}
		pv.Messages, pv.InputParsed = parseMessages(p.Input)
		v.Pair = pv
	}
	s.renderWith(c, http.StatusOK, reviewPage(v), reviewPolicy)
}

// labelRequest is the body of POST /review/labels.
type labelRequest struct {
	Token  string `json:"token"`
	Choice string `json:"choice"` // store.ChoiceA, ChoiceB, ChoiceTie, ChoiceSkip
}

// reviewLabel stores one label: 200 {"stored": true}; 400 for a bad body,
// token or choice, or no reviewer name; 403 for a token shown to another
// reviewer; 409 when the reviewer already reviewed the pair; 500 when the
// store fails.
func (s *server) reviewLabel(c *gin.Context) {
	var req labelRequest
	if err := c.ShouldBindJSON(&req); err != nil {
		c.JSON(http.StatusBadRequest, gin.H{"error": `want a JSON body {"token": "…", "choice": "A"}`})
		return
	}
	name, _ := reviewerName(c)
	if name == "" {
		c.JSON(http.StatusBadRequest, gin.H{"error": "enter your name on the review page first"})
		return
	}
	reviewer := ingest.ReviewerID(s.reviewKey, name)
	t, err := s.open(req.Token)
	if err != nil {
		c.JSON(http.StatusBadRequest, gin.H{"error": err.Error()})
		return
	}
	if t.Reviewer != reviewer {
		c.JSON(http.StatusForbidden, gin.H{"error": "this pair was shown to another reviewer: reload the page"})
		return
	}
	label, err := store.ReviewLabel(req.Choice, t.ShownFirst)
	if err != nil {
		c.JSON(http.StatusBadRequest, gin.H{"error": "choice must be A, B, T or S"})
		return
	}
	r := store.Review{RequestID: t.Key.RequestID, Pipeline: t.Key.Pipeline, CandidateRunID: t.Key.CandidateRunID,
		IncumbentRunID: t.IncumbentRunID, SuiteRunID: t.SuiteRunID, Reviewer: reviewer, ShownFirst: t.ShownFirst,
		Choice: req.Choice, Label: label, InclusionProb: inclusion(t.JudgedProb, t.Share), SampleShare: t.Share, ReviewedAt: time.Now().UTC()}
	switch err := s.write.Reviews.AddReview(c.Request.Context(), r); {
	case errors.Is(err, store.ErrReviewed):
		c.JSON(http.StatusConflict, gin.H{"error": "you already reviewed this pair"})
	case err != nil:
		_ = c.Error(fmt.Errorf("web: store a review: %w", err))
		c.JSON(http.StatusInternalServerError, gin.H{"error": "the label could not be stored; try again"})
	default:
		c.JSON(http.StatusOK, gin.H{"stored": true})
	}
}

// inclusion is the probability a pair was in the review sample: judged with
// probability judged (1 in suites), then sampled with share; in (0, 1].
func inclusion(judged, share float64) float64 {
	if judged <= 0 || judged > 1 {
		judged = 1
	}
	return judged * share
}

// reviewerRequest is the body of POST /review/reviewer.
type reviewerRequest struct {
	Name string `json:"name"` // "" forgets the name
}

// reviewReviewer keeps the reviewer's name in a cookie of this browser (the
// store only ever sees its pseudonym): 200, or 400 for a bad name.
func (s *server) reviewReviewer(c *gin.Context) {
	var req reviewerRequest
	if err := c.ShouldBindJSON(&req); err != nil {
		c.JSON(http.StatusBadRequest, gin.H{"error": `want a JSON body {"name": "…"}`})
		return
	}
	ck := &http.Cookie{Name: reviewerCookie, Path: s.urls().review(), HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: c.Request.TLS != nil}
	if strings.TrimSpace(req.Name) == "" {
		ck.MaxAge = -1
	} else {
		if err := validName(req.Name); err != nil {
			c.JSON(http.StatusBadRequest, gin.H{"error": err.Error()})
			return
		}
		ck.Value, ck.MaxAge = url.QueryEscape(strings.TrimSpace(req.Name)), 365*24*3600
	}
	http.SetCookie(c.Writer, ck)
	c.JSON(http.StatusOK, gin.H{"saved": ck.MaxAge > 0})
}

// agreementView is the agreement page: every reviewed judge's figures and
// its human-review row under the policy, and the reviewers' own agreement.
type agreementView struct {
	Meta      pageMeta
	Review    eval.HumanReview
	Rows      map[string]judgeReviewRow // by judge
	Rules     gate.JudgeRules
	ReviewURL string
}

func (s *server) agreement(c *gin.Context) {
	rows, err := eval.AllReviews(c.Request.Context(), s.read.Reviews, store.ReviewedQuery{})
	if err != nil {
		s.storeFailed(c, "reviews", "", err)
		return
	}
	p := gate.NewDefaultPolicy()
	if s.cfg.GatePolicy != nil {
		p = *s.cfg.GatePolicy
	}
	v := agreementView{Meta: s.meta("Judge–human agreement", navReview), Review: eval.AgreementOf(rows, p.Confidence),
		Rows: map[string]judgeReviewRow{}, Rules: p.JudgeRules(), ReviewURL: s.urls().review()}
	for _, j := range v.Review.Judges {
		v.Rows[j.Judge] = newJudgeReviewRow(p, j)
	}
	s.render(c, http.StatusOK, agreementPage(v))
}

// judgeReviewRow is a judge's human_review row under the policy
// (gate.HumanReviewRow) and its badge: VALIDATED, NOT VALIDATED (fewer
// than judge.min_reviews reviewed pairs, or no κ) or BELOW FLOOR.
type judgeReviewRow struct {
	Row   gate.Result
	Badge string
}

// class colours the badge.
func (r judgeReviewRow) class() string {
	switch r.Badge {
	case "VALIDATED":
		return "status status-ok"
	case "BELOW FLOOR":
		return "status status-error"
	}
	return "status status-warn"
}

func newJudgeReviewRow(p gate.Policy, j eval.JudgeAgreement) judgeReviewRow {
	ev := j.Evidence()
	r := judgeReviewRow{Row: gate.HumanReviewRow(p, j.Judge, ev), Badge: "VALIDATED"}
	switch {
	case ev.Pairs < p.JudgeRules().MinReviews || ev.Kappa == nil:
		r.Badge = "NOT VALIDATED"
	case r.Row.Status != gate.Pass:
		r.Badge = "BELOW FLOOR"
	}
	return r
}
