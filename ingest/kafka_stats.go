package ingest

import "sync/atomic"

// kafkaCounters count what the Kafka transport did beyond accepting and
// delivering copies (StatsSnapshot.Kafka).
type kafkaCounters struct {
	redelivered       atomic.Int64
	skippedDone       atomic.Int64
	revokedUnfinished atomic.Int64
	claimChecked      atomic.Int64
	reassembled       atomic.Int64
}

// KafkaStatsSnapshot is the Kafka part of StatsSnapshot.
type KafkaStatsSnapshot struct {
	// Redelivered are exchanges this worker was handed that an earlier owner of
	// the partition had been handed too and had not stored (its commit
	// metadata says so): a worker killed with -9 with exchanges in flight, or
	// one whose drain at a rebalance ran out of time. With separate stores each
	// may be shadowed a second time; with a shared store the run look-up skips
	// what was stored (SkippedRuns).
	Redelivered int64 `json:"redelivered"`
	// SkippedDone are messages an earlier owner of the partition had stored but
	// could not commit past (an earlier offset was still running): skipped, not
	// shadowed again.
	SkippedDone int64 `json:"skipped_done"`
	// RevokedUnfinished are exchanges still being shadowed when this worker's
	// drain (ingest.kafka.drain_timeout) ended at a rebalance: the partition's
	// next owner gets them again (and counts them as Redelivered).
	RevokedUnfinished int64 `json:"revoked_unfinished"`
	// ClaimChecked are copies the tap published as claim-check chunks (above
	// the topic's message limit).
	ClaimChecked int64 `json:"claim_checked"`
	// Reassembled are claim-check copies this worker rebuilt and verified
	// (size and SHA-256).
	Reassembled int64 `json:"reassembled"`
}

func (c *kafkaCounters) snapshot() KafkaStatsSnapshot {
	return KafkaStatsSnapshot{Redelivered: c.redelivered.Load(), SkippedDone: c.skippedDone.Load(),
		RevokedUnfinished: c.revokedUnfinished.Load(), ClaimChecked: c.claimChecked.Load(), Reassembled: c.reassembled.Load()}
}
