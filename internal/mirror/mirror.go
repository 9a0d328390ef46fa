// Package mirror builds, for each generated payload type, a plain struct type
// with the same exported fields that encoding/json decodes by reflection, and
// converts decoded payloads to it. It serves the typed-decoding baseline of the
// benchmarks (bench/) and the test that the generated decoder gives the same
// values as encoding/json (payloads/identity_test.go); runtime code never uses it.
package mirror

import (
	"encoding/json"
	"fmt"
	"reflect"
)

// Mirrors builds, per generated payload type, a plain struct type with the same
// exported fields, field types and json tags, that encoding/json decodes by
// reflection alone: the baseline of typed decoding. Where the generated type
// has its own codec below the struct level (Timestamp, unions) the mirror has
// json.RawMessage, and a type met again inside itself (a recursive type) is cut
// to json.RawMessage too. Both make the baseline's work smaller, never larger:
// encoding/json copies those bytes instead of parsing them.
type Mirrors map[reflect.Type]reflect.Type

var rawType = reflect.TypeFor[json.RawMessage]()

// Of returns the mirror of t.
func (m Mirrors) Of(t reflect.Type) reflect.Type {
	if mt, ok := m[t]; ok {
		if mt == nil { // a recursive type: cut the cycle
			return rawType
		}
		return mt
	}
	switch t.Kind() {
	case reflect.Pointer:
		return reflect.PointerTo(m.Of(t.Elem()))
	case reflect.Slice:
		if t == rawType {
			return t
		}
		return reflect.SliceOf(m.Of(t.Elem()))
	case reflect.Map:
		return reflect.MapOf(t.Key(), m.Of(t.Elem()))
	case reflect.Struct:
		if _, ok := reflect.PointerTo(t).MethodByName("UnmarshalJSON"); !ok {
			return t
		}
		if _, generated := t.FieldByName("extra"); !generated {
			return rawType // Timestamp, unions
		}
		m[t] = nil
		var fields []reflect.StructField
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() || f.Tag.Get("json") == "-" {
				continue
			}
			fields = append(fields, reflect.StructField{Name: f.Name, Type: m.Of(f.Type), Tag: f.Tag})
		}
		mt := reflect.StructOf(fields)
		m[t] = mt
		return mt
	case reflect.String:
		return reflect.TypeFor[string]()
	case reflect.Int64:
		return reflect.TypeFor[int64]()
	}
	return t
}

// ToMirror converts v, a value of a generated type, to a value of mirror type
// mt, field by field, so that go-cmp can compare forgehooks' decoding with
// encoding/json's. A field that the mirror holds as json.RawMessage gets the
// generated value's MarshalJSON output.
func ToMirror(v reflect.Value, mt reflect.Type) (reflect.Value, error) {
	out := reflect.New(mt).Elem()
	if mt == rawType && v.Type() != rawType {
		if v.Kind() == reflect.Pointer && v.IsNil() {
			return out, nil
		}
		m, ok := v.Interface().(json.Marshaler)
		if !ok && v.CanAddr() {
			m, ok = v.Addr().Interface().(json.Marshaler)
		}
		if !ok {
			return out, fmt.Errorf("%s is not a json.Marshaler", v.Type())
		}
		b, err := m.MarshalJSON()
		if err != nil {
			return out, err
		}
		out.SetBytes(b)
		return out, nil
	}
	switch mt.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return out, nil
		}
		e, err := ToMirror(v.Elem(), mt.Elem())
		if err != nil {
			return out, err
		}
		p := reflect.New(mt.Elem())
		p.Elem().Set(e)
		out.Set(p)
	case reflect.Slice:
		if v.IsNil() {
			return out, nil
		}
		if mt == rawType {
			out.SetBytes(append([]byte{}, v.Bytes()...))
			return out, nil
		}
		s := reflect.MakeSlice(mt, v.Len(), v.Len())
		for i := 0; i < v.Len(); i++ {
			e, err := ToMirror(v.Index(i), mt.Elem())
			if err != nil {
				return out, err
			}
			s.Index(i).Set(e)
		}
		out.Set(s)
	case reflect.Map:
		if v.IsNil() {
			return out, nil
		}
		m := reflect.MakeMapWithSize(mt, v.Len())
		for it := v.MapRange(); it.Next(); {
			e, err := ToMirror(it.Value(), mt.Elem())
			if err != nil {
				return out, err
			}
			m.SetMapIndex(it.Key(), e)
		}
		out.Set(m)
	case reflect.Struct:
		if v.Type() == mt {
			out.Set(v)
			return out, nil
		}
		for i := 0; i < mt.NumField(); i++ {
			f := mt.Field(i)
			e, err := ToMirror(v.FieldByName(f.Name), f.Type)
			if err != nil {
				return out, fmt.Errorf("%s: %w", f.Name, err)
			}
			out.Field(i).Set(e)
		}
	case reflect.String:
		out.SetString(v.String())
	case reflect.Int64:
		out.SetInt(v.Int())
	default:
		out.Set(v)
	}
	return out, nil
}
