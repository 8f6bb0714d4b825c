package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"
)

// kafkaConsumer is a shadow worker process's membership of the consumer group
// (segmentio/kafka-go's ConsumerGroup, one partition reader per assigned
// partition). What it does about rebalances, so that an exchange is shadowed
// once even when every worker keeps its own store:
//
//   - At most as many exchanges are handed out at once as the process runs at
//     once (its admission limit, KafkaQueue.LimitInFlight), and never more
//     than MaxInFlight: what a rebalance waits for and a kill -9 can repeat.
//   - Each exchange's offset is committed as soon as it is stored (and every
//     earlier offset of its partition), synchronously, with the generation's id.
//   - Every commit's metadata records, for the partition, the end of what was
//     handed out ("h") and which offsets above the committed one are done
//     already ("a"); an exchange is handed out only after that record of it
//     was committed.
//   - When a rebalance ends the generation, the member stops fetching, waits up
//     to DrainTimeout for the exchanges it handed out to be stored (committing
//     each, and re-committing every third of SessionTimeout, which keeps its
//     session alive on the coordinator), commits, and only then rejoins: the
//     partitions move with nothing uncommitted but what did not finish in time
//     (counted, StatsSnapshot.Kafka.RevokedUnfinished).
//   - A partition hands out nothing more while its oldest exchange not done
//     is still running and the offsets the metadata would then have to list
//     (done above it, or handed out) reach maxDoneListed: a long run holds
//     back its partition's share instead of growing a list the next owner
//     could not read whole.
//   - The next owner of a partition reads that metadata: offsets recorded done
//     are skipped (counted, Kafka.SkippedDone), and offsets handed out before
//     but not done are re-deliveries (counted, Kafka.Redelivered, and logged):
//     what a worker killed with -9 had in flight, or what outlasted the drain.
type kafkaConsumer struct {
	q   *KafkaQueue
	cfg KafkaConfig
	out chan kafkaDelivery // from the partition readers to Next

	holdMu  sync.Mutex
	held    int           // exchanges handed out and not yet acked or released
	freed   chan struct{} // closed (and replaced) when a hold ends
	limitFn func() int    // runs the worker process executes at once (its admission limit); nil: MaxInFlight

	startOnce sync.Once
	cg        *kafka.ConsumerGroup
	cgErr     error
	runCancel context.CancelFunc
	runDone   chan struct{}

	partialBytes atomic.Int64 // held by incomplete claim-check copies
	crashed      atomic.Bool  // tests: a crash, nothing is committed any more
	listLimit    int          // done offsets one commit's metadata lists (maxDoneListed; tests lower it)
}

// kafkaDelivery is one copy fetched from a partition, with the offsets it
// spans (one, or every chunk of a claim-check).
type kafkaDelivery struct {
	ex      Exchange
	offsets []int64 // ascending
	part    *partitionState
}

func newKafkaConsumer(q *KafkaQueue) *kafkaConsumer {
	return &kafkaConsumer{q: q, cfg: q.cfg, out: make(chan kafkaDelivery), freed: make(chan struct{}), listLimit: maxDoneListed}
}

// capacity is how many exchanges may be held now: MaxInFlight, or fewer
// while the process runs fewer at once.
func (c *kafkaConsumer) capacity() int {
	n := c.cfg.MaxInFlight
	if c.limitFn != nil {
		if l := c.limitFn(); l >= 1 && l < n {
			n = l
		}
	}
	return n
}

// hold waits for room to hold one more exchange.
func (c *kafkaConsumer) hold(ctx context.Context, closing <-chan struct{}) error {
	for {
		c.holdMu.Lock()
		if c.held < c.capacity() {
			c.held++
			c.holdMu.Unlock()
			return nil
		}
		freed := c.freed
		c.holdMu.Unlock()
		select {
		case <-freed:
		case <-time.After(100 * time.Millisecond): // the limit may have risen
		case <-ctx.Done():
			return ctx.Err()
		case <-closing:
			return ErrQueueClosed
		}
	}
}

func (c *kafkaConsumer) unhold() {
	c.holdMu.Lock()
	c.held--
	close(c.freed)
	c.freed = make(chan struct{})
	c.holdMu.Unlock()
}

