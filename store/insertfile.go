package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/conductor-shadow/conductor-shadow/store/internal/chdb"
)

// scratchDir is the folder of the data folder where the embedded store
// stages the rows of one INSERT for the engine to read (FROM INFILE).
const scratchDir = "insert-scratch"

// insertScratch stages INSERT rows, and the sets of a lookup
// (stageStrings), as files the engine reads. Each file lives from its
// encoding to the end of its statement; files left by a crash are
// removed when the store opens. The folder is private (0700, files 0600):
// the rows are stored text. Safe for concurrent use.
type insertScratch struct {
	dir  string
	pool sync.Pool // *[]byte encode buffers

	mu    sync.Mutex
	types map[string]map[string]string // "db.table" → column → ClickHouse type
}

// newInsertScratch prepares dataDir's scratch folder, emptied of what an
// earlier process left (files are named by the pid that staged them; this
// process's are another store's INSERTs in flight).
func newInsertScratch(dataDir string) (*insertScratch, error) {
	dir := filepath.Join(dataDir, scratchDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("store: insert scratch folder: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("store: insert scratch folder: %w", err)
	}
	left, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("store: insert scratch folder: %w", err)
	}
	own := strconv.Itoa(os.Getpid()) + "-"
	for _, f := range left {
		if strings.HasPrefix(f.Name(), own) {
			continue // another store of this process is inserting it
		}
		if err := os.Remove(filepath.Join(dir, f.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("store: insert scratch folder: remove %s: %w", f.Name(), err)
		}
	}
	return &insertScratch{dir: dir, types: map[string]map[string]string{}}, nil
}

// columnTypes returns db.table's column types, read from the engine once per
// table (the migrations ran before the first INSERT; a later schema change
// comes with a restart).
func (s *insertScratch) columnTypes(ctx context.Context, ref *chdb.Ref, db, table string) (map[string]string, error) {
	key := db + "." + table
	s.mu.Lock()
	t, ok := s.types[key]
	s.mu.Unlock()
	if ok {
		return t, nil
	}
	out, err := ref.Query(ctx, fmt.Sprintf("SELECT name, type FROM system.columns WHERE database = %s AND table = %s",
		quoteString(unquoteIdent(db)), quoteString(table)), "TabSeparated")
	if err != nil {
		return nil, fmt.Errorf("column types of %s: %w", key, err)
	}
	t = map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if name, typ, ok := strings.Cut(line, "\t"); ok {
			t[unescapeTSV([]byte(name))] = unescapeTSV([]byte(typ))
		}
	}
	if len(t) == 0 {
		return nil, fmt.Errorf("column types of %s: no such table", key)
	}
	s.mu.Lock()
	s.types[key] = t
	s.mu.Unlock()
	return t, nil
}

// insert encodes rows as RowBinaryWithNamesAndTypes into a scratch file and
// runs one INSERT INTO db.table (columns) FROM INFILE of it, with the store's
// insert setting (insertSetting).
func (s *insertScratch) insert(ctx context.Context, ref *chdb.Ref, db, table string, columns []string, rows any) error {
	bp, _ := s.pool.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	defer s.pool.Put(bp)
	types, err := s.columnTypes(ctx, ref, db, table)
	if err != nil {
		return err
	}
	b, err := encodeRowBinary((*bp)[:0], rows, types)
	if err != nil {
		return err
	}
	*bp = b
	path, err := s.stage(b, ".rowbinary")
	if err != nil {
		return err
	}
	defer os.Remove(path)
	quoted := make([]string, len(columns))
	for i, c := range columns {
		quoted[i] = quoteIdent(c)
	}
	sql := fmt.Sprintf("INSERT INTO %s.%s (%s) FROM INFILE %s SETTINGS %s = %d FORMAT RowBinaryWithNamesAndTypes",
		db, table, strings.Join(quoted, ", "), quoteString(path), insertSetting, insertSettingValue)
	_, err = ref.Query(ctx, sql, "TabSeparated")
	return err
}

// stage writes b to a new scratch file named …ext and returns its path; the
// caller removes it. Errors name the scratch folder's failure.
func (s *insertScratch) stage(b []byte, ext string) (string, error) {
	// A name no other statement has: every store of the process (one per
	// database, or per role) stages into the same folder, so a counter of
	// its own would repeat another store's names and its INSERT could read
	// the other's rows into the wrong table.
	f, err := os.CreateTemp(s.dir, strconv.Itoa(os.Getpid())+"-*"+ext)
	if err != nil {
		return "", fmt.Errorf("stage a scratch file: %w", err)
	}
	path := f.Name()
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(path)
		return "", fmt.Errorf("stage a scratch file: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return "", fmt.Errorf("stage a scratch file: %w", err)
	}
	return path, nil
}

// unquoteIdent undoes quoteIdent.
func unquoteIdent(q string) string { return strings.TrimSuffix(strings.TrimPrefix(q, "`"), "`") }
