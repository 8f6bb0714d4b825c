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
// It runs the same SQL text as the embedded engine: INSERTs carry their rows
// inline after FORMAT JSONEachRow, and reads are scanned generically by column
// type into the same row encoding the embedded transport returns.
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

func (s *server) exec(ctx context.Context, sql string) error {
	return s.conn.Exec(ctx, sql)
}

// scanAll runs sql and returns column names, types and every row's values.
func (s *server) scanAll(ctx context.Context, sql string) ([]string, []driver.ColumnType, [][]any, error) {
	rows, err := s.conn.Query(ctx, sql)
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

func (s *server) queryJSON(ctx context.Context, sql string) ([][]byte, error) {
	cols, _, rows, err := s.scanAll(ctx, sql)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, 0, len(rows))
	for _, r := range rows {
		b := []byte{'{'}
		for i, v := range r {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, cols[i])
			b = append(b, ':')
			b = appendJSONValue(b, reflect.ValueOf(v))
		}
		out = append(out, append(b, '}'))
	}
	return out, nil
}

// appendJSONValue encodes a scanned value for decodeRow.
func appendJSONValue(b []byte, v reflect.Value) []byte {
	if !v.IsValid() {
		return append(b, "null"...)
	}
	if t, ok := v.Interface().(time.Time); ok {
		return appendJSONString(b, encodeTime(t))
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return append(b, "null"...)
		}
		return appendJSONValue(b, v.Elem())
	case reflect.String:
		return appendJSONString(b, v.String())
	case reflect.Bool:
		return strconv.AppendBool(b, v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.AppendInt(b, v.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.AppendUint(b, v.Uint(), 10)
	case reflect.Float32, reflect.Float64:
		return strconv.AppendFloat(b, v.Float(), 'g', -1, 64)
	case reflect.Slice, reflect.Array:
		b = append(b, '[')
		for i := range v.Len() {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONValue(b, v.Index(i))
		}
		return append(b, ']')
	case reflect.Map:
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, fmt.Sprint(k.Interface()))
			b = append(b, ':')
			b = appendJSONValue(b, v.MapIndex(k))
		}
		return append(b, '}')
	}
	return appendJSONString(b, fmt.Sprint(v.Interface()))
}

func (s *server) queryText(ctx context.Context, sql string) (QueryResult, error) {
	cols, types, rows, err := s.scanAll(ctx, sql)
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
