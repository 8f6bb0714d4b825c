package ingest

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"

	"go.opentelemetry.io/otel/propagation"
)

// SubjectHeader is the request header that names the data subject of a mirrored
// production call (see Exchange.Subject). The proxy removes it before
// forwarding, so the incumbent never sees it.
const SubjectHeader = "X-Conductor-Shadow-Subject"

// SubjectHash returns the keyed hash stored in requests.subject_hash for a data
// subject: hex HMAC-SHA256 with the PII secret over "subject\x00" + subject
// (64 hex characters). Without the secret the hash cannot be linked back to the
// subject; with it, `forget` finds every request of that subject.
func SubjectHash(secret []byte, subject string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("subject\x00"))
	m.Write([]byte(subject))
	return hex.EncodeToString(m.Sum(nil))
}

// traceContext is the W3C Trace Context propagator (traceparent/tracestate).
var traceContext = propagation.TraceContext{}

// TraceParentOf returns the W3C traceparent of the span ctx carries, or "".
func TraceParentOf(ctx context.Context) string {
	c := propagation.MapCarrier{}
	traceContext.Inject(ctx, c)
	return c.Get("traceparent")
}

// ContextWithTraceParent returns ctx carrying the remote span named by a W3C
// traceparent value; ctx unchanged when the value is empty or malformed.
func ContextWithTraceParent(ctx context.Context, traceParent string) context.Context {
	if traceParent == "" {
		return ctx
	}
	return traceContext.Extract(ctx, propagation.MapCarrier{"traceparent": traceParent})
}
