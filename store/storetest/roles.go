package storetest

import "github.com/conductor-shadow/conductor-shadow/store"

// Memory has every store role.
var (
	_ store.Store          = (*Memory)(nil)
	_ store.TraceWriter    = (*Memory)(nil)
	_ store.WorkStore      = (*Memory)(nil)
	_ store.SuiteWriter    = (*Memory)(nil)
	_ store.TraceReader    = (*Memory)(nil)
	_ store.SuiteReader    = (*Memory)(nil)
	_ store.Console        = (*Memory)(nil)
	_ store.OverviewReader = (*Memory)(nil)
	_ store.RunComparer    = (*Memory)(nil)
	_ store.WorkerReader   = (*Memory)(nil)
	_ store.EvalHistory    = (*Memory)(nil)
)
