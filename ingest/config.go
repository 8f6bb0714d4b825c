package ingest

import (
	"errors"
	"fmt"
	"time"
)

// Config sets the tap's limits and the shadow workers that drain its queue.
type Config struct {
	// MaxBodyBytes caps one POST /v1/tap body; larger bodies get 413.
	MaxBodyBytes int64 `yaml:"max_body_bytes" env:"MAX_BODY_BYTES"`
	// MaxBatchBytes caps one POST /v1/tap/batch body; larger bodies get 413.
	MaxBatchBytes int64 `yaml:"max_batch_bytes"`
	// MaxBatchItems caps the exchanges of one POST /v1/tap/batch.
	MaxBatchItems int `yaml:"max_batch_items"`
	// QueueSize is how many exchanges wait for a shadow worker; when full, new copies
	// are dropped and counted (reason "queue_full"), never waited for.
	QueueSize int `yaml:"queue_size" env:"QUEUE_SIZE"`
	// AcceptTimeout bounds how long POST /v1/tap waits for the copy to be durable
	// (stored, or acknowledged by Kafka) before answering 503 "accept_timeout".
	AcceptTimeout time.Duration `yaml:"accept_timeout"`
	// AcceptBatch is the most copies one store commit of the tap writes at once.
	AcceptBatch int `yaml:"accept_batch"`
	// AcceptLinger is the quiet gap that closes a store commit's group: no copy
	// came for this long (or for a quarter of the last commit's time, if
	// longer; the group waits at most the last commit's time, within
	// accept_timeout / 8). The price of durability on each 202, in exchange
	// for fewer, larger INSERTs.
	AcceptLinger time.Duration `yaml:"accept_linger"`
	// Workers is how many exchanges are shadowed at once.
	Workers int `yaml:"workers" env:"WORKERS"`
	// DedupWindow is how many recent request ids are remembered to answer a
	// re-sent copy as a duplicate without queueing it again.
	DedupWindow int `yaml:"dedup_window" env:"DEDUP_WINDOW"`
	// MaxMessages caps the chat messages of one request.
	MaxMessages int `yaml:"max_messages" env:"MAX_MESSAGES"`
	// MaxUnfinishedBodyBytes caps the request bodies the tap and the mirroring
	// proxy hold in memory at once while they arrive (see BodyBudget): beyond
	// it the tap answers 503 "body_budget" and the proxy forwards without
	// copying, both counted. Must exceed max_batch_bytes and
	// proxy.max_capture_bytes, so that every body allowed alone fits.
	MaxUnfinishedBodyBytes int64 `yaml:"max_unfinished_body_bytes"`
	// ShadowIncumbentErrors also shadows copies whose incumbent did not answer
	// 2xx (a 404, 401 or 429: often a request that never reached a model).
	// Off: such copies are stored with the incumbent's failure but no candidate
	// runs, counted in stored_only ("incumbent_not_2xx").
	ShadowIncumbentErrors bool `yaml:"shadow_incumbent_errors"`
	// PII is the pseudonymization applied before a copy is queued.
	PII PIIConfig `yaml:"pii"`
	// Sampling decides which copies are shadowed.
	Sampling SamplingConfig `yaml:"sampling"`
	// Proxy is the mirroring proxy in front of the incumbent; off without an
	// incumbent URL.
	Proxy ProxyConfig `yaml:"proxy"`
	// Kafka carries copies between the tap and the shadow workers when brokers are
	// set; otherwise the in-process queue does.
	Kafka KafkaConfig `yaml:"kafka"`
	// Admission is the adaptive limit on concurrent shadow runs and the shedding
	// of proxy copies while production is under pressure.
	Admission AdmissionConfig `yaml:"admission"`
	// Record sizes the recorder of exchanges not shadowed (shed, sampled out,
	// too large, ...): every exchange forwarded leaves a row.
	Record RecordConfig `yaml:"record"`
	// Segments configures the segment columns computed for every stored request.
	Segments SegmentsConfig `yaml:"segments"`
}

// SegmentsConfig configures ingest/segment.
type SegmentsConfig struct {
	// VocabularySets are glob patterns of further regression-set JSONL files
	// whose words make the novelty vocabulary, beside the sets the suite and
	// the schedules use. A pattern that matches nothing is an error at start.
	VocabularySets []string `yaml:"vocabulary_sets"`
}

