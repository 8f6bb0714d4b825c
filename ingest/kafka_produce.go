package ingest

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/segmentio/kafka-go"

	"github.com/conductor-shadow/conductor-shadow/store/dataflow"
)

// kafkaProducer is the publish loop's writer: one segmentio/kafka-go Writer
// whose batches fit the topic's message limit, remade when the limit changes.
// Only the publish loop uses it.
type kafkaProducer struct {
	q      *KafkaQueue
	writer *kafka.Writer
	limit  int64 // the limit writer was made for
}

// batchOverhead is what a produce batch may hold besides its records'
// estimated sizes: the record batch header (61 bytes) and the difference
// between kafka-go's size estimate of a record and its v2 encoding (a few
// bytes each, for up to 100 records of a batch).
const batchOverhead = 2048

// batchBytesFor is the largest produce batch (kafka-go's estimate) that stays
// within a message limit: Kafka checks max.message.bytes against a whole
// record batch, so a batch of small copies beside a large one must fit too.
func batchBytesFor(limit int64) int64 { return max(limit-batchOverhead, 1024) }

func (p *kafkaProducer) writerFor(limit int64) *kafka.Writer {
	if p.writer != nil && p.limit == limit {
		return p.writer
	}
	p.close()
	p.limit = limit
	p.writer = &kafka.Writer{
		Transport:              p.q.transport,
		Addr:                   kafka.TCP(p.q.cfg.Brokers...),
		Topic:                  p.q.cfg.Topic,
		Balancer:               &kafka.Hash{},
		BatchTimeout:           p.q.cfg.BatchTimeout,
		BatchBytes:             batchBytesFor(limit),
		RequiredAcks:           kafka.RequireAll,
		AllowAutoTopicCreation: true,
	}
	return p.writer
}

func (p *kafkaProducer) close() {
	if p.writer != nil {
		if err := p.writer.Close(); err != nil {
			p.q.log.Warn("kafka: close producer", "err", err)
		}
		p.writer = nil
	}
}

// encodedOp is one op's messages: one, or the chunks of its claim-check.
type encodedOp struct {
	op     kafkaOp
	msgs   []kafka.Message
	copyID string // the claim-check's id, kept when the op is sent again
	size   int    // bytes of the Exchange JSON
}

// publish writes ops and tells each its own outcome: a message refused never
// sinks another one of the batch. A copy refused for its size is written again
// alone, claim-checked at the limit read again from the brokers (unless it was
// alone already and the limit did not change); refused again, it is
// ErrCopyTooLarge.
func (p *kafkaProducer) publish(ctx context.Context, ops []kafkaOp) {
	q := p.q
	limit := q.limit.Load()
	encs := make([]encodedOp, 0, len(ops))
	for _, op := range ops {
		e, err := encodeCopy(op.ex, "", limit, q.cfg.MaxCopyBytes)
		if err != nil {
			q.refuse(op, err)
			continue
		}
		e.op = op
		encs = append(encs, e)
	}
	if len(encs) == 0 {
		return
	}
	errs := p.write(ctx, encs, limit)
	var again []encodedOp
	for i, e := range encs {
		switch err := errs[i]; {
		case err == nil:
			q.published(e)
		case isSizeRefusal(err) && !errors.Is(err, ErrCopyTooLarge):
			again = append(again, e)
		default:
			q.refuse(e.op, err)
		}
	}
	if len(again) == 0 {
		return
	}
	// The limit may have changed since the last ping: read it before the retry.
	if brokers, err := q.pingBrokers(ctx); err == nil {
		q.refreshLimit(ctx, brokers)
	}
	was := limit
	limit = q.limit.Load()
	for _, e := range again {
		if len(encs) == 1 && limit == was { // refused alone at the limit it was cut for
			q.refuse(e.op, errs[0])
			continue
		}
		e2, err := encodeCopy(e.op.ex, e.copyID, limit, q.cfg.MaxCopyBytes)
		if err == nil {
			e2.op = e.op
			err = p.write(ctx, []encodedOp{e2}, limit)[0]
			e = e2
		}
		if err == nil {
			q.published(e)
			continue
		}
		q.refuse(e.op, err)
	}
}