// start joins the group on first use.
func (c *kafkaConsumer) start() error {
	c.startOnce.Do(func() {
		cg, err := kafka.NewConsumerGroup(kafka.ConsumerGroupConfig{
			ID:                    c.cfg.Group,
			Brokers:               c.cfg.Brokers,
			Topics:                []string{c.cfg.Topic},
			HeartbeatInterval:     c.cfg.SessionTimeout / 3,
			SessionTimeout:        c.cfg.SessionTimeout,
			RebalanceTimeout:      c.cfg.DrainTimeout + c.cfg.SessionTimeout,
			JoinGroupBackoff:      time.Second,
			StartOffset:           kafka.FirstOffset,
			WatchPartitionChanges: true,
		})
		if err != nil {
			c.cgErr = fmt.Errorf("ingest: kafka: consumer group: %w", err)
			return
		}
		c.cg = cg
		ctx, cancel := context.WithCancel(context.Background())
		c.runCancel, c.runDone = cancel, make(chan struct{})
		go c.run(ctx)
	})
	return c.cgErr
}

// Rejoin pauses while generations churn: kafka-go's partition watcher
// (ConsumerGroupConfig.WatchPartitionChanges) ends a generation at once when
// its first read of the topic's partitions fails, which is what it does
// while the topic does not exist, and the group then joins again at once:
// thousands of JoinGroup and SyncGroup requests a second, a core busy in the
// worker and one in the broker. When a generation that held no partition of
// the topic ended within churnLife and the next holds none either, the next
// join waits, from minRejoinPause doubling to maxRejoinPause; a generation
// that holds a partition, or follows one that lasted longer, ends the pause.
const (
	churnLife      = time.Second
	minRejoinPause = 100 * time.Millisecond
	maxRejoinPause = 5 * time.Second
)

// run takes each generation of the group in turn; the group waits for a
// generation's function (the drain included) before it rejoins.
func (c *kafkaConsumer) run(ctx context.Context) {
	defer close(c.runDone)
	var (
		pause time.Duration // before the next generation is taken (Rejoin pauses)
		empty bool          // the last generation held no partition of the topic
	)
	for {
		if pause > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(pause):
			}
		}
		asked := time.Now()
		gen, err := c.cg.Next(ctx) // blocks while the last generation lives
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, kafka.ErrGroupClosed) {
				return
			}
			if !errors.Is(err, kafka.RebalanceInProgress) {
				if errors.Is(err, kafka.InvalidSessionTimeout) {
					err = fmt.Errorf("%w (ingest.kafka.session_timeout %s is outside the broker's group.min.session.timeout.ms to group.max.session.timeout.ms, 6s to 30m by default)", err, c.cfg.SessionTimeout)
				}
				err = fmt.Errorf("ingest: kafka: join group: %w", err)
				c.q.fetching.Note(err)
				c.q.log.Warn("kafka: joining the consumer group failed; retrying", "group", c.cfg.Group, "err", err)
			}
			continue
		}
		c.q.fetching.Note(nil)
		churned := empty && time.Since(asked) < churnLife // the last generation
		empty = len(gen.Assignments[c.cfg.Topic]) == 0
		switch {
		case churned && empty && pause == 0:
			pause = minRejoinPause
			c.q.log.Warn("kafka: generations of the group end at once with no partition of the topic (is the topic created?); joining again after a growing pause",
				"group", c.cfg.Group, "topic", c.cfg.Topic, "max_pause", maxRejoinPause)
		case churned && empty:
			pause = min(2*pause, maxRejoinPause)
		case pause > 0:
			pause = 0
			c.q.log.Info("kafka: generations of the group no longer end at once; joining without a pause", "group", c.cfg.Group, "topic", c.cfg.Topic)
		}
		gen.Start(func(gctx context.Context) { c.generation(gctx, gen) })
	}
}

// generationState is what one generation of this member holds.
type generationState struct {
	gen      *kafka.Generation
	mu       sync.Mutex
	ending   bool // no more hand-outs: the drain has begun
	inflight int  // handed out, not yet acked or released
}

