package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/conductor-shadow/conductor-shadow/store/internal/chdb"
)

// embedded is the chDB transport: the ClickHouse engine loaded from libchdb.so
// into this process, data in a local folder. The engine holds one connection per
// process; every embedded store on the same folder shares it, and calls are
// serialized: a caller waits for the engine until its context ends. A
// statement cannot be interrupted once handed to the engine, which is why the
// SQL console never runs here but in a worker process of its own
// (console_worker.go).
type embedded struct {
	ref     *chdb.Ref
	db      string // quoted database: Query resolves unqualified names in it
	scratch *insertScratch
}

func openEmbedded(path, db string, nice int) (*embedded, error) {
	ref, err := chdb.OpenWith(path, chdb.Options{Nice: nice})
	if err != nil {
		if errors.Is(err, chdb.ErrLibraryMissing) {
			return nil, fmt.Errorf("%w: %v", ErrEngineMissing, err)
		}
		return nil, fmt.Errorf("store: open embedded engine: %w", err)
	}
	scratch, err := newInsertScratch(ref.Path())
	if err != nil {
		ref.Close()
		return nil, err
	}
	return &embedded{ref: ref, db: db, scratch: scratch}, nil
}

// run binds params with SET param_<name> and runs sql, in one locked call.
func (e *embedded) run(ctx context.Context, sql, format string, params Params) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if strings.IndexByte(sql, 0) >= 0 {
		return nil, errors.New("statement contains a NUL byte")
	}
	return e.ref.QueryAfter(ctx, setParams(params), sql, format)
}

func (e *embedded) exec(ctx context.Context, sql string, params Params) error {
	_, err := e.run(ctx, sql, "TabSeparated", params)
	return err
}

// insert writes rows as one INSERT … FROM INFILE … FORMAT
// RowBinaryWithNamesAndTypes (rowbinary.go): the rows go to a private scratch
// file in the data folder that the engine reads and the call removes, so
// the engine parses no text and string bytes stay exact.
func (e *embedded) insert(ctx context.Context, db, table string, columns []string, rows any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return e.scratch.insert(ctx, e.ref, db, table, columns, rows)
}

// stageStrings implements stringStager: one value per line of a TSV file
// (escaped as parameters are, escapeParam), read by file().
func (e *embedded) stageStrings(vs []string) (string, func(), error) {
	var b []byte
	for _, v := range vs {
		b = append(append(b, escapeParam(v)...), '\n')
	}
	path, err := e.scratch.stage(b, ".tsv")
	if err != nil {
		return "", nil, err
	}
	return fmt.Sprintf("(SELECT v FROM file(%s, 'TSV', 'v String'))", quoteString(path)), func() { os.Remove(path) }, nil
}

func (e *embedded) queryJSON(ctx context.Context, sql string, params Params) ([][]byte, error) {
	out, err := e.run(ctx, sql, "JSONEachRow", params)
	if err != nil {
		return nil, err
	}
	return splitLines(out), nil
}

func (e *embedded) queryText(ctx context.Context, sql string) (QueryResult, error) {
	if err := ctx.Err(); err != nil {
		return QueryResult{}, err
	}
	if strings.IndexByte(sql, 0) >= 0 {
		return QueryResult{}, errors.New("statement contains a NUL byte")
	}
	out, err := e.ref.QueryAfter(ctx, []string{"USE " + e.db}, sql, "TabSeparatedWithNames")
	if err != nil {
		return QueryResult{}, err
	}
	return parseTSVWithNames(out), nil
}

func (e *embedded) close() error {
	e.ref.Close()
	return nil
}

// closeWithin releases the store's reference on the engine; the last one
// closes the engine, giving up at ctx's end on a statement still inside it
// (an error wrapping chdb.ErrAbandoned that names it).
func (e *embedded) closeWithin(ctx context.Context) error {
	return e.ref.CloseContext(ctx)
}

// parseTSVWithNames parses ClickHouse TabSeparatedWithNames output: the first
// line holds the column names; values are unescaped (\t, \n, \\ …).
func parseTSVWithNames(b []byte) QueryResult {
	res := QueryResult{Columns: []string{}, Rows: [][]string{}}
	b = bytes.TrimSuffix(b, []byte{'\n'})
	if len(b) == 0 {
		return res
	}
	for i, line := range bytes.Split(b, []byte{'\n'}) {
		var vals []string
		for _, f := range bytes.Split(line, []byte{'\t'}) {
			vals = append(vals, unescapeTSV(f))
		}
		if i == 0 {
			res.Columns = vals
			continue
		}
		res.Rows = append(res.Rows, vals)
	}
	return res
}

func unescapeTSV(f []byte) string {
	if bytes.IndexByte(f, '\\') < 0 {
		return string(f)
	}
	out := make([]byte, 0, len(f))
	for i := 0; i < len(f); i++ {
		if f[i] != '\\' || i+1 == len(f) {
			out = append(out, f[i])
			continue
		}
		i++
		switch c := f[i]; c {
		case 'n':
			out = append(out, '\n')
		case 't':
			out = append(out, '\t')
		case 'r':
			out = append(out, '\r')
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case '0':
			out = append(out, 0)
		case 'N': // \N is NULL; render it as ClickHouse does
			out = append(out, '\\', 'N')
		default:
			out = append(out, c)
		}
	}
	return string(out)
}
