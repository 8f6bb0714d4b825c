package ingest

import (
	"log/slog"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// lossLog logs lost or refused records at most once per 5 s per reason, with the
// count since the last line, so a storm of failures is visible without flooding
// the log. Safe for concurrent use.
type lossLog struct {
	logger *slog.Logger

	mu      sync.Mutex
	reasons map[string]*lossReason
}

type lossReason struct {
	every  rate.Sometimes
	missed int64 // records lost since the last line
}

func newLossLog(log *slog.Logger) *lossLog {
	return &lossLog{logger: log, reasons: map[string]*lossReason{}}
}

// log records n records lost for reason (n may be 0 for a failure that lost
// nothing yet) and writes a line when the reason's interval has passed.
func (l *lossLog) log(msg, reason string, err error, n int) {
	l.mu.Lock()
	r := l.reasons[reason]
	if r == nil {
		r = &lossReason{every: rate.Sometimes{Interval: 5 * time.Second}}
		l.reasons[reason] = r
	}
	r.missed += int64(n)
	var count int64
	fire := false
	r.every.Do(func() {
		fire, count, r.missed = true, r.missed, 0
	})
	l.mu.Unlock()
	if fire {
		l.logger.Warn(msg, "reason", reason, "records", count, "err", err)
	}
}

// LoggedLossError is the cause the tap attaches (gin's c.Error) to a 503 answer
// whose loss it has already counted and logged, rate-limited, by reason: a
// request logger finds the reason there and need not log the answer again.
type LoggedLossError struct {
	Reason string // a Reason* constant, e.g. "kafka_unavailable"
	Detail string // the error the copy was dropped for
}

func (e *LoggedLossError) Error() string {
	return "tap: copy dropped (" + e.Reason + "): " + e.Detail
}
