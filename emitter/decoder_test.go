package emitter

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// fakeDecoder vouches for payloads that start with `{"ok":` and reports
// action as their action, counting its calls.
type fakeDecoder struct {
	calls  atomic.Int32
	action string
	panics bool
}

func (f *fakeDecoder) decoder() Decoder {
	return Decoder{Key: "typed", Decode: func(p []byte, _ bool) (any, string, bool) {
		f.calls.Add(1)
		if f.panics {
			panic("decoder bug")
		}
		if !strings.HasPrefix(string(p), `{"ok":`) {
			return nil, "", false
		}
		return "decoded:" + string(p), f.action, true
	}}
}

// TestOnDecoded: a decoder registered with a whole event's handler decodes
// each delivery once, before the handlers, and what it found is what every
// handler sees: the value under its key, the action and the routing by it.
// Where it does not vouch (or panics), the delivery takes the usual way.
func TestOnDecoded(t *testing.T) {
	type seen struct {
		value     any
		memoCalls int
		action    string
		ran       []string
	}
	run := func(t *testing.T, opts Options, fd *fakeDecoder, regName, payload string) (seen, error) {
		t.Helper()
		em := New(opts)
		var s seen
		var (
			mu  sync.Mutex
			ran []string
		)
		record := func(name string) {
			mu.Lock()
			defer mu.Unlock()
			ran = append(ran, name)
		}
		em.OnDecoded(regName, fd.decoder(), func(_ context.Context, e Event) error {
			v, err := e.Memo("typed", func() (any, error) { s.memoCalls++; return "decoded by the handler", nil })
			s.value, s.action = v, e.Action()
			record("typed " + regName)
			return err
		})
		em.On("issues.opened", func(context.Context, Event) error { record("issues.opened"); return nil })
		em.On("issues.closed", func(context.Context, Event) error { record("issues.closed"); return nil })
		err := em.Receive(context.Background(), Event{Name: "issues", Payload: []byte(payload)})
		s.ran = ran
		return s, err
	}

	t.Run("vouched", func(t *testing.T) {
		fd := &fakeDecoder{action: "closed"}
		// The payload's own action says "opened": the decoder's word counts,
		// which is why a Decoder must find the action exactly.
		s, err := run(t, Options{}, fd, "issues", `{"ok":1,"action":"opened"}`)
		if err != nil {
			t.Fatal(err)
		}
		if fd.calls.Load() != 1 || s.memoCalls != 0 || s.value != `decoded:{"ok":1,"action":"opened"}` {
			t.Errorf("decoder calls %d, handler decodes %d, value %v; want 1, 0 and the decoder's", fd.calls.Load(), s.memoCalls, s.value)
		}
		if s.action != "closed" || !slices.Contains(s.ran, "issues.closed") || slices.Contains(s.ran, "issues.opened") {
			t.Errorf("action %q, ran %v; want the decoder's action and its handler", s.action, s.ran)
		}
	})
	t.Run("not vouched: scanned and routed as usual", func(t *testing.T) {
		fd := &fakeDecoder{action: "closed"}
		s, err := run(t, Options{}, fd, "issues", `{"action":"opened"}`)
		if err != nil {
			t.Fatal(err)
		}
		if fd.calls.Load() != 1 || s.memoCalls != 1 || s.value != "decoded by the handler" {
			t.Errorf("decoder calls %d, handler decodes %d, value %v", fd.calls.Load(), s.memoCalls, s.value)
		}
		if s.action != "opened" || !slices.Contains(s.ran, "issues.opened") {
			t.Errorf("action %q, ran %v; want the payload's", s.action, s.ran)
		}
	})
	t.Run("not vouched and invalid: refused before any handler", func(t *testing.T) {
		fd := &fakeDecoder{}
		s, err := run(t, Options{}, fd, "issues", `{"action":"opened"`)
		if !errors.Is(err, ErrInvalidPayload) || len(s.ran) != 0 {
			t.Errorf("err %v, ran %v; want ErrInvalidPayload and nothing run", err, s.ran)
		}
	})
	t.Run("panicking decoder: as if not vouched", func(t *testing.T) {
		fd := &fakeDecoder{panics: true}
		s, err := run(t, Options{}, fd, "issues", `{"ok":1,"action":"opened"}`)
		if err != nil || s.memoCalls != 1 || !slices.Contains(s.ran, "issues.opened") {
			t.Errorf("err %v, handler decodes %d, ran %v", err, s.memoCalls, s.ran)
		}
	})
	t.Run("with a Transform: not used", func(t *testing.T) {
		fd := &fakeDecoder{action: "closed"}
		opts := Options{Transform: func(_ context.Context, e Event) (Event, error) { return e, nil }}
		s, err := run(t, opts, fd, "issues", `{"ok":1,"action":"opened"}`)
		if err != nil || fd.calls.Load() != 0 || s.memoCalls != 1 || s.action != "opened" {
			t.Errorf("err %v, decoder calls %d, handler decodes %d, action %q", err, fd.calls.Load(), s.memoCalls, s.action)
		}
	})
	t.Run("registered for an action: not used", func(t *testing.T) {
		fd := &fakeDecoder{action: "closed"}
		s, err := run(t, Options{}, fd, "issues.opened", `{"ok":1,"action":"opened"}`)
		if err != nil || fd.calls.Load() != 0 || s.memoCalls != 1 {
			t.Errorf("err %v, decoder calls %d, handler decodes %d", err, fd.calls.Load(), s.memoCalls)
		}
	})
	t.Run("removed with its listener", func(t *testing.T) {
		fd := &fakeDecoder{action: "closed"}
		em := New(Options{})
		l := em.OnDecoded("push", fd.decoder(), func(context.Context, Event) error { return nil })
		em.OnAny(func(context.Context, Event) error { return nil })
		em.RemoveListener("push", l)
		if err := em.Receive(context.Background(), Event{Name: "push", Payload: []byte(`{"ok":1}`)}); err != nil {
			t.Fatal(err)
		}
		if fd.calls.Load() != 0 {
			t.Errorf("a removed listener's decoder ran %d times", fd.calls.Load())
		}
	})
	t.Run("nil Decode panics", func(t *testing.T) {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(r.(string), "nil Decode") {
				t.Errorf("recover() = %v; want a panic naming the nil Decode", r)
			}
		}()
		New(Options{}).OnDecoded("push", Decoder{}, func(context.Context, Event) error { return nil })
	})
	t.Run("through DecodingRegistrar", func(t *testing.T) {
		em := New(Options{})
		fd := &fakeDecoder{action: "closed"}
		var r DecodingRegistrar = em
		l := r.OnDecoded("push", fd.decoder(), Handler(func(context.Context, Event) error { return nil }))
		if l == nil {
			t.Fatal("OnDecoded returned no listener")
		}
		if err := em.Receive(context.Background(), Event{Name: "push", Payload: []byte(`{"ok":1}`)}); err != nil {
			t.Fatal(err)
		}
		if fd.calls.Load() != 1 {
			t.Errorf("decoder ran %d times, want 1", fd.calls.Load())
		}
	})
}

