package store

import (
	"bytes"
	"context"
	"fmt"
)

// transport runs SQL text on one engine. Both transports get exactly the same
// statements; only the wire differs.
type transport interface {
	// exec runs one statement that returns no rows (DDL, ALTER … DELETE), with
	// its {name:Type} placeholders bound to params (nil: none).
	exec(ctx context.Context, sql string, params Params) error
	// insert writes rows (a slice of a model struct) into db.table's columns
	// (the struct's json tags, which equal its ch tags): a native batch on the
	// server, one INSERT … FROM INFILE … FORMAT RowBinaryWithNamesAndTypes on
	// the embedded engine (insertfile.go).
	insert(ctx context.Context, db, table string, columns []string, rows any) error
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

// stringStager is a transport whose engine reads a set of strings from a
// scratch file (the embedded engine).
type stringStager interface {
	// stageStrings writes vs to a scratch file and returns a set of them for
	// "x IN <set>" (a subquery reading the file), and done, which removes
	// the file, to call once the statement ran.
	stageStrings(vs []string) (set string, done func(), err error)
}

// jsonQuerier is a transport that answers reads as JSONEachRow (the embedded
// engine).
type jsonQuerier interface {
	// queryJSON runs one SELECT with its placeholders bound to params and
	// returns its rows as JSON objects (one per element, keys are the result's
	// column names), string bytes kept exactly.
	queryJSON(ctx context.Context, sql string, params Params) ([][]byte, error)
}

// queryRows runs sql with its placeholders bound to params (at most one map)
// and decodes each row into T by json tags.
func queryRows[T any](ctx context.Context, t transport, sql string, params ...Params) ([]T, error) {
	var p Params
	if len(params) > 0 {
		p = params[0]
	}
	var lines [][]byte
	switch tt := t.(type) {
	case *server: // typed scans over the native protocol
		return scanRows[T](ctx, tt, sql, p)
	case jsonQuerier: // the embedded engine: JSONEachRow, string bytes kept exactly (rowcodec.go)
		var err error
		if lines, err = tt.queryJSON(ctx, sql, p); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("store: unknown transport %T", t)
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
