package store_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// basicStore has only the roles every Store has.
type basicStore struct{ store.Store }

// NewRoles resolves every role of the SQL store; a store without an optional
// role leaves it nil, Roles of no store have none, and NotSupported names the
// role it is given.
func TestRoles(t *testing.T) {
	roles := func(r store.Roles) map[string]bool {
		return map[string]bool{
			"store.TraceWriter": r.TraceWriter != nil, "store.WorkStore": r.WorkStore != nil,
			"store.SuiteWriter": r.SuiteWriter != nil, "store.SuiteReader": r.SuiteReader != nil,
			"store.Console": r.Console != nil, "store.TraceReader": r.TraceReader != nil,
			"store.OverviewReader": r.OverviewReader != nil, "store.RunComparer": r.RunComparer != nil,
			"store.WorkerReader": r.WorkerReader != nil, "store.EvalHistory": r.EvalHistory != nil,
			"store.SubjectEraser": r.SubjectEraser != nil, "store.SegmentReader": r.SegmentReader != nil,
			"store.ForgetLookup": r.ForgetLookup != nil, "store.RunLookup": r.RunLookup != nil,
			"store.ReviewWriter": r.ReviewWriter != nil, "store.ReviewReader": r.ReviewReader != nil,
		}
	}
	optional := map[string]bool{"store.TraceReader": true, "store.OverviewReader": true,
		"store.RunComparer": true, "store.WorkerReader": true, "store.EvalHistory": true, "store.SubjectEraser": true,
		"store.SegmentReader": true, "store.ForgetLookup": true, "store.RunLookup": true,
		"store.ReviewWriter": true, "store.ReviewReader": true}
	st := store.OpenTestStore(t)
	tests := []struct {
		name        string
		st          store.Store
		wantMissing func(role string) bool
	}{
		{"sql store", st, func(string) bool { return false }},
		{"store with the basic roles only", basicStore{st}, func(role string) bool { return optional[role] }},
		{"no store", nil, func(string) bool { return true }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for role, present := range roles(store.NewRoles(tt.st)) {
				if present == tt.wantMissing(role) {
					t.Errorf("%s: present %v, want %v", role, present, !tt.wantMissing(role))
				}
			}
		})
	}
	for role := range optional {
		err := store.NotSupported(role)
		if !errors.Is(err, store.ErrNotSupported) || !strings.Contains(err.Error(), role) {
			t.Errorf("NotSupported(%s) = %v, want ErrNotSupported naming the role", role, err)
		}
	}
}
