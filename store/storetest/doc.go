// Package storetest holds what tests need of the store, all on the real embedded
// ClickHouse engine (chDB), never on a second engine of ours:
//
//   - Engine (engine.go): other packages' tests start one per test binary in
//     TestMain and Open a database of their own on it per test; CountRows reads
//     what a test stored.
//   - Fixture and T0: one request with an incumbent run, two candidate runs,
//     their steps and scores, as a tapped exchange stores it.
//   - The contracts every store keeps — RunContract (round trips, idempotent
//     keys, paging, summaries, read-only Query, shadow work backlog),
//     RunAnalyticsContract (search, overview, comparisons, worker usage,
//     segments) and RunEvalHistoryContract — which package store runs against
//     the embedded engine (store.OpenTestStore).
package storetest
