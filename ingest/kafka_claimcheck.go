package ingest

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
)

// The claim-check. A copy whose message would exceed the topic's limit
// (max.message.bytes, read from the brokers) is cut into chunks of one
// message each, produced together with the same key (the request id: the
// same partition, in order). Each chunk carries in its headers the copy's
// claim-check id, its place ("2/6"), the whole copy's size in bytes and its
// SHA-256; the consumer of the partition gathers the chunks, checks size and
// hash, and hands out the copy once; the offsets of all its chunks are
// committed together when the copy is stored.
//
// Chunking was chosen over a side store because the tap role has no store:
// the brokers the tap already writes to are the one place both sides reach,
// with the same durability (acks=all) and the same ordering per key. Limits:
// a copy of at most ingest.kafka.max_copy_bytes (32 MiB), incomplete copies
// held within ingest.kafka.reassembly_bytes (128 MiB) per worker process and
// for ingest.kafka.reassembly_timeout (1 minute) after their first chunk;
// a set over a bound, timed out, or whose size or hash does not match is
// dropped and counted (Dropped "kafka_incomplete", "kafka_corrupt") and logged
// with its request id.
const (
	headerCopyID = "conductor-shadow-copy-id"
	headerPart   = "conductor-shadow-part" // "i/n", 1-based
	headerSize   = "conductor-shadow-size" // bytes of the whole copy
	headerSHA256 = "conductor-shadow-sha256"
)

// Dropped reasons of claim-check copies a shadow worker could not rebuild.
const (
	DropKafkaIncomplete = "kafka_incomplete"
	DropKafkaCorrupt    = "kafka_corrupt"
)

// copyEncodeError is an exchange that could not be encoded as JSON.
type copyEncodeError struct {
	id  string
	err error
}

func (e *copyEncodeError) Error() string {
	return fmt.Sprintf("ingest: kafka: encode %s: %v", e.id, e.err)
}
func (e *copyEncodeError) Unwrap() error { return e.err }

// messageSize is an upper bound of kafka-go's size estimate of m (the one its
// Writer checks against BatchBytes): 22 bytes of framing, key, value, and each
// header with 5-byte lengths.
func messageSize(m kafka.Message) int64 {
	n := int64(22 + len(m.Key) + len(m.Value) + 5)
	for _, h := range m.Headers {
		n += int64(10 + len(h.Key) + len(h.Value))
	}
	return n
}

// encodeCopy encodes ex for the topic: one message when it fits the batch
// room of limit, else the claim-check chunks under copyID (a new one when
// empty). A copy above maxCopy, or one a limit too small cannot chunk, is
// ErrCopyTooLarge.
func encodeCopy(ex Exchange, copyID string, limit, maxCopy int64) (encodedOp, error) {
	ex.SchemaVersion = SchemaVersion
	b, err := json.Marshal(ex)
	if err != nil {
		return encodedOp{}, &copyEncodeError{id: ex.RequestID, err: err}
	}
	if int64(len(b)) > maxCopy {
		return encodedOp{}, fmt.Errorf("%w: %s is %d bytes, more than ingest.kafka.max_copy_bytes (%d)", ErrCopyTooLarge, ex.RequestID, len(b), maxCopy)
	}
	key := []byte(ex.RequestID)
	one := kafka.Message{Key: key, Value: b}
	room := batchBytesFor(limit)
	if messageSize(one) <= room {
		return encodedOp{msgs: []kafka.Message{one}, size: len(b)}, nil
	}
	if copyID == "" {
		copyID = newClaimCheckID()
	}
	sum := sha256.Sum256(b)
	headers := func(i, n int) []kafka.Header {
		return []kafka.Header{
			{Key: headerCopyID, Value: []byte(copyID)},
			{Key: headerPart, Value: []byte(strconv.Itoa(i) + "/" + strconv.Itoa(n))},
			{Key: headerSize, Value: []byte(strconv.Itoa(len(b)))},
			{Key: headerSHA256, Value: []byte(hex.EncodeToString(sum[:]))},
		}
	}
	// The widest headers a chunk can carry: part numbers of 7 digits.
	chunk := room - messageSize(kafka.Message{Key: key, Headers: headers(9999999, 9999999)})
	if chunk < 1024 {
		return encodedOp{}, fmt.Errorf("%w: the topic's limit of %d bytes leaves no room for a chunk of %s", ErrCopyTooLarge, limit, ex.RequestID)
	}
	n := int((int64(len(b)) + chunk - 1) / chunk)
	msgs := make([]kafka.Message, 0, n)
	for i := range n {
		lo, hi := int64(i)*chunk, min(int64(i+1)*chunk, int64(len(b)))
		msgs = append(msgs, kafka.Message{Key: key, Value: b[lo:hi], Headers: headers(i+1, n)})
	}
	return encodedOp{msgs: msgs, copyID: copyID, size: len(b)}, nil
}

