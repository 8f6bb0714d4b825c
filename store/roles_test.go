package store_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// basicStore has only the roles every Store has.
type basicStore struct{ store.Store }

// Roles hands out every role of the SQL store; a store without an optional role
// answers ErrNotSupported naming it, and a Roles without a store answers an
// error for every role.
func TestRoles(t *testing.T) {
	roles := func(r store.Roles) map[string]error {
		errs := map[string]error{}
		_, errs["store.TraceWriter"] = r.TraceWriter()
		_, errs["store.WorkStore"] = r.WorkStore()
		_, errs["store.SuiteWriter"] = r.SuiteWriter()
		_, errs["store.SuiteReader"] = r.SuiteReader()
		_, errs["store.Console"] = r.Console()
		_, errs["store.TraceReader"] = r.TraceReader()
		_, errs["store.OverviewReader"] = r.OverviewReader()
		_, errs["store.RunComparer"] = r.RunComparer()
		_, errs["store.WorkerReader"] = r.WorkerReader()
		_, errs["store.EvalHistory"] = r.EvalHistory()
		_, errs["store.SubjectEraser"] = r.SubjectEraser()
		_, errs["store.SegmentAnalytics"] = r.SegmentReader()
		return errs
	}
	optional := map[string]bool{"store.TraceReader": true, "store.OverviewReader": true,
		"store.RunComparer": true, "store.WorkerReader": true, "store.EvalHistory": true, "store.SubjectEraser": true,
		"store.SegmentAnalytics": true}
	st := store.OpenTestStore(t)
	tests := []struct {
		name        string
		st          store.Store
		wantMissing func(role string) bool
	}{
		{"sql store", st, func(string) bool { return false }},
		{"store with the basic roles only", basicStore{st}, func(role string) bool { return optional[role] }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for role, err := range roles(store.NewRoles(tt.st)) {
				switch {
				case !tt.wantMissing(role) && err != nil:
					t.Errorf("%s: %v", role, err)
				case tt.wantMissing(role) && !errors.Is(err, store.ErrNotSupported):
					t.Errorf("%s: err %v, want ErrNotSupported", role, err)
				case tt.wantMissing(role) && !strings.Contains(err.Error(), role):
					t.Errorf("%s: error %q does not name the role", role, err)
				}
			}
		})
	}
	t.Run("no store", func(t *testing.T) {
		for role, err := range roles(store.Roles{}) {
			if err == nil || errors.Is(err, store.ErrNotSupported) {
				t.Errorf("%s of a Roles without a store: err %v", role, err)
			}
		}
	})
}
