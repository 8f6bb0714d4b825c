package ingest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
)

// ReviewerID returns the pseudonym stored in reviews.reviewer for a human
// reviewer: hex HMAC-SHA256 with the PII secret over "reviewer\x00" +
// identity (64 hex characters; the authenticated user name, or the name the
// reviewer entered). The same reviewer gets the same pseudonym on every
// machine sharing the secret; without it the pseudonym does not name them.
func ReviewerID(secret []byte, identity string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("reviewer\x00"))
	m.Write([]byte(identity))
	return hex.EncodeToString(m.Sum(nil))
}