// generation reads the assigned partitions until the generation ends, then
// drains them.
func (c *kafkaConsumer) generation(ctx context.Context, gen *kafka.Generation) {
	g := &generationState{gen: gen}
	assigned := gen.Assignments[c.cfg.Topic]
	ids := make([]int, len(assigned))
	for i, a := range assigned {
		ids[i] = a.ID
	}
	meta := c.committedMetadata(ids)
	fctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	parts := make([]*partitionState, 0, len(assigned))
	for _, a := range assigned {
		p := newPartitionState(c, g, a.ID, a.Offset, meta[a.ID])
		parts = append(parts, p)
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.fetchPartition(fctx, p, a.Offset)
		}()
	}
	<-ctx.Done()
	cancel()
	wg.Wait()
	c.drain(g, parts)
}

// committedMetadata reads the metadata committed with each partition's offset.
func (c *kafkaConsumer) committedMetadata(ids []int) map[int]committed {
	out := map[int]committed{}
	if len(ids) == 0 {
		return out
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.CommitTimeout)
	defer cancel()
	resp, err := c.q.client.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: c.cfg.Group, Topics: map[string][]int{c.cfg.Topic: ids}})
	if err == nil && resp.Error != nil {
		err = resp.Error
	}
	if err != nil {
		c.q.log.Warn("kafka: reading the committed offsets' metadata failed; re-deliveries of this generation go uncounted", "err", err)
		return out
	}
	for _, p := range resp.Topics[c.cfg.Topic] {
		if p.Error == nil {
			out[p.Partition] = committed{offset: p.CommittedOffset, metadata: p.Metadata}
		}
	}
	return out
}

// committed is a partition's committed offset and its metadata.
type committed struct {
	offset   int64
	metadata string
}

// fetchPartition reads one partition from offset until ctx ends, handing each
// copy to Next.
func (c *kafkaConsumer) fetchPartition(ctx context.Context, p *partitionState, offset int64) {
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:       c.cfg.Brokers,
		Topic:         c.cfg.Topic,
		Partition:     p.id,
		MinBytes:      1,
		MaxBytes:      int(c.q.limit.Load()) + 1<<20,
		MaxWait:       250 * time.Millisecond,
		QueueCapacity: 8,
	})
	defer r.Close()
	if err := r.SetOffset(offset); err != nil {
		c.q.log.Error("kafka: cannot read partition", "partition", p.id, "offset", offset, "err", err)
		return
	}
	every := min(c.cfg.ReassemblyTimeout/4, time.Second)
	swept := time.Now()
	for ctx.Err() == nil {
		if now := time.Now(); now.Sub(swept) >= every {
			p.sweep(now)
			swept = now
		}
		mctx, cancel := context.WithTimeout(ctx, every)
		m, err := r.FetchMessage(mctx)
		cancel()
		if err != nil {
			switch {
			case ctx.Err() != nil:
				return
			case errors.Is(err, context.DeadlineExceeded):
			default:
				c.q.fetching.Note(fmt.Errorf("ingest: kafka: fetch partition %d: %w", p.id, err))
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
			continue
		}
		c.q.fetching.Note(nil)
		d, ok := p.take(m)
		if !ok {
			continue
		}
		if !p.waitForRoom(ctx, d) {
			return
		}
		select {
		case c.out <- d:
		case <-ctx.Done():
			p.unreserve(d)
			return
		}
	}
}

// next hands out the next copy: once there is room to hold it, and once its
// hand-out is recorded in the committed metadata.
func (c *kafkaConsumer) next(ctx context.Context) (Delivery, error) {
	if err := c.start(); err != nil {
		return Delivery{}, err
	}
	closing := c.q.stopCtx.Done()
	if err := c.hold(ctx, closing); err != nil {
		return Delivery{}, err
	}
	for {
		select {
		case d := <-c.out:
			if !d.part.handOut(d) {
				d.part.unreserve(d)
				continue // its generation ended meanwhile: the partition's next owner gets it
			}
			var once sync.Once
			end := func(acked bool) {
				once.Do(func() {
					d.part.finish(d, acked)
					c.unhold()
				})
			}
			return Delivery{Exchange: d.ex, Owed: Owed{Records: true}, Ack: func() { end(true) }, Release: func() { end(false) }}, nil
		case <-ctx.Done():
			c.unhold()
			return Delivery{}, ctx.Err()
		case <-closing:
			c.unhold()
			return Delivery{}, ErrQueueClosed
		}
	}
}

