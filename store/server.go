package store

import (
	"context"
	"fmt"
	"net/url"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// server is the ClickHouse server transport (native protocol, clickhouse-go/v2).
// It runs the same SQL text as the embedded engine, with values bound as query
// parameters; INSERTs go as native batches (PrepareBatch/Append) and reads
// are typed scans into the model structs.
type server struct {
	conn driver.Conn
	once sync.Once
}

// parseServerDSN validates a clickhouse:// DSN and returns the driver options
// and the database named in its path ("" when none).
func parseServerDSN(dsn string) (*clickhouse.Options, string, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return nil, "", fmt.Errorf("store: dsn: %w", err)
	}
	if u.Scheme != "clickhouse" {
		return nil, "", fmt.Errorf("store: dsn %q: scheme must be clickhouse:// (native protocol, e.g. clickhouse://host:9000/shadow)", redactDSN(dsn))
	}
	if u.Host == "" {
		return nil, "", fmt.Errorf("store: dsn %q: missing host:port", redactDSN(dsn))
	}
	opts, err := clickhouse.ParseDSN(dsn)
	if err != nil {
		return nil, "", fmt.Errorf("store: dsn %q: %w", redactDSN(dsn), err)
	}
	return opts, strings.Trim(u.Path, "/"), nil
}

