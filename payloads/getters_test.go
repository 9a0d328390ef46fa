package payloads_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/payloads"
)

// generatedStructs returns every generated struct type (payloads names each
// by an alias; they are declared in its internal packages) that the
// payload of some event or event.action reaches: the payload structs (each
// action's, each unknown-action type, each event's without actions) and
// everything their fields hold, which is every generated struct.
func generatedStructs(t *testing.T) []reflect.Type {
	t.Helper()
	const pkg = "forgehooks.dev/forgehooks/payloads"
	seen := map[reflect.Type]bool{}
	var out []reflect.Type
	var walk func(reflect.Type)
	walk = func(rt reflect.Type) {
		for rt.Kind() == reflect.Pointer || rt.Kind() == reflect.Slice || rt.Kind() == reflect.Map {
			rt = rt.Elem()
		}
		if rt.Kind() != reflect.Struct || !strings.HasPrefix(rt.PkgPath(), pkg) || seen[rt] || rt == reflect.TypeFor[payloads.Timestamp]() {
			return
		}
		seen[rt] = true
		out = append(out, rt)
		for i := range rt.NumField() {
			if f := rt.Field(i); f.IsExported() {
				walk(f.Type)
			}
		}
	}
	for _, name := range payloads.EmitterEventNames() {
		event, action, _ := strings.Cut(name, ".")
		for _, a := range []string{action, "no-such-action"} {
			body, _ := json.Marshal(map[string]string{"action": a})
			p, err := payloads.Parse(event, body)
			if err != nil {
				t.Fatalf("Parse(%q, %s): %v", event, body, err)
			}
			walk(reflect.TypeOf(p))
		}
	}
	if len(out) < 500 {
		t.Fatalf("found %d generated structs; the walk is broken", len(out))
	}
	return out
}

// wantsGetter reports whether a field must have a GetX method: every member
// does, and every variant of a union (a field without a JSON key); Raw,
// the payload's own bytes, does not.
func wantsGetter(f reflect.StructField) bool {
	key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return key != "-" && f.Name != "Raw"
}

// TestGetters checks every generated struct: each member (pointer fields
// included) has its GetX method; on a nil receiver it returns the zero
// value; on a value it returns the member (the scalar itself for an optional
// scalar, the same struct for a struct member).
func TestGetters(t *testing.T) {
	count := 0
	for _, rt := range generatedStructs(t) {
		pt := reflect.PointerTo(rt)
		for i := range rt.NumField() {
			f := rt.Field(i)
			if !f.IsExported() || !wantsGetter(f) {
				continue
			}
			count++
			m, ok := pt.MethodByName("Get" + f.Name)
			if !ok {
				t.Errorf("%s has member %s (%s) but no Get%s", rt.Name(), f.Name, f.Type, f.Name)
				continue
			}
			if m.Type.NumIn() != 1 || m.Type.NumOut() != 1 {
				t.Errorf("%s.Get%s has type %s", rt.Name(), f.Name, m.Type)
				continue
			}
			if f.Name == "Action" && knownAction(rt) != "" {
				// The struct of a known action: its action is its type's.
				for _, recv := range []reflect.Value{reflect.Zero(pt), reflect.New(rt)} {
					if got := m.Func.Call([]reflect.Value{recv})[0].Interface(); got != knownAction(rt) {
						t.Errorf("%s.GetAction() = %v, want %q", rt.Name(), got, knownAction(rt))
					}
				}
				continue
			}
			// A nil receiver gives the zero value, without a panic.
			if out := m.Func.Call([]reflect.Value{reflect.Zero(pt)})[0]; !out.IsZero() {
				t.Errorf("(*%s)(nil).Get%s() = %v, want the zero value", rt.Name(), f.Name, out)
			}
			// An absent member gives the zero value too.
			x := reflect.New(rt)
			if out := m.Func.Call([]reflect.Value{x})[0]; !out.IsZero() && !(f.Type.Kind() == reflect.Struct) {
				t.Errorf("%s{}.Get%s() = %v, want the zero value", rt.Name(), f.Name, out)
			}
			checkGetterValue(t, rt, f, m, x)
		}
	}
	t.Logf("%d getters checked", count)
}

// knownAction returns the action of the struct of an event.action, or "".
func knownAction(rt reflect.Type) string {
	p, ok := reflect.New(rt).Interface().(payloads.Payload)
	if !ok || strings.HasSuffix(rt.Name(), "UnknownEvent") {
		return ""
	}
	_, action, _ := strings.Cut(payloads.PayloadName(p), ".")
	return action
}