// drain ends a generation: no more hand-outs, up to DrainTimeout for what was
// handed out to be acked or released (re-committing every third of the
// session timeout: a commit counts as a heartbeat), a last commit of every
// partition, and then its partitions are no longer this member's.
func (c *kafkaConsumer) drain(g *generationState, parts []*partitionState) {
	g.mu.Lock()
	g.ending = true
	g.mu.Unlock()
	inflight := func() int {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.inflight
	}
	start := time.Now()
	deadline := start.Add(c.cfg.DrainTimeout)
	keepAlive := time.NewTicker(c.cfg.SessionTimeout / 3)
	defer keepAlive.Stop()
	for inflight() > 0 && time.Now().Before(deadline) && !c.crashed.Load() {
		select {
		case <-keepAlive.C:
			for _, p := range parts {
				p.commit(true)
			}
		case <-time.After(10 * time.Millisecond):
		}
	}
	left := inflight()
	for _, p := range parts {
		p.revoke()
	}
	if left > 0 && !c.crashed.Load() {
		c.q.stats.kafka.revokedUnfinished.Add(int64(left))
		c.q.log.Warn("kafka: partitions handed over with exchanges still being shadowed; their next owner shadows them again",
			"exchanges", left, "drain_timeout", c.cfg.DrainTimeout)
	} else if len(parts) > 0 {
		c.q.log.Debug("kafka: generation drained", "partitions", len(parts), "took", time.Since(start).Round(time.Millisecond))
	}
}

// shutdown leaves the group: the generation's drain commits what was acked.
func (c *kafkaConsumer) shutdown(context.Context) error {
	c.startOnce.Do(func() {}) // waits for a start under way; never joined: a later Next must not join either
	if c.cg == nil {
		return nil
	}
	err := c.cg.Close()
	c.runCancel()
	<-c.runDone
	return err
}

// crash stops every commit and leaves the group, as a killed process would
// after its session timed out (tests).
func (c *kafkaConsumer) crash() {
	c.crashed.Store(true)
	c.startOnce.Do(func() {})
	if c.cg != nil {
		_ = c.cg.Close()
	}
}

// partitionState tracks one assigned partition within a generation.
type partitionState struct {
	c  *kafkaConsumer
	g  *generationState
	id int

	mu        sync.Mutex
	next      int64          // the offset after the last one fetched; < 0 until the first fetch from a relative start
	pending   []int64        // fetched and not done, ascending
	done      map[int64]bool // done among pending
	out       map[int64]bool // handed out (or about to be) and not yet acked or released, among pending
	handed    int64          // every offset below was handed out (the "h" recorded)
	committed int64          // last committed offset (-1: none by this member)
	lastMeta  string         // metadata of that commit
	revoked   bool
	prevDone  map[int64]bool // offsets the previous owner recorded done
	prevH     int64          // the previous owner's "h"
	sets      map[string]*partialSet
	refused   map[string]time.Time // claim-check ids dropped: their later chunks are skipped
}

func newPartitionState(c *kafkaConsumer, g *generationState, id int, offset int64, prev committed) *partitionState {
	p := &partitionState{c: c, g: g, id: id, next: offset, committed: -1, done: map[int64]bool{}, out: map[int64]bool{},
		sets: map[string]*partialSet{}, refused: map[string]time.Time{}}
	if offset >= 0 && prev.offset == offset {
		p.prevH, p.prevDone = parseCommitMetadata(offset, prev.metadata)
		p.handed = p.prevH
	}
	return p
}