// redactDSN hides the password of a DSN for error messages.
func redactDSN(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.User == nil {
		return dsn
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

func openServer(ctx context.Context, dsn string) (*server, error) {
	opts, _, err := parseServerDSN(dsn)
	if err != nil {
		return nil, err
	}
	conn, err := clickhouse.Open(opts)
	if err != nil {
		return nil, fmt.Errorf("store: connect %s: %w", redactDSN(dsn), err)
	}
	if err := conn.Ping(ctx); err != nil {
		conn.Close()
		return nil, fmt.Errorf("store: ping %s: %w", redactDSN(dsn), err)
	}
	return &server{conn: conn}, nil
}

// withParams binds params as the protocol's query parameters.
func withParams(ctx context.Context, params Params) context.Context {
	if len(params) == 0 {
		return ctx
	}
	return clickhouse.Context(ctx, clickhouse.WithParameters(clickhouse.Parameters(params)))
}

func (s *server) exec(ctx context.Context, sql string, params Params) error {
	return s.conn.Exec(withParams(ctx, params), sql)
}

// insert sends rows as one native batch, with the store's insert setting
// (insertSetting): PrepareBatch on the columns, then
// one Append per row with the row's values in the columns' order (rowValues:
// the model's json tags name the columns, as on the embedded path). The zero
// time is sent as the Unix epoch, as the embedded path stores it.
func (s *server) insert(ctx context.Context, db, table string, columns []string, rows any) error {
	ctx = clickhouse.Context(ctx, clickhouse.WithSettings(clickhouse.Settings{insertSetting: insertSettingValue}))
	batch, err := s.conn.PrepareBatch(ctx, batchInsertSQL(db, table, columns))
	if err != nil {
		return fmt.Errorf("prepare batch: %w", err)
	}
	rv := reflect.ValueOf(rows)
	for i := range rv.Len() {
		if err := batch.Append(rowValues(rv.Index(i))...); err != nil {
			_ = batch.Abort()
			return fmt.Errorf("append row %d: %w", i, err)
		}
	}
	if err := batch.Send(); err != nil {
		return fmt.Errorf("send batch: %w", err)
	}
	return nil
}

// batchInsertSQL is the statement PrepareBatch takes: the columns, no values.
func batchInsertSQL(db, table string, columns []string) string {
	quoted := make([]string, len(columns))
	for i, c := range columns {
		quoted[i] = quoteIdent(c)
	}
	return fmt.Sprintf("INSERT INTO %s.%s (%s)", db, table, strings.Join(quoted, ", "))
}

var epoch = time.Unix(0, 0).UTC()

// rowValues returns the column values of the model struct v in the order of
// its columns (fieldsOf), a zero time.Time as the Unix epoch (DateTime64
// cannot hold year 1; reads turn the epoch back into zero).
func rowValues(v reflect.Value) []any {
	fields := fieldsOf(v.Type())
	out := make([]any, len(fields))
	for i, f := range fields {
		x := v.Field(f.index).Interface()
		if t, ok := x.(time.Time); ok && t.IsZero() {
			x = epoch
		}
		out[i] = x
	}
	return out
}

// scanAll runs sql and returns column names, types and every row's values,
// each scanned into its column's Go type.
func (s *server) scanAll(ctx context.Context, sql string, params Params) ([]string, []driver.ColumnType, [][]any, error) {
	rows, err := s.conn.Query(withParams(ctx, params), sql)
	if err != nil {
		return nil, nil, nil, err
	}
	defer rows.Close()
	types := rows.ColumnTypes()
	var out [][]any
	for rows.Next() {
		ptrs := make([]any, len(types))
		for i, t := range types {
			ptrs[i] = reflect.New(t.ScanType()).Interface()
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, nil, nil, err
		}
		vals := make([]any, len(ptrs))
		for i, p := range ptrs {
			vals[i] = reflect.ValueOf(p).Elem().Interface()
		}
		out = append(out, vals)
	}
	return rows.Columns(), types, out, rows.Err()
}

// scanRows runs sql and fills one T per row: each column is scanned into its
// own Go type over the native protocol, then assigned to the field whose json
// tag names it (numbers converted, NULL as the zero value, the epoch as the
// zero time). Columns without a field are read and left out.
func scanRows[T any](ctx context.Context, s *server, sql string, params Params) ([]T, error) {
	cols, _, rows, err := s.scanAll(ctx, sql, params)
	if err != nil {
		return nil, err
	}
	byName := map[string]field{}
	for _, f := range fieldsOf(reflect.TypeFor[T]()) {
		byName[f.name] = f
	}
	out := make([]T, 0, len(rows))
	for _, r := range rows {
		var v T
		rv := reflect.ValueOf(&v).Elem()
		for i, val := range r {
			f, ok := byName[cols[i]]
			if !ok {
				continue
			}
			if err := assignScanned(rv.Field(f.index), val); err != nil {
				return nil, fmt.Errorf("column %s: %w", cols[i], err)
			}
		}
		out = append(out, v)
	}
	return out, nil
}

// assignScanned sets dst from a value scanned by the driver.
func assignScanned(dst reflect.Value, src any) error {
	sv := reflect.ValueOf(src)
	for sv.IsValid() && (sv.Kind() == reflect.Pointer || sv.Kind() == reflect.Interface) {
		if sv.IsNil() {
			return nil // NULL: the zero value
		}
		sv = sv.Elem()
	}
	if !sv.IsValid() {
		return nil
	}
	if t, ok := sv.Interface().(time.Time); ok {
		if dst.Type() != timeType {
			return fmt.Errorf("cannot put a time into %s", dst.Type())
		}
		if t.Equal(epoch) {
			t = time.Time{}
		} else {
			t = t.UTC()
		}
		dst.Set(reflect.ValueOf(t))
		return nil
	}
	switch dst.Kind() {
	case reflect.String:
		if sv.Kind() != reflect.String {
			return fmt.Errorf("cannot put %s into string", sv.Type())
		}
		dst.SetString(sv.String())
	case reflect.Bool:
		if sv.Kind() != reflect.Bool {
			return fmt.Errorf("cannot put %s into bool", sv.Type())
		}
		dst.SetBool(sv.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		if !sv.CanConvert(dst.Type()) || sv.Kind() == reflect.String || sv.Kind() == reflect.Bool {
			return fmt.Errorf("cannot put %s into %s", sv.Type(), dst.Type())
		}
		dst.Set(sv.Convert(dst.Type()))
	case reflect.Slice:
		if sv.Kind() != reflect.Slice && sv.Kind() != reflect.Array {
			return fmt.Errorf("cannot put %s into %s", sv.Type(), dst.Type())
		}
		if sv.Len() == 0 {
			return nil // empty arrays read back as nil, as on the embedded path
		}
		out := reflect.MakeSlice(dst.Type(), sv.Len(), sv.Len())
		for i := range sv.Len() {
			if err := assignScanned(out.Index(i), sv.Index(i).Interface()); err != nil {
				return err
			}
		}
		dst.Set(out)
	case reflect.Map:
		if sv.Kind() != reflect.Map {
			return fmt.Errorf("cannot put %s into %s", sv.Type(), dst.Type())
		}
		if sv.Len() == 0 {
			return nil
		}
		out := reflect.MakeMapWithSize(dst.Type(), sv.Len())
		it := sv.MapRange()
		for it.Next() {
			k, v := reflect.New(dst.Type().Key()).Elem(), reflect.New(dst.Type().Elem()).Elem()
			if err := assignScanned(k, it.Key().Interface()); err != nil {
				return err
			}
			if err := assignScanned(v, it.Value().Interface()); err != nil {
				return err
			}
			out.SetMapIndex(k, v)
		}
		dst.Set(out)
	default:
		return fmt.Errorf("unsupported field type %s", dst.Type())
	}
	return nil
}

func (s *server) queryText(ctx context.Context, sql string) (QueryResult, error) {
	if id := queryIDFrom(ctx); id != "" { // a console statement: KILL QUERY can name it
		ctx = clickhouse.Context(ctx, clickhouse.WithQueryID(id))
	}
	cols, types, rows, err := s.scanAll(ctx, sql, nil)
	if err != nil {
		return QueryResult{}, err
	}
	res := QueryResult{Columns: cols, Rows: make([][]string, 0, len(rows))}
	for _, r := range rows {
		vals := make([]string, len(r))
		for i, v := range r {
			vals[i] = renderText(reflect.ValueOf(v), types[i].DatabaseTypeName(), false)
		}
		res.Rows = append(res.Rows, vals)
	}
	return res, nil
}

// renderText renders a scanned value as ClickHouse's TSV output would show it
// (unescaped): times by the column's precision, arrays as ['a','b'], maps as
// {'k':'v'}. nested quotes strings as inside arrays and maps.
func renderText(v reflect.Value, dbType string, nested bool) string {
	if !v.IsValid() {
		return `\N`
	}
	if t, ok := v.Interface().(time.Time); ok {
		layout := "2006-01-02 15:04:05"
		switch {
		case strings.HasPrefix(dbType, "Date") && !strings.HasPrefix(dbType, "DateTime"):
			layout = "2006-01-02"
		case strings.HasPrefix(dbType, "DateTime64("):
			if p, err := strconv.Atoi(strings.TrimLeft(strings.SplitN(dbType[len("DateTime64("):], ",", 2)[0], " )")); err == nil && p > 0 {
				layout += "." + strings.Repeat("0", p)
			}
		}
		s := t.UTC().Format(layout)
		if nested {
			return "'" + s + "'"
		}
		return s
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			if nested {
				return "NULL"
			}
			return `\N`
		}
		return renderText(v.Elem(), dbType, nested)
	case reflect.String:
		if nested {
			return quoteString(v.String())
		}
		return v.String()
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.Float32, reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case reflect.Slice, reflect.Array:
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = renderText(v.Index(i), "", true)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case reflect.Map:
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = renderText(k, "", true) + ":" + renderText(v.MapIndex(k), "", true)
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	return fmt.Sprint(v.Interface())
}

func (s *server) close() error {
	var err error
	s.once.Do(func() { err = s.conn.Close() })
	return err
}
