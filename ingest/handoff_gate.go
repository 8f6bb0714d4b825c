package ingest

import (
	"sync"
	"sync/atomic"
	"time"
)

// ReasonShadowSaturated is why an exchange of an isolated server's front was
// forwarded without capturing its bodies: the shadow side was refusing copies
// (see Saturation). It is kept as a metadata record (Exchange.BodyOmitted and
// requests.not_shadowed), counted in Stats.Mirrored and Stats.Recorded.
const ReasonShadowSaturated = "shadow_saturated"

// The saturation rule's constants (Saturation).
const (
	// saturationMaxLevel bounds the halvings: while saturated at least 1 in
	// 2^6 = 64 exchanges is still captured, so the shadow side keeps being fed
	// and the rule keeps learning whether it takes copies again.
	saturationMaxLevel = 6
	// saturationRiseEvery is the least time between two halvings: a batch of
	// refusals (up to the hand-off's batch, 256 copies) halves the share once.
	saturationRiseEvery = 100 * time.Millisecond
	// saturationCalm is how long the share stays put after a refusal or a
	// change before it doubles again.
	saturationCalm = 250 * time.Millisecond
	// saturationForget is how long without a refusal restores the share
	// whether or not a copy was taken meanwhile (traffic stopped).
	saturationForget = 10 * time.Second
)

// Saturation decides, before the proxy captures an exchange, whether the
// shadow side can take its copy: the front of an isolated server then
// degrades to the bare proxy's cost plus a metadata record instead of
// capturing bodies, parsing and pseudonymizing a copy that would only be
// refused. Safe for concurrent use; the decision takes no lock while the
// shadow side keeps up.
//
// The rule (a share halved on refusals, doubled when calm):
//   - a refusal is a mirrored copy the hand-off's buffer cannot take, or one
//     the shadow side answers queue_full or accept_timeout;
//   - each refusal halves the share of exchanges captured (1, ½, ¼, … down to
//     1/64), at most once per 100 ms;
//   - the share doubles again once 250 ms passed without a refusal and
//     without a change, the shadow side took a copy since the last change,
//     and the mirrored buffer is at most half full (hysteresis: one refusal
//     saturates; recovery takes calm, a copy taken and a drained buffer,
//     250 ms per doubling). A lull in traffic alone restores nothing, so a
//     backlog the shadow side still holds after it is not flooded again;
//     10 s without any refusal restore the share at once;
//   - at share s < 1 every (1/s)-th exchange is captured (a counter, not a
//     random draw), the others are forwarded without capture and recorded as
//     metadata with ReasonShadowSaturated.
type Saturation struct {
	level atomic.Int32 // share captured = 1/2^level; 0: not saturated

	mu          sync.Mutex
	lastRefusal time.Time
	lastRise    time.Time // the last halving
	lastChange  time.Time // the last halving or doubling
	took        bool      // a copy was taken since the last change
	n           uint64    // exchanges decided while saturated

	shed     atomic.Int64 // exchanges forwarded without capture
	episodes atomic.Int64 // times the share left 1
}

// SaturationSnapshot is the rule's state on /api/stats (handoff.saturation).
type SaturationSnapshot struct {
	Saturated bool `json:"saturated"` // the share captured is below 1
	// Share is the share of exchanges captured now, 1/2^level (1: all).
	Share float64 `json:"share"`
	// Shed are the exchanges forwarded without capture since start
	// (recorded as metadata, reason shadow_saturated).
	Shed int64 `json:"shed"`
	// Episodes are the times the front became saturated since start.
	Episodes int64 `json:"episodes"`
}

// Refused notes a copy the shadow side could not take at now.
func (s *Saturation) Refused(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastRefusal = now
	lv := s.level.Load()
	if lv >= saturationMaxLevel || lv > 0 && now.Sub(s.lastRise) < saturationRiseEvery {
		return
	}
	if lv == 0 {
		s.episodes.Add(1)
		s.n = 0
	}
	s.level.Store(lv + 1)
	s.lastRise, s.lastChange, s.took = now, now, false
}

// Taken notes a copy the shadow side took: evidence for doubling the share.
func (s *Saturation) Taken() {
	if s.level.Load() == 0 {
		return
	}
	s.mu.Lock()
	s.took = true
	s.mu.Unlock()
}

// Capture reports whether the exchange arriving at now is to be captured;
// drained says whether the hand-off's mirrored buffer is at most half full
// (it is asked only while saturated). false counts the exchange as shed.
func (s *Saturation) Capture(now time.Time, drained func() bool) bool {
	if s.level.Load() == 0 {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	lv := s.settle(now, drained)
	if lv == 0 {
		return true
	}
	s.n++
	if s.n%(1<<lv) == 0 {
		return true
	}
	s.shed.Add(1)
	return false
}

// settle doubles the share once a calm period passed without a refusal or a
// change, with a copy taken since the change, while drained; or restores it
// after saturationForget without a refusal. s.mu held.
func (s *Saturation) settle(now time.Time, drained func() bool) int32 {
	lv := s.level.Load()
	if lv == 0 {
		return 0
	}
	switch {
	case now.Sub(s.lastRefusal) >= saturationForget:
		lv = 0
	case s.took && now.Sub(s.lastRefusal) >= saturationCalm && now.Sub(s.lastChange) >= saturationCalm && drained():
		lv--
	default:
		return lv
	}
	s.level.Store(lv)
	s.lastChange, s.took = now, false
	return lv
}

// Snapshot returns the rule's state at now.
func (s *Saturation) Snapshot(now time.Time, drained func() bool) SaturationSnapshot {
	s.mu.Lock()
	lv := s.settle(now, drained)
	s.mu.Unlock()
	return SaturationSnapshot{Saturated: lv > 0, Share: 1 / float64(int64(1)<<lv), Shed: s.shed.Load(), Episodes: s.episodes.Load()}
}