// waitForRoom waits, before d is handed out, while the partition's oldest
// offset not done is handed out (its run is going) and listing d's offsets
// too would take the commit metadata past listLimit, then reserves d's
// offsets as handed out; false once ctx ended (the generation is over: the
// next owner gets d). Nothing waits on an oldest offset that is not handed
// out (a claim-check set still gathering its chunks, or an exchange about to
// be handed out), so the wait always ends with a run or with the generation.
func (p *partitionState) waitForRoom(ctx context.Context, d kafkaDelivery) bool {
	for {
		p.mu.Lock()
		full := p.listedLocked()+len(d.offsets) > p.c.listLimit
		if !full {
			for _, o := range d.offsets {
				p.out[o] = true
			}
		}
		p.mu.Unlock()
		if !full {
			return true
		}
		p.c.holdMu.Lock()
		freed := p.c.freed
		p.c.holdMu.Unlock()
		select {
		case <-freed:
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return false
		}
	}
}

// unreserve undoes waitForRoom's reservation of d, which was not handed out.
func (p *partitionState) unreserve(d kafkaDelivery) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, o := range d.offsets {
		delete(p.out, o)
	}
}

// listedLocked is how many offsets a commit would list as done once what is
// handed out is acked, or 0 while the oldest offset not done is not handed
// out (under p.mu).
func (p *partitionState) listedLocked() int {
	i := 0
	for i < len(p.pending) && p.done[p.pending[i]] {
		i++ // done, not yet trimmed by a commit
	}
	if i == len(p.pending) || !p.out[p.pending[i]] {
		return 0
	}
	n := len(p.prevDone)
	for _, o := range p.pending[i+1:] {
		if p.done[o] || p.out[o] {
			n++
		}
	}
	return n
}

// commitMetadataVersion heads the metadata this package commits.
const commitMetadataVersion = "cs1"

// maxDoneListed bounds the done offsets listed in one commit's metadata
// (Kafka's offset.metadata.max.bytes is 4,096 by default: 300 deltas of up
// to 5 digits and their commas take 1,800 bytes). A partition waits rather
// than hand out past it (waitForRoom); what invalid or dropped messages add
// meanwhile and is left out is delivered again to the next owner, counted.
const maxDoneListed = 300

// commitMetadata renders "cs1 h=<end of handed out> a=<done offsets at or
// above the committed one, as deltas>" (done at the committed offset itself:
// stored by an earlier owner, not fetched since), listing at most limit.
func commitMetadata(offset, handed int64, done []int64, limit int) string {
	var b strings.Builder
	b.WriteString(commitMetadataVersion + " h=" + strconv.FormatInt(handed, 10))
	if len(done) > 0 {
		b.WriteString(" a=")
		for i, o := range done[:min(len(done), limit)] {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.FormatInt(o-offset, 10))
		}
	}
	return b.String()
}

// parseCommitMetadata reads commitMetadata; anything else (another client's
// metadata, none) reads as nothing handed out and nothing done.
func parseCommitMetadata(offset int64, s string) (handed int64, done map[int64]bool) {
	f := strings.Fields(s)
	if len(f) == 0 || f[0] != commitMetadataVersion {
		return 0, nil
	}
	done = map[int64]bool{}
	for _, kv := range f[1:] {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "h":
			handed, _ = strconv.ParseInt(v, 10, 64)
		case "a":
			for _, d := range strings.Split(v, ",") {
				if n, err := strconv.ParseInt(d, 10, 64); err == nil && n >= 0 {
					done[offset+n] = true
				}
			}
		}
	}
	return handed, done
}

