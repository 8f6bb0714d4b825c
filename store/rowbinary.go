package store

import (
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"strings"
	"time"
)

// The embedded engine takes INSERTs as ClickHouse's RowBinaryWithNamesAndTypes
// (https://clickhouse.com/docs/interfaces/formats/RowBinaryWithNamesAndTypes):
// a header naming each column and its type, then every row as fixed-width
// little-endian numbers and length-prefixed bytes. The engine reads it
// without parsing text (a JSONEachRow row costs it a parse of every key and
// value) and strings keep their bytes exactly, NUL included. The header
// carries the table's own column types (the engine refuses others), so each
// field is written in its column's width.

// rbWriter appends one field value in its column's RowBinary encoding.
type rbWriter func(b []byte, v reflect.Value) ([]byte, error)

// rowBinaryWriter returns the writer of Go field f into a column of
// ClickHouse type chType, or an error when the pair is not one the model
// structs use.
func rowBinaryWriter(f field, chType string) (rbWriter, error) {
	base := chType
	if s, ok := strings.CutPrefix(base, "LowCardinality("); ok {
		base = strings.TrimSuffix(s, ")") // same bytes on the wire as the inner type
	}
	isInt := f.kind >= reflect.Int && f.kind <= reflect.Int64
	switch {
	case f.typ == timeType && strings.HasPrefix(base, "DateTime64(3"):
		return func(b []byte, v reflect.Value) ([]byte, error) {
			var ms int64 // the zero time is the Unix epoch, as in the JSON codec
			if t := v.Interface().(time.Time); !t.IsZero() {
				ms = t.UnixMilli()
			}
			return binary.LittleEndian.AppendUint64(b, uint64(ms)), nil
		}, nil
	case f.kind == reflect.String && base == "String":
		return func(b []byte, v reflect.Value) ([]byte, error) { return appendRBString(b, v.String()), nil }, nil
	case f.kind == reflect.Bool && (base == "Bool" || base == "UInt8"):
		return func(b []byte, v reflect.Value) ([]byte, error) {
			if v.Bool() {
				return append(b, 1), nil
			}
			return append(b, 0), nil
		}, nil
	case isInt && base == "Int32":
		return func(b []byte, v reflect.Value) ([]byte, error) {
			x := v.Int()
			if x < math.MinInt32 || x > math.MaxInt32 {
				return nil, fmt.Errorf("column %s: %d does not fit Int32", f.name, x)
			}
			return binary.LittleEndian.AppendUint32(b, uint32(int32(x))), nil
		}, nil
	case isInt && base == "Int64":
		return func(b []byte, v reflect.Value) ([]byte, error) {
			return binary.LittleEndian.AppendUint64(b, uint64(v.Int())), nil
		}, nil
	case (f.kind == reflect.Float64 || f.kind == reflect.Float32) && base == "Float64":
		return func(b []byte, v reflect.Value) ([]byte, error) {
			x := v.Float()
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, fmt.Errorf("column %s: %v is not a storable number", f.name, x)
			}
			return binary.LittleEndian.AppendUint64(b, math.Float64bits(x)), nil
		}, nil
	case f.kind == reflect.Slice && f.typ.Elem().Kind() == reflect.String && base == "Array(String)":
		return func(b []byte, v reflect.Value) ([]byte, error) {
			b = binary.AppendUvarint(b, uint64(v.Len()))
			for j := range v.Len() {
				b = appendRBString(b, v.Index(j).String())
			}
			return b, nil
		}, nil
	case f.kind == reflect.Map && f.typ.Key().Kind() == reflect.String && f.typ.Elem().Kind() == reflect.String && base == "Map(String, String)":
		return func(b []byte, v reflect.Value) ([]byte, error) {
			keys := sortedKeys(v)
			b = binary.AppendUvarint(b, uint64(len(keys)))
			for _, k := range keys {
				b = appendRBString(b, k)
				b = appendRBString(b, v.MapIndex(reflect.ValueOf(k)).String())
			}
			return b, nil
		}, nil
	}
	return nil, fmt.Errorf("column %s: Go type %s into %s is not supported", f.name, f.typ, chType)
}

func appendRBString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// encodeRowBinary appends rows (a slice of a model struct) to b as
// RowBinaryWithNamesAndTypes. types maps each column (the struct's json tags)
// to its ClickHouse type; a column missing from it, a Go type that does not
// go into its column, an integer too wide for it or a NaN or infinite float
// is an error naming the column.
func encodeRowBinary(b []byte, rows any, types map[string]string) ([]byte, error) {
	rv := reflect.ValueOf(rows)
	if rv.Kind() != reflect.Slice {
		return nil, fmt.Errorf("rows must be a slice, got %s", rv.Type())
	}
	fields := fieldsOf(rv.Type().Elem())
	writers := make([]rbWriter, len(fields))
	b = binary.AppendUvarint(b, uint64(len(fields)))
	for _, f := range fields {
		b = appendRBString(b, f.name)
	}
	for i, f := range fields {
		t, ok := types[f.name]
		if !ok {
			return nil, fmt.Errorf("column %s: not in the table", f.name)
		}
		w, err := rowBinaryWriter(f, t)
		if err != nil {
			return nil, err
		}
		writers[i] = w
		b = appendRBString(b, t)
	}
	for i := range rv.Len() {
		row := rv.Index(i)
		for j, f := range fields {
			var err error
			if b, err = writers[j](b, row.Field(f.index)); err != nil {
				return nil, err
			}
		}
	}
	return b, nil
}
