package ingest

import (
	"crypto/rand"
	"encoding/hex"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// offeredKeep is how long a minute's counts stay in memory after it ended and
// was written: long enough for the copies of its last exchanges to be counted.
const offeredKeep = 2 * time.Minute

// Offered counts the production exchanges a tap was offered, per minute,
// source (store.OfferedProxy, store.OfferedTap), route and app, and of them
// those whose record was lost (RecordDropped): the first stage of coverage,
// written to table tap_offered by the Recorder. Counting is lock-free once a
// minute's key exists, so the proxy counts on the production path. Labels are
// kept as the exchange carried them; the Recorder pseudonymizes them as it
// writes. Safe for concurrent use.
type Offered struct {
	tapID string
	m     sync.Map // offeredKey -> *offeredCell
	mu    sync.Mutex
}

type offeredKey struct {
	minute        int64 // Unix minute
	source, route string
	app           string
}

type offeredCell struct {
	offered, dropped atomic.Int64
	// written: what the last flush stored (the flusher's own).
	writtenOffered, writtenDropped int64
}

// NewOffered returns empty counts with a tap id drawn now (one per process
// life: rows of two lives never overwrite each other).
func NewOffered() *Offered {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return &Offered{tapID: hex.EncodeToString(b[:])}
}

// TapID is the id this process's rows carry.
func (o *Offered) TapID() string { return o.tapID }

func (o *Offered) cell(source, route, app string, at time.Time) *offeredCell {
	if at.IsZero() {
		at = time.Now()
	}
	k := offeredKey{minute: at.Unix() / 60, source: source, route: route, app: app}
	v, ok := o.m.Load(k)
	if !ok {
		v, _ = o.m.LoadOrStore(k, new(offeredCell))
	}
	return v.(*offeredCell)
}

// Offer counts one exchange offered at at (zero: now).
func (o *Offered) Offer(source, route, app string, at time.Time) {
	if o == nil {
		return
	}
	o.cell(source, route, app, at).offered.Add(1)
}

// dropped counts one offered exchange whose record was lost.
func (o *Offered) dropped(ex Exchange) {
	if o == nil {
		return
	}
	o.cell(offeredSource(ex), ex.Metadata["route"], ex.App, ex.ReceivedAt).dropped.Add(1)
}

// offeredSource is the source an exchange was counted under.
func offeredSource(ex Exchange) string {
	if ex.Metadata["source"] == store.OfferedProxy {
		return store.OfferedProxy
	}
	return store.OfferedTap
}

// changed returns the counts of every minute with a count not yet written (all
// held minutes when final), marking them written, and forgets minutes that
// ended offeredKeep before now and are written. A row holds a minute's whole
// count (the store keeps a key's last write).
func (o *Offered) changed(now time.Time, final bool) []store.OfferedCount {
	o.mu.Lock()
	defer o.mu.Unlock()
	var rows []store.OfferedCount
	old := now.Add(-offeredKeep).Unix() / 60
	o.m.Range(func(k, v any) bool {
		key, c := k.(offeredKey), v.(*offeredCell)
		off, dr := c.offered.Load(), c.dropped.Load()
		if off != c.writtenOffered || dr != c.writtenDropped || final && off > 0 {
			c.writtenOffered, c.writtenDropped = off, dr
			rows = append(rows, store.OfferedCount{WindowStart: time.Unix(key.minute*60, 0).UTC(), TapID: o.tapID, Source: key.source,
				Route: key.route, App: key.app, Offered: off, RecordDropped: dr})
		} else if key.minute < old {
			o.m.Delete(k)
		}
		return true
	})
	sort.Slice(rows, func(i, j int) bool { return rows[i].WindowStart.Before(rows[j].WindowStart) })
	return rows
}

// unflushed marks rows as not written (their store write failed): the next
// flush writes them again.
func (o *Offered) unflushed(rows []store.OfferedCount) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, r := range rows {
		if v, ok := o.m.Load(offeredKey{minute: r.WindowStart.Unix() / 60, source: r.Source, route: r.Route, app: r.App}); ok {
			c := v.(*offeredCell)
			c.writtenOffered, c.writtenDropped = -1, -1
		}
	}
}
