package store

import (
	"context"
	"fmt"
	"time"
)

// TrafficClock tells where the stored traffic is in time, so the overview's
// default window can follow the data rather than the wall clock. The SQL
// stores (embedded and server) implement it.
type TrafficClock interface {
	// NewestTraffic returns the receive time (UTC) of the newest stored
	// production request (tapped or replayed; not a suite case nor a
	// generated row), of app when app is not empty; the
	// zero time when there is none.
	NewestTraffic(ctx context.Context, app string) (time.Time, error)
}

var _ TrafficClock = (*sqlStore)(nil)

// NewestTraffic implements TrafficClock with one statement (max over the
// requests' received_at column; no FINAL needed, a re-delivered request keeps
// its receive time).
func (s *sqlStore) NewestTraffic(ctx context.Context, app string) (time.Time, error) {
	if err := s.check(ctx); err != nil {
		return time.Time{}, fmt.Errorf("store: newest traffic: %w", err)
	}
	p := Params{}
	cond := liveRequests(false)
	if app != "" {
		cond += " AND app = {app:String}"
		p.Str("app", app)
	}
	type row struct {
		Newest time.Time `json:"newest"`
		N      int64     `json:"n"`
	}
	rows, err := queryRows[row](ctx, s.t, fmt.Sprintf(
		"SELECT max(received_at) AS newest, count() AS n FROM %s.requests WHERE %s", s.db, cond), p)
	if err != nil {
		return time.Time{}, fmt.Errorf("store: newest traffic: %w", err)
	}
	if len(rows) == 0 || rows[0].N == 0 {
		return time.Time{}, nil
	}
	return rows[0].Newest.UTC(), nil
}