// take tracks a fetched message and returns the copy to hand out, if any: a
// whole copy, or a claim-check copy whose last chunk this was. Offsets the
// previous owner stored, invalid messages and dropped sets are marked done.
func (p *partitionState) take(m kafka.Message) (kafkaDelivery, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pending = append(p.pending, m.Offset)
	p.next = m.Offset + 1
	stats, log := p.c.q.stats, p.c.q.log
	if p.prevDone[m.Offset] {
		delete(p.prevDone, m.Offset)
		p.done[m.Offset] = true
		stats.kafka.skippedDone.Add(1)
		return kafkaDelivery{}, false
	}
	part, chunked, err := parseClaimPart(m)
	if err != nil {
		p.drop(DropKafkaCorrupt, string(m.Key), part.copyID, []int64{m.Offset}, err)
		return kafkaDelivery{}, false
	}
	value, offsets := m.Value, []int64{m.Offset}
	if chunked {
		var ok bool
		value, offsets, ok = p.gather(m, part)
		if !ok {
			return kafkaDelivery{}, false
		}
	}
	var ex Exchange
	if err := json.Unmarshal(value, &ex); err != nil || (ex.SchemaVersion != 0 && ex.SchemaVersion != SchemaVersion) {
		stats.failed.Add(1)
		log.Error("kafka: message skipped", "partition", m.Partition, "offset", m.Offset, "request_id", string(m.Key), "schema_version", ex.SchemaVersion, "err", err)
		for _, o := range offsets {
			p.done[o] = true
		}
		return kafkaDelivery{}, false
	}
	return kafkaDelivery{ex: ex, offsets: offsets, part: p}, true
}

// gather adds one claim-check chunk to its set (under p.mu); ok once the set
// is complete and its size and SHA-256 check out.
func (p *partitionState) gather(m kafka.Message, part claimPart) (value []byte, offsets []int64, ok bool) {
	c := p.c
	id := string(m.Key)
	if _, gone := p.refused[part.copyID]; gone {
		p.done[m.Offset] = true
		return nil, nil, false
	}
	s := p.sets[part.copyID]
	if s == nil {
		if part.size > c.cfg.MaxCopyBytes || c.partialBytes.Add(part.size) > c.cfg.ReassemblyBytes {
			if part.size <= c.cfg.MaxCopyBytes {
				c.partialBytes.Add(-part.size)
			}
			p.drop(DropKafkaIncomplete, id, part.copyID, []int64{m.Offset},
				fmt.Errorf("a claim-check copy of %d bytes does not fit (max_copy_bytes %d, reassembly_bytes %d held %d)",
					part.size, c.cfg.MaxCopyBytes, c.cfg.ReassemblyBytes, c.partialBytes.Load()))
			return nil, nil, false
		}
		s = newPartialSet(id, part, time.Now())
		p.sets[part.copyID] = s
	}
	complete, err := s.add(part, m.Value, m.Offset)
	if err == nil && complete {
		value, err = s.assemble()
	}
	if err != nil {
		p.dropSet(DropKafkaCorrupt, part.copyID, err)
		return nil, nil, false
	}
	if !complete {
		return nil, nil, false
	}
	p.forgetSet(part.copyID)
	p.c.q.stats.kafka.reassembled.Add(1)
	return value, slices.Sorted(slices.Values(s.offsets)), true
}

// forgetSet releases a set's reservation (under p.mu).
func (p *partitionState) forgetSet(copyID string) *partialSet {
	s := p.sets[copyID]
	if s != nil {
		delete(p.sets, copyID)
		p.c.partialBytes.Add(-s.head.size)
	}
	return s
}

// dropSet drops an incomplete set as lost (under p.mu).
func (p *partitionState) dropSet(reason, copyID string, err error) {
	if s := p.forgetSet(copyID); s != nil {
		p.drop(reason, s.requestID, copyID, s.offsets, err)
	}
}

// drop counts and logs a copy lost on this side, marks its offsets done (the
// loss is final: it is not read again) and skips the set's later chunks
// (under p.mu).
func (p *partitionState) drop(reason, requestID, copyID string, offsets []int64, err error) {
	p.c.q.stats.drop(reason)
	p.c.q.log.Error("kafka: claim-check copy dropped", "reason", reason, "request_id", requestID, "copy_id", copyID,
		"partition", p.id, "offsets", offsets, "err", err)
	for _, o := range offsets {
		p.done[o] = true
	}
	if copyID != "" {
		p.refused[copyID] = time.Now()
	}
}

// sweep drops sets waiting longer than ReassemblyTimeout and forgets refused
// ids as old.
func (p *partitionState) sweep(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ttl := p.c.cfg.ReassemblyTimeout
	for id, s := range p.sets {
		if now.Sub(s.started) > ttl {
			p.dropSet(DropKafkaIncomplete, id, fmt.Errorf("%d of %d chunks arrived within reassembly_timeout (%s)", s.got, len(s.parts), ttl))
		}
	}
	for id, at := range p.refused {
		if now.Sub(at) > 2*ttl {
			delete(p.refused, id)
		}
	}
	p.commitLocked(false)
}