// TestMemoKeys: each key has its own value, computed once, whichever key came
// first (the first is kept apart from the others), nil included.
func TestMemoKeys(t *testing.T) {
	var m memo
	e := Event{memo: &m}
	keys := []any{nil, "a", 1, struct{ s string }{"x"}, "b"}
	var calls atomic.Int32
	var wg sync.WaitGroup
	for range 4 {
		for i, k := range keys {
			wg.Add(1)
			go func() {
				defer wg.Done()
				v, err := e.Memo(k, func() (any, error) { calls.Add(1); return i, nil })
				if err != nil || v != i {
					t.Errorf("Memo(%v) = %v, %v; want %d", k, v, err, i)
				}
			}()
		}
	}
	wg.Wait()
	if got := calls.Load(); got != int32(len(keys)) {
		t.Errorf("computed %d times for %d keys", got, len(keys))
	}
	var pre memo
	pre.set("k", "set")
	e = Event{memo: &pre}
	if v, _ := e.Memo("k", func() (any, error) { return "computed", nil }); v != "set" {
		t.Errorf("Memo after set = %v, want the value set", v)
	}
	if v, _ := e.Memo("other", func() (any, error) { return "computed", nil }); v != "computed" {
		t.Errorf("Memo of another key after set = %v", v)
	}
}

// TestReceiveOwned: ReceiveOwned tells the decoder and every handler that
// the payload is owned; Receive does not, even given an Event a handler of
// an owned delivery passes on; a transformed Event is not owned.
func TestReceiveOwned(t *testing.T) {
	t.Parallel()
	payload := []byte(`{"ok":1}`)
	for _, tc := range []struct {
		name      string
		transform bool
		receive   func(em *Emitter, e Event) error
		owned     bool
	}{
		{"Receive", false, func(em *Emitter, e Event) error { return em.Receive(context.Background(), e) }, false},
		{"ReceiveOwned", false, func(em *Emitter, e Event) error { return em.ReceiveOwned(context.Background(), e) }, true},
		{"ReceiveOwned transformed", true, func(em *Emitter, e Event) error { return em.ReceiveOwned(context.Background(), e) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var opts Options
			if tc.transform {
				opts.Transform = func(_ context.Context, e Event) (Event, error) { return e, nil }
			}
			em := New(opts)
			var mu sync.Mutex
			var decoded, handled []bool
			em.OnDecoded("push", Decoder{Key: "typed", Decode: func(_ []byte, owned bool) (any, string, bool) {
				mu.Lock()
				decoded = append(decoded, owned)
				mu.Unlock()
				return "decoded", "", true
			}}, func(_ context.Context, e Event) error {
				mu.Lock()
				handled = append(handled, e.PayloadOwned())
				mu.Unlock()
				return nil
			})
			var passed Event
			em.OnAny(func(_ context.Context, e Event) error {
				mu.Lock()
				defer mu.Unlock()
				passed = e
				return nil
			})
			if err := tc.receive(em, Event{ID: "1", Name: "push", Payload: payload}); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			again := passed
			want := []bool{tc.owned}
			if tc.transform {
				want = nil // the decoder is not used with a Transform
			}
			if !slices.Equal(decoded, want) || !slices.Equal(handled, []bool{tc.owned}) {
				t.Errorf("decoder saw owned %v, handler %v; want %v and [%v]", decoded, handled, want, tc.owned)
			}
			decoded, handled = nil, nil
			mu.Unlock()
			if err := em.Receive(context.Background(), again); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if slices.Contains(decoded, true) || slices.Contains(handled, true) {
				t.Errorf("an Event passed on to Receive: decoder saw owned %v, handler %v", decoded, handled)
			}
		})
	}
}