// write sends every message of encs in one WriteMessages call and returns each
// op's error: the first error of its messages (kafka.WriteErrors), or the
// call's error for all. Connectivity errors turn readiness; size refusals
// do not; any success clears it.
func (p *kafkaProducer) write(ctx context.Context, encs []encodedOp, limit int64) []error {
	var msgs []kafka.Message
	for _, e := range encs {
		msgs = append(msgs, e.msgs...)
	}
	err := p.writerFor(limit).WriteMessages(ctx, msgs...)
	flow := dataflow.Delta{Requests: 1}
	defer func() { p.q.countFlow(flow) }()
	out := make([]error, len(encs))
	if err == nil {
		for _, e := range encs {
			addAcked(&flow, e, e.msgs)
		}
		p.q.failing.Note(nil)
		return out
	}
	var werrs kafka.WriteErrors
	perMessage := errors.As(err, &werrs) && len(werrs) == len(msgs)
	ok := false
	i := 0
	for j, e := range encs {
		var acked []kafka.Message
		for _, m := range e.msgs {
			merr := err
			if perMessage {
				merr = werrs[i]
			}
			if merr != nil && out[j] == nil {
				out[j] = merr
			}
			if merr == nil {
				acked = append(acked, m)
			} else {
				flow.FailedItems++
			}
			i++
		}
		addAcked(&flow, e, acked)
		if out[j] == nil {
			ok = true
		}
	}
	var down error
	for _, e := range out {
		if e != nil && !isSizeRefusal(e) {
			down = e
			break
		}
	}
	switch {
	case down != nil && ctx.Err() == nil:
		p.q.failing.Note(down)
	case ok:
		p.q.failing.Note(nil)
	}
	return out
}

// addAcked adds to d the messages of e the brokers acknowledged (all of e's,
// or the chunks of a claim-check that got through) with their key and value
// bytes, and e's pseudonymized PII kinds (MetadataPIIRules) once.
func addAcked(d *dataflow.Delta, e encodedOp, msgs []kafka.Message) {
	if len(msgs) == 0 {
		return
	}
	for _, m := range msgs {
		d.Items++
		d.ContentItems++
		d.SentBytes += int64(len(m.Key) + len(m.Value))
	}
	if rules := e.op.ex.Metadata[MetadataPIIRules]; rules != "" {
		d.PII = append(d.PII, strings.Split(rules, ",")...)
	}
}

// countFlow adds one produce call to the flow meter, if any (UseFlowMeter):
// kind kafka, recipient the topic, host the brokers.
func (q *KafkaQueue) countFlow(d dataflow.Delta) {
	if m := q.flows.Load(); m != nil {
		m.Add(dataflow.KindKafka, q.cfg.Topic, BrokersHost(q.cfg.Brokers), d)
	}
}

// isSizeRefusal reports whether err refuses a message for its size (the
// broker's MESSAGE_TOO_LARGE or RECORD_LIST_TOO_LARGE, or kafka-go's own check
// of BatchBytes) rather than for want of a broker.
func isSizeRefusal(err error) bool {
	var mtl kafka.MessageTooLargeError
	return errors.Is(err, kafka.MessageSizeTooLarge) || errors.Is(err, kafka.RecordListTooLarge) ||
		errors.As(err, &mtl) || errors.Is(err, ErrCopyTooLarge)
}

// published counts a copy the brokers acknowledged and tells its op.
func (q *KafkaQueue) published(e encodedOp) {
	if len(e.msgs) > 1 {
		q.stats.kafka.claimChecked.Add(1)
	}
	e.op.done(nil)
}

// refuse tells op why it was not published: ErrCopyTooLarge for a size
// refusal (logged here with the request id: the tap answers 413 and counts
// it), ErrKafkaUnavailable otherwise.
func (q *KafkaQueue) refuse(op kafkaOp, err error) {
	if isSizeRefusal(err) {
		if !errors.Is(err, ErrCopyTooLarge) {
			err = fmt.Errorf("%w: the brokers refused it at a limit of %d bytes: %w", ErrCopyTooLarge, q.limit.Load(), err)
		}
		q.log.Warn("kafka: copy refused for its size", "request_id", op.ex.RequestID, "reason", ReasonTooLarge, "err", err)
		op.done(err)
		return
	}
	var encErr *copyEncodeError
	if errors.As(err, &encErr) {
		q.stats.failed.Add(1)
		op.done(err)
		return
	}
	op.done(fmt.Errorf("%w: %w", ErrKafkaUnavailable, err))
}