// checkGetterValue sets member f of *x to a value that is not zero and checks
// what the getter returns.
func checkGetterValue(t *testing.T, rt reflect.Type, f reflect.StructField, m reflect.Method, x reflect.Value) {
	t.Helper()
	field := x.Elem().FieldByIndex(f.Index)
	var want reflect.Value // what the getter must return
	switch {
	case f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.Struct && f.Type.Elem() != reflect.TypeFor[payloads.Timestamp]():
		field.Set(reflect.New(f.Type.Elem()))
		want = field
	case f.Type.Kind() == reflect.Pointer:
		v := reflect.New(f.Type.Elem())
		setScalar(t, v.Elem())
		field.Set(v)
		want = v.Elem()
	case f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeFor[payloads.Timestamp]():
		want = field.Addr() // a struct member: the getter points at the field itself
	case f.Type.Kind() == reflect.Slice || f.Type.Kind() == reflect.Map:
		if f.Type == reflect.TypeFor[json.RawMessage]() {
			field.Set(reflect.ValueOf(json.RawMessage(`{"id":1}`)))
		} else if f.Type.Kind() == reflect.Slice {
			field.Set(reflect.MakeSlice(f.Type, 1, 1))
		} else {
			field.Set(reflect.MakeMap(f.Type))
		}
		want = field
	default:
		setScalar(t, field)
		want = field
	}
	got := m.Func.Call([]reflect.Value{x})[0]
	same := reflect.DeepEqual(got.Interface(), want.Interface())
	if got.Kind() == reflect.Pointer {
		same = got.Pointer() == want.Pointer()
	}
	if !same {
		t.Errorf("%s.Get%s() = %v, want %v", rt.Name(), f.Name, got, want)
	}
}

// setScalar sets v, a builtin, an enum or a Timestamp, to a value that is not
// its zero value.
func setScalar(t *testing.T, v reflect.Value) {
	t.Helper()
	switch {
	case v.Type() == reflect.TypeFor[payloads.Timestamp]():
		v.Set(reflect.ValueOf(payloads.NewTimestamp(time.Unix(1557933565, 0))))
	case v.Kind() == reflect.String:
		v.SetString("x")
	case v.Kind() == reflect.Bool:
		v.SetBool(true)
	case v.Kind() == reflect.Int64:
		v.SetInt(7)
	case v.Kind() == reflect.Float64:
		v.SetFloat(1.5)
	default:
		t.Fatalf("no test value for %s", v.Type())
	}
}

// TestGettersOnDecodedPayload reads a push delivery through getters, as a
// handler does, and an absent member through a nil chain.
func TestGettersOnDecodedPayload(t *testing.T) {
	body := `{"ref":"refs/heads/main","installation":{"id":42,"node_id":"I_1"},` +
		`"repository":{"id":1,"name":"r","full_name":"o/r","owner":{"login":"o","id":2}},"sender":{"login":"s","id":3},"forced":false}`
	p, err := payloads.Parse("push", []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	push := p.(*payloads.PushEvent)
	if got := push.GetInstallation().ID; got != 42 {
		t.Errorf("GetInstallation().ID = %d, want 42", got)
	}
	if got := push.GetRepository().FullName; got != "o/r" {
		t.Errorf("GetRepository().FullName = %q", got)
	}
	if got := push.GetSender().Login; got != "s" {
		t.Errorf("GetSender().Login = %q", got)
	}
	if push.GetOrganization() != nil {
		t.Errorf("absent organization: %v", push.GetOrganization())
	}
	if got := push.GetBaseRef(); got != "" {
		t.Errorf("absent base_ref: GetBaseRef() = %q", got)
	}
	if got := push.GetInstallation().GetID(); got != 42 {
		t.Errorf("GetInstallation().GetID() = %d, want 42", got)
	}
	if got := push.GetHeadCommit().GetAuthor().GetEmail(); got != "" {
		t.Errorf("absent head_commit: GetHeadCommit().GetAuthor().GetEmail() = %q", got)
	}
	var none *payloads.PushEvent
	if none.GetInstallation().GetID() != 0 || none.GetRepository() != nil || none.GetSender().GetName() != "" {
		t.Error("a nil *PushEvent's getters are not zero")
	}
}