// newClaimCheckID is a claim-check set's id: 16 random bytes as hex.
func newClaimCheckID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// claimPart is the claim-check headers of one chunk.
type claimPart struct {
	copyID       string
	index, count int // 1-based place, number of chunks
	size         int64
	sha256       string
}

// parseClaimPart reads m's claim-check headers; ok is false for a message
// that is a whole copy (no claim-check id), err set for one whose headers are
// malformed.
func parseClaimPart(m kafka.Message) (p claimPart, ok bool, err error) {
	var part, size string
	for _, h := range m.Headers {
		switch h.Key {
		case headerCopyID:
			p.copyID = string(h.Value)
		case headerPart:
			part = string(h.Value)
		case headerSize:
			size = string(h.Value)
		case headerSHA256:
			p.sha256 = string(h.Value)
		}
	}
	if p.copyID == "" {
		return claimPart{}, false, nil
	}
	i, n, found := strings.Cut(part, "/")
	p.index, err = strconv.Atoi(i)
	if err == nil {
		p.count, err = strconv.Atoi(n)
	}
	if err == nil {
		p.size, err = strconv.ParseInt(size, 10, 64)
	}
	if err != nil || !found || p.count < 1 || p.index < 1 || p.index > p.count || p.size < 0 || len(p.sha256) != 64 {
		return p, true, fmt.Errorf("malformed claim-check headers (part %q, size %q, sha256 %q)", part, size, p.sha256)
	}
	return p, true, nil
}

// partialSet is a claim-check copy being gathered on one partition.
type partialSet struct {
	requestID string
	head      claimPart // the first chunk's headers; the others must agree
	parts     [][]byte  // by index-1; nil while missing
	got       int
	bytes     int64   // received so far
	offsets   []int64 // every chunk's offset, duplicates of a re-sent chunk too
	started   time.Time
}

func newPartialSet(requestID string, p claimPart, now time.Time) *partialSet {
	return &partialSet{requestID: requestID, head: p, parts: make([][]byte, p.count), started: now}
}

// add keeps one chunk (a chunk sent twice, as a retried produce does, is kept
// once); complete is true once every chunk is there.
func (s *partialSet) add(p claimPart, value []byte, offset int64) (complete bool, err error) {
	s.offsets = append(s.offsets, offset)
	if p.count != s.head.count || p.size != s.head.size || p.sha256 != s.head.sha256 {
		return false, fmt.Errorf("chunk %d/%d (size %d) disagrees with the first chunk's %d chunks of %d bytes", p.index, p.count, p.size, s.head.count, s.head.size)
	}
	if s.parts[p.index-1] == nil {
		s.parts[p.index-1] = bytes.Clone(value)
		s.got++
		s.bytes += int64(len(value))
	}
	if s.bytes > s.head.size {
		return false, fmt.Errorf("chunks hold %d bytes, more than the %d announced", s.bytes, s.head.size)
	}
	return s.got == len(s.parts), nil
}

// assemble joins the chunks and checks the announced size and SHA-256.
func (s *partialSet) assemble() ([]byte, error) {
	b := bytes.Join(s.parts, nil)
	if int64(len(b)) != s.head.size {
		return nil, fmt.Errorf("rebuilt %d bytes, %d announced", len(b), s.head.size)
	}
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != s.head.sha256 {
		return nil, fmt.Errorf("rebuilt copy's SHA-256 %s differs from the announced %s", got, s.head.sha256)
	}
	return b, nil
}
