package store

import (
	"bytes"
	"context"
	"fmt"
)

// transport runs SQL text on one engine. Both transports get exactly the same
// statements; only the wire differs.
type transport interface {
	// exec runs one statement that returns no rows (DDL, INSERT … FORMAT JSONEachRow
	// with the rows inline).
	exec(ctx context.Context, sql string) error
	// queryJSON runs one SELECT and returns its rows as JSON objects (one per
	// element, keys are the result's column names), string bytes kept exactly.
	queryJSON(ctx context.Context, sql string) ([][]byte, error)
	// queryText runs one read statement and renders each value as text
	// (ClickHouse's TSV rendering, unescaped).
	queryText(ctx context.Context, sql string) (QueryResult, error)
	// close releases the connection. Safe to call twice.
	close() error
}

// statementClassifier is a transport whose engine can say, without running a
// text, how many statements it holds and whether they only read.
type statementClassifier interface {
	// checkOneRead returns nil when sql is exactly one read-only statement by
	// the engine's parser, an error wrapping ErrReadOnly otherwise.
	checkOneRead(ctx context.Context, sql string) error
}

// queryRows runs sql and decodes each row into T by json tags.
func queryRows[T any](ctx context.Context, t transport, sql string) ([]T, error) {
	lines, err := t.queryJSON(ctx, sql)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(lines))
	for _, l := range lines {
		v, err := decodeRow[T](l)
		if err != nil {
			return nil, fmt.Errorf("decode row: %w", err)
		}
		out = append(out, v)
	}
	return out, nil
}

// splitLines splits JSONEachRow output into non-empty lines.
func splitLines(b []byte) [][]byte {
	var out [][]byte
	for _, l := range bytes.Split(b, []byte{'\n'}) {
		if len(bytes.TrimSpace(l)) > 0 {
			out = append(out, l)
		}
	}
	return out
}