// handOut records d as handed out (committing the new end of what was handed
// out first) and counts a re-delivery; false when the generation is ending.
func (p *partitionState) handOut(d kafkaDelivery) bool {
	g := p.g
	g.mu.Lock()
	if g.ending {
		g.mu.Unlock()
		return false
	}
	g.inflight++
	g.mu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	last := d.offsets[len(d.offsets)-1]
	if last < p.prevH {
		p.c.q.stats.kafka.redelivered.Add(1)
		p.c.q.log.Info("kafka: exchange delivered again (handed out before and not stored by its last owner)",
			"request_id", d.ex.RequestID, "partition", p.id, "offset", last)
	}
	if last >= p.handed {
		p.handed = last + 1
		p.commitLocked(false)
	}
	return true
}

// finish ends a handed-out copy: acked, its offsets are done and committed
// as far as they are contiguous; released (a shutdown), they stay owed.
func (p *partitionState) finish(d kafkaDelivery, acked bool) {
	p.mu.Lock()
	for _, o := range d.offsets {
		delete(p.out, o)
	}
	if acked {
		for _, o := range d.offsets {
			p.done[o] = true
		}
		if p.revoked && !p.c.crashed.Load() {
			p.c.q.log.Info("kafka: exchange stored after its partition was handed over", "request_id", d.ex.RequestID, "partition", p.id)
		}
		p.commitLocked(false)
	}
	p.mu.Unlock()
	p.g.mu.Lock()
	p.g.inflight--
	p.g.mu.Unlock()
}

// commit commits the partition's state; force re-sends it unchanged (a
// heartbeat during the drain).
func (p *partitionState) commit(force bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.commitLocked(force)
}

// revoke makes a last commit and ends the partition's state: later acks
// commit nothing (the partition is another member's now).
func (p *partitionState) revoke() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.commitLocked(false)
	p.revoked = true
	for id := range p.sets {
		p.forgetSet(id) // not dropped: the next owner reads the chunks again
	}
}

// commitLocked commits the first offset not done (every earlier one is
// stored) with the metadata, unless nothing changed (under p.mu). A failed
// commit is logged: its exchanges are delivered again.
func (p *partitionState) commitLocked(force bool) {
	if p.revoked || p.c.crashed.Load() || p.next < 0 {
		return
	}
	for len(p.pending) > 0 && p.done[p.pending[0]] {
		delete(p.done, p.pending[0])
		p.pending = p.pending[1:]
	}
	offset := p.next
	if len(p.pending) > 0 {
		offset = p.pending[0]
	}
	var done []int64
	for _, o := range p.pending {
		if p.done[o] {
			done = append(done, o)
		}
	}
	for o := range p.prevDone { // stored by the previous owner, not fetched yet: still done
		if o >= offset {
			done = append(done, o)
		}
	}
	slices.Sort(done)
	meta := commitMetadata(offset, max(p.handed, offset), done, p.c.listLimit)
	if !force && offset == p.committed && meta == p.lastMeta {
		return
	}
	q := p.c.q
	gen := p.g.gen
	ctx, cancel := context.WithTimeout(context.Background(), q.cfg.CommitTimeout)
	defer cancel()
	resp, err := q.client.OffsetCommit(ctx, &kafka.OffsetCommitRequest{GroupID: q.cfg.Group, GenerationID: int(gen.ID), MemberID: gen.MemberID,
		Topics: map[string][]kafka.OffsetCommit{q.cfg.Topic: {{Partition: p.id, Offset: offset, Metadata: meta}}}})
	if err == nil {
		for _, r := range resp.Topics[q.cfg.Topic] {
			if r.Error != nil {
				err = r.Error
			}
		}
	}
	if err != nil {
		q.log.Warn("kafka: commit failed; the exchanges above the last commit will be delivered again", "partition", p.id, "offset", offset, "err", err)
		return
	}
	p.committed, p.lastMeta = offset, meta
}