// NewDefaultConfig returns limits that suit one process on a small machine:
// 4 MiB bodies, 32 MiB batches of at most 1,000, 64 MiB of bodies in memory at
// once, 20,000 queued exchanges, copies made durable within 2 s in store commits
// of up to 5,000 gathered for 5 ms (a commit takes every copy that arrived
// while the one before it ran, so the group grows with the rate), 128 shadow workers (worker calls are
// I/O-bound), every PII rule on, every request sampled, copies the incumbent
// did not answer 2xx stored but not shadowed.
func NewDefaultConfig() Config {
	return Config{
		MaxBodyBytes:  4 << 20,
		MaxBatchBytes: 32 << 20,
		MaxBatchItems: 1000,
		QueueSize:     20000,
		AcceptTimeout: 2 * time.Second,
		AcceptBatch:   5000,
		AcceptLinger:  5 * time.Millisecond,
		Workers:       128,
		DedupWindow:   100000,
		MaxMessages:   256,

		MaxUnfinishedBodyBytes: DefaultMaxUnfinishedBodyBytes,
		PII:                    NewDefaultPIIConfig(),
		Sampling:               SamplingConfig{Rate: 1},
		Proxy:                  NewDefaultProxyConfig(),
		Kafka:                  NewDefaultKafkaConfig(),
		Admission:              NewDefaultAdmissionConfig(),
		Record:                 NewDefaultRecordConfig(),
		Segments:               SegmentsConfig{VocabularySets: []string{}},
	}
}

// Validate reports every invalid field at once.
func (c Config) Validate() error {
	var errs []error
	if c.MaxBodyBytes < 1024 {
		errs = append(errs, fmt.Errorf("ingest: max_body_bytes must be at least 1024, got %d", c.MaxBodyBytes))
	}
	if c.MaxBatchBytes < c.MaxBodyBytes {
		errs = append(errs, fmt.Errorf("ingest: max_batch_bytes (%d) must be at least max_body_bytes (%d)", c.MaxBatchBytes, c.MaxBodyBytes))
	}
	if c.MaxBatchItems < 1 {
		errs = append(errs, fmt.Errorf("ingest: max_batch_items must be at least 1, got %d", c.MaxBatchItems))
	}
	if c.QueueSize < 1 {
		errs = append(errs, fmt.Errorf("ingest: queue_size must be at least 1, got %d", c.QueueSize))
	}
	if c.AcceptTimeout <= 0 {
		errs = append(errs, fmt.Errorf("ingest: accept_timeout must be positive, got %s", c.AcceptTimeout))
	}
	if c.AcceptBatch < 1 {
		errs = append(errs, fmt.Errorf("ingest: accept_batch must be at least 1, got %d", c.AcceptBatch))
	}
	if c.AcceptLinger <= 0 || c.AcceptLinger > time.Second {
		errs = append(errs, fmt.Errorf("ingest: accept_linger must be between 0 (excluded) and 1s, got %s", c.AcceptLinger))
	}
	if c.Workers < 1 || c.Workers > 4096 {
		errs = append(errs, fmt.Errorf("ingest: workers must be between 1 and 4096, got %d", c.Workers))
	}
	if c.DedupWindow < 0 {
		errs = append(errs, fmt.Errorf("ingest: dedup_window must not be negative, got %d", c.DedupWindow))
	}
	if largest := max(c.MaxBatchBytes, c.Proxy.MaxCaptureBytes); c.MaxUnfinishedBodyBytes <= largest {
		errs = append(errs, fmt.Errorf("ingest: max_unfinished_body_bytes (%d) must exceed max_batch_bytes and proxy.max_capture_bytes (%d): a body allowed alone must fit", c.MaxUnfinishedBodyBytes, largest))
	}
	if c.MaxMessages < 1 {
		errs = append(errs, fmt.Errorf("ingest: max_messages must be at least 1, got %d", c.MaxMessages))
	}
	errs = append(errs, c.PII.Validate(), c.Sampling.Validate(), c.Proxy.Validate(), c.Kafka.Validate(), c.Admission.Validate(), c.Record.Validate())
	return errors.Join(errs...)
}
