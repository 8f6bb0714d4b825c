package ingest

import "testing"

// A reviewer's pseudonym is stable for a key, differs between keys and
// names, and is not the subject hash of the same string.
func TestReviewerID(t *testing.T) {
	a, b := []byte("key-a"), []byte("key-b")
	id := ReviewerID(a, "alice")
	switch {
	case len(id) != 64 || id != ReviewerID(a, "alice"):
		t.Errorf("ReviewerID = %q, want 64 stable hex characters", id)
	case id == ReviewerID(b, "alice"):
		t.Error("two keys give one pseudonym")
	case id == ReviewerID(a, "bob"):
		t.Error("two reviewers share a pseudonym")
	case id == SubjectHash(a, "alice"):
		t.Error("the reviewer pseudonym equals the subject hash of the same name")
	}
}
