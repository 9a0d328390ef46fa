package emitter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/payloads/names"
	"github.com/google/go-cmp/cmp"
)

// deadlock bounds waits that only a bug would make long, so that a broken test
// fails with a message instead of hanging. It does not time anything.
const deadlock = 10 * time.Second

// recorder collects the labels of the handlers that ran.
type recorder struct {
	mu  sync.Mutex
	ran []string
}

func (r *recorder) handler(label string) Handler {
	return func(ctx context.Context, e Event) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.ran = append(r.ran, label)
		return nil
	}
}

func (r *recorder) sorted() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := slices.Clone(r.ran)
	slices.Sort(s)
	return s
}

// TestUnknownVariant: New refuses a server variant the schema does not know,
// as webhooks.New does (with a panic: New returns no error), and takes a
// known one and the empty one.
func TestUnknownVariant(t *testing.T) {
	func() {
		defer func() {
			msg, _ := recover().(string)
			if !strings.Contains(msg, `"no-such-variant"`) {
				t.Errorf("New with an unknown variant: panic %q, want one naming it", msg)
			}
		}()
		New(Options{Variant: "no-such-variant"})
	}()
	for _, v := range append([]string{""}, names.Variants()...) {
		if New(Options{Variant: v}) == nil {
			t.Errorf("New with variant %q returned nil", v)
		}
	}
}

func TestRegistrationPanics(t *testing.T) {
	h := func(context.Context, Event) error { return nil }
	tests := []struct {
		name string
		fn   func(em *Emitter)
		want string
	}{
		{"On star", func(em *Emitter) { em.On("*", h) }, "use OnAny"},
		{"On error", func(em *Emitter) { em.On("error", h) }, "use OnError"},
		{"On empty", func(em *Emitter) { em.On("", h) }, "empty event name"},
		{"On nil", func(em *Emitter) { em.On("push", nil) }, "nil handler"},
		{"OnNames none", func(em *Emitter) { em.OnNames(nil, h) }, "no event names"},
		{"OnNames with star", func(em *Emitter) { em.OnNames([]string{"push", "*"}, h) }, "use OnAny"},
		{"OnNames with error", func(em *Emitter) { em.OnNames([]string{"error"}, h) }, "use OnError"},
		{"OnAny nil", func(em *Emitter) { em.OnAny(nil) }, "nil handler"},
		{"OnError nil", func(em *Emitter) { em.OnError(nil) }, "nil handler"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var em Emitter
			defer func() {
				r := recover()
				if msg, _ := r.(string); !strings.Contains(msg, tt.want) {
					t.Fatalf("panic %v, want one containing %q", r, tt.want)
				}
				if s := em.snap.Load(); s != nil && (len(s.byName) > 0 || len(s.any) > 0 || len(s.errs) > 0) {
					t.Error("a failed registration registered something")
				}
			}()
			tt.fn(&em)
		})
	}
}

func TestDispatch(t *testing.T) {
	tests := []struct {
		name    string
		event   string
		payload string
		want    []string
	}{
		{"action", "issues", `{"action":"opened"}`, []string{"any", "issues", "issues.opened", "issues|push"}},
		{"other action", "issues", `{"action":"closed"}`, []string{"any", "issues", "issues.closed", "issues|push"}},
		{"no action", "push", `{"ref":"main"}`, []string{"any", "issues|push", "push"}},
		{"nested action ignored", "push", `{"x":{"action":"opened"}}`, []string{"any", "issues|push", "push"}},
		{"non-string action", "issues", `{"action":1}`, []string{"any", "issues", "issues|push"}},
		{"empty action", "issues", `{"action":""}`, []string{"any", "issues", "issues|push"}},
		{"escaped action", "issues", `{"action":"op\u0065ned"}`, []string{"any", "issues", "issues.opened", "issues|push"}},
		{"last action wins", "issues", `{"action":"closed","action":"opened"}`, []string{"any", "issues", "issues.opened", "issues|push"}},
		{"unknown event", "brand_new_event", `{"action":"x"}`, []string{"any"}},
		{"name with a dot is a plain name", "issues.opened", `{}`, []string{"any", "issues.opened"}},
		{"dotted name", "a.b", `{}`, []string{"a.b", "any"}},
		{"long name and action", strings.Repeat("n", 70), `{"action":"` + strings.Repeat("a", 70) + `"}`, []string{"any", "long"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rec recorder
			em := New(Options{})
			em.On("issues", rec.handler("issues"))
			em.On("issues.opened", rec.handler("issues.opened"))
			em.On("issues.closed", rec.handler("issues.closed"))
			em.On("push", rec.handler("push"))
			em.OnNames([]string{"issues", "push"}, rec.handler("issues|push"))
			em.On("a.b", rec.handler("a.b"))
			em.On(strings.Repeat("n", 70)+"."+strings.Repeat("a", 70), rec.handler("long"))
			em.OnAny(rec.handler("any"))
			err := em.Receive(context.Background(), Event{ID: "1", Name: tt.event, Payload: []byte(tt.payload)})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, rec.sorted()); diff != "" {
				t.Errorf("handlers that ran (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReceiveInvalid(t *testing.T) {
	tests := []struct {
		name    string
		event   Event
		want    error
		message string
	}{
		{"missing name", Event{Payload: []byte(`{}`)}, ErrMissingName, ""},
		{"missing payload", Event{Name: "push"}, ErrMissingPayload, ""},
		{"invalid JSON", Event{Name: "push", ID: "d1", Payload: []byte(`{"a":}`)}, ErrInvalidPayload, `(event "push", delivery "d1"): invalid JSON`},
		{"array", Event{Name: "push", Payload: []byte(`[]`)}, ErrInvalidPayload, "it is a JSON array"},
		{"string", Event{Name: "push", Payload: []byte(`"x"`)}, ErrInvalidPayload, "it is a JSON string"},
		{"null", Event{Name: "push", Payload: []byte(`null`)}, ErrInvalidPayload, "it is a JSON null"},
		{"trailing data", Event{Name: "push", Payload: []byte(`{} x`)}, ErrInvalidPayload, "after top-level value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			em := New(Options{})
			ran := false
			em.OnAny(func(context.Context, Event) error { ran = true; return nil })
			told := make(chan struct{}, 1)
			em.OnError(func(context.Context, *Error) { told <- struct{}{} })
			err := em.Receive(context.Background(), tt.event)
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.message) {
				t.Fatalf("err = %v, want %v containing %q", err, tt.want, tt.message)
			}
			var herr *Error
			if errors.As(err, &herr) {
				t.Error("a validation error is an *Error")
			}
			if err := em.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			if ran || len(told) > 0 {
				t.Errorf("handler ran: %v; error handler told: %v", ran, len(told) > 0)
			}
		})
	}
}

func TestHandlerErrors(t *testing.T) {
	errA := errors.New("a failed")
	errB := errors.New("b failed")
	em := New(Options{})
	em.On("issues.opened", func(context.Context, Event) error { return errA })
	em.On("issues", func(context.Context, Event) error { return nil })
	em.On("issues", func(context.Context, Event) error { panic(errB) })
	em.OnAny(func(context.Context, Event) error { panic("boom") })
	em.OnAny(func(context.Context, Event) error { runtime.Goexit(); return nil })
	em.OnAny(func(context.Context, Event) error { return nil }) // runs inline: Goexit above is not
	got := make(chan *Error, 2)
	em.OnError(func(ctx context.Context, err *Error) { got <- err })
	em.OnError(func(ctx context.Context, err *Error) { got <- err })

	ev := Event{ID: "42", Name: "issues", Payload: []byte(`{"action":"opened"}`)}
	err := em.Receive(context.Background(), ev)
	var herr *Error
	if !errors.As(err, &herr) {
		t.Fatalf("err = %v (%T), want *Error", err, err)
	}
	if len(herr.Errors) != 4 {
		t.Fatalf("%d errors, want 4: %v", len(herr.Errors), herr.Errors)
	}
	// Order: issues.opened, issues, OnAny; each in registration order.
	if herr.Errors[0] != errA {
		t.Errorf("first error %v, want %v", herr.Errors[0], errA)
	}
	var p *PanicError
	if !errors.As(herr.Errors[1], &p) || p.Value != errB || !errors.Is(herr.Errors[1], errB) || len(p.Stack) == 0 {
		t.Errorf("second error %#v, want a *PanicError of errB with a stack", herr.Errors[1])
	}
	if !strings.Contains(herr.Errors[2].Error(), "handler panicked: boom") {
		t.Errorf("third error %q", herr.Errors[2])
	}
	if !strings.Contains(herr.Errors[3].Error(), "Goexit") {
		t.Errorf("fourth error %q", herr.Errors[3])
	}
	if !errors.Is(err, errA) || !errors.Is(err, errB) {
		t.Error("errors.Is does not see every handler error")
	}
	if want := "a failed\nemitter: handler panicked: b failed\n"; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("message %q, want it to start with %q", err.Error(), want)
	}
	if herr.Event.ID != "42" || herr.Event.Name != "issues" || string(herr.Event.Payload) != string(ev.Payload) {
		t.Errorf("Error.Event = %+v", herr.Event)
	}
	for range 2 {
		select {
		case e := <-got:
			if e != herr {
				t.Error("error handler got another error than Receive returned")
			}
		case <-time.After(deadlock):
			t.Fatal("error handler not called")
		}
	}
}

func TestHandlersRunInParallel(t *testing.T) {
	em := New(Options{})
	const n = 5
	var arrived sync.WaitGroup
	arrived.Add(n)
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()
	h := func(context.Context, Event) error {
		arrived.Done()
		select { // every handler must be running at once for this to end
		case <-all:
			return nil
		case <-time.After(deadlock):
			return errors.New("handlers did not run in parallel")
		}
	}
	em.On("issues.opened", h)
	em.On("issues", h)
	em.On("issues", h)
	em.OnAny(h)
	em.OnAny(h)
	if err := em.Receive(context.Background(), Event{Name: "issues", Payload: []byte(`{"action":"opened"}`)}); err != nil {
		t.Fatal(err)
	}
}

func TestErrorHandlersDoNotBlockAndCloseWaits(t *testing.T) {
	var logs bytes.Buffer
	em := New(Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	em.OnAny(func(context.Context, Event) error { return errors.New("fail") })
	release := make(chan struct{})
	var done atomic.Bool
	em.OnError(func(ctx context.Context, err *Error) {
		<-release // blocks until after Receive has returned
		done.Store(true)
	})
	em.OnError(func(ctx context.Context, err *Error) { panic("error handler bug") })
	ctx, cancel := context.WithCancel(context.Background())
	em.OnError(func(hctx context.Context, err *Error) {
		<-release
		if hctx.Err() != nil {
			t.Error("error handler's context was cancelled with Receive's")
		}
	})
	err := em.Receive(ctx, Event{Name: "push", Payload: []byte(`{}`)})
	cancel()
	if err == nil {
		t.Fatal("no error")
	}
	// Close with a context that is already done: the handler is still blocked.
	expired, stop := context.WithCancel(context.Background())
	stop()
	if err := em.Close(expired); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close(cancelled ctx) = %v while an error handler runs", err)
	}
	if err := em.Receive(context.Background(), Event{Name: "push", Payload: []byte(`{}`)}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Receive after Close = %v", err)
	}
	closed := make(chan bool)
	go func() {
		em.Close(context.Background())
		closed <- done.Load()
	}()
	close(release)
	if !<-closed {
		t.Fatal("Close returned before the error handler finished")
	}
	if !strings.Contains(logs.String(), "error handler panicked") || !strings.Contains(logs.String(), "error handler bug") {
		t.Errorf("panicking error handler not logged: %s", logs.String())
	}
}

func TestCloseWaitsForReceive(t *testing.T) {
	em := New(Options{})
	started := make(chan struct{})
	release := make(chan struct{})
	var finished atomic.Bool
	em.On("push", func(context.Context, Event) error {
		close(started)
		<-release
		finished.Store(true)
		return nil
	})
	go em.Receive(context.Background(), Event{Name: "push", Payload: []byte(`{}`)})
	<-started
	closed := make(chan bool)
	go func() {
		em.Close(context.Background())
		closed <- finished.Load()
	}()
	for !em.closing.Load() {
		runtime.Gosched()
	}
	close(release)
	if !<-closed {
		t.Fatal("Close returned while a handler was running")
	}
	// Close of an idle, closed emitter returns at once.
	if err := em.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestTransform(t *testing.T) {
	var calls atomic.Int32
	transform := func(ctx context.Context, e Event) (Event, error) {
		calls.Add(1)
		e.Payload = []byte(`{"action":"transformed"}`)
		return e, nil
	}
	em := New(Options{Transform: transform})
	var mu sync.Mutex
	var got []string
	seen := func(s string) { mu.Lock(); got = append(got, s); mu.Unlock() }
	memoKey := new(int)
	var memoCalls atomic.Int32
	onHandler := func(ctx context.Context, e Event) error {
		v, _ := e.Memo(memoKey, func() (any, error) { memoCalls.Add(1); return e.Action(), nil })
		seen("on:" + e.Action() + ":" + v.(string))
		return nil
	}
	em.On("issues.opened", onHandler)
	em.On("issues", onHandler)
	em.OnAny(func(ctx context.Context, e Event) error {
		v, _ := e.Memo(memoKey, func() (any, error) { memoCalls.Add(1); return e.Action(), nil })
		seen("any:" + e.Action() + ":" + v.(string))
		return nil
	})
	if err := em.Receive(context.Background(), Event{Name: "issues", Payload: []byte(`{"action":"opened"}`)}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	want := []string{"any:opened:opened", "on:transformed:transformed", "on:transformed:transformed"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if calls.Load() != 1 {
		t.Errorf("transform ran %d times, want once per delivery", calls.Load())
	}
	if memoCalls.Load() != 2 {
		t.Errorf("memo computed %d times, want 2 (one per Event: delivered and transformed)", memoCalls.Load())
	}
	// OnAny handlers alone: no transform.
	calls.Store(0)
	got = nil
	if err := em.Receive(context.Background(), Event{Name: "push", Payload: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 0 {
		t.Error("transform ran with no On handler to feed")
	}
}

func TestTransformError(t *testing.T) {
	errT := errors.New("transform failed")
	for _, tt := range []struct {
		name      string
		transform func(context.Context, Event) (Event, error)
		want      string
	}{
		{"error", func(context.Context, Event) (Event, error) { return Event{}, errT }, "emitter: transform: transform failed"},
		{"panic", func(context.Context, Event) (Event, error) { panic("oops") }, "emitter: transform: emitter: transform panicked: oops"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			em := New(Options{Transform: tt.transform})
			var onRan, anyRan atomic.Bool
			em.On("push", func(context.Context, Event) error { onRan.Store(true); return nil })
			em.On("push", func(context.Context, Event) error { onRan.Store(true); return nil })
			em.OnAny(func(context.Context, Event) error { anyRan.Store(true); return nil })
			err := em.Receive(context.Background(), Event{Name: "push", Payload: []byte(`{}`)})
			var herr *Error
			if !errors.As(err, &herr) || len(herr.Errors) != 2 {
				t.Fatalf("err = %v, want an *Error with one error per On handler", err)
			}
			for _, e := range herr.Errors {
				if e.Error() != tt.want {
					t.Errorf("error %q, want %q", e, tt.want)
				}
			}
			if tt.name == "error" && !errors.Is(err, errT) {
				t.Error("errors.Is does not find the transform's error")
			}
			if onRan.Load() || !anyRan.Load() {
				t.Errorf("On ran: %v (want false); OnAny ran: %v (want true)", onRan.Load(), anyRan.Load())
			}
		})
	}
}

func TestRemoveListener(t *testing.T) {
	type step struct {
		name    string
		handle  string // which handle
		removed bool
	}
	tests := []struct {
		name  string
		steps []step
		want  []string // handlers that run for issues.opened afterwards
	}{
		{"nothing removed", nil, []string{"any", "dup", "dup", "errs", "issues", "opened"}},
		{"by name", []step{{"issues", "issues", true}}, []string{"any", "dup", "dup", "errs", "opened"}},
		{"event.action", []step{{"issues.opened", "opened", true}}, []string{"any", "dup", "dup", "errs", "issues"}},
		{"most recent of a duplicate", []step{{"issues", "dup", true}}, []string{"any", "dup", "errs", "issues", "opened"}},
		{"both duplicates", []step{{"issues", "dup", true}, {"issues", "dup", true}, {"issues", "dup", false}}, []string{"any", "errs", "issues", "opened"}},
		{"star", []step{{"*", "any", true}, {"*", "any", false}}, []string{"dup", "dup", "issues", "opened"}}, // nothing fails: no "errs"
		{"error", []step{{"error", "errs", true}}, []string{"any", "dup", "dup", "issues", "opened"}},
		{"wrong name", []step{{"push", "issues", false}, {"*", "issues", false}, {"error", "any", false}, {"issues", "any", false}}, []string{"any", "dup", "dup", "errs", "issues", "opened"}},
		{"empty name and nil", []step{{"", "issues", false}, {"issues", "nil", false}}, []string{"any", "dup", "dup", "errs", "issues", "opened"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rec recorder
			var em Emitter // the zero value works
			fail := errors.New("fail")
			handles := map[string]*Listener{
				"issues": em.On("issues", rec.handler("issues")),
				"opened": em.On("issues.opened", rec.handler("opened")),
				"dup":    em.OnNames([]string{"issues", "issues"}, rec.handler("dup")),
				"any": em.OnAny(func(ctx context.Context, e Event) error {
					rec.handler("any")(ctx, e)
					return fail
				}),
				"nil": nil,
			}
			told := make(chan struct{}, 1)
			handles["errs"] = em.OnError(func(context.Context, *Error) { rec.handler("errs")(nil, Event{}); told <- struct{}{} })
			for _, s := range tt.steps {
				if got := em.RemoveListener(s.name, handles[s.handle]); got != s.removed {
					t.Fatalf("RemoveListener(%q, %s) = %v, want %v", s.name, s.handle, got, s.removed)
				}
			}
			em.Receive(context.Background(), Event{Name: "issues", Payload: []byte(`{"action":"opened"}`)})
			em.Close(context.Background()) // waits for error handlers
			if diff := cmp.Diff(tt.want, rec.sorted()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestRemoveListenerNames removes one handle from several names at once, as
// OnNames registered it, the most recent registration under each name.
func TestRemoveListenerNames(t *testing.T) {
	tests := []struct {
		name    string
		remove  []string
		removed int
		want    []string // handlers that run for issues.opened afterwards
	}{
		{"none", nil, 0, []string{"both", "both", "both"}},
		{"all three", []string{"issues", "issues.opened", "issues"}, 3, nil},
		{"one of the duplicates", []string{"issues"}, 1, []string{"both", "both"}},
		{"unknown and empty names", []string{"push", "", "*", "error"}, 0, []string{"both", "both", "both"}},
		{"more than registered", []string{"issues.opened", "issues.opened"}, 1, []string{"both", "both"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rec recorder
			var em Emitter
			l := em.OnNames([]string{"issues", "issues.opened", "issues"}, rec.handler("both"))
			if got := em.RemoveListenerNames(tt.remove, l); got != tt.removed {
				t.Fatalf("RemoveListenerNames(%q) = %d, want %d", tt.remove, got, tt.removed)
			}
			if err := em.Receive(context.Background(), Event{Name: "issues", Payload: []byte(`{"action":"opened"}`)}); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, rec.sorted()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	var em Emitter
	if got := em.RemoveListenerNames([]string{"issues"}, nil); got != 0 {
		t.Errorf("RemoveListenerNames with a nil handle = %d, want 0", got)
	}
}

// TestRegisterDuringDispatch registers and removes handlers, from handlers and
// from other goroutines, while deliveries run: -race checks it.
func TestRegisterDuringDispatch(t *testing.T) {
	em := New(Options{})
	var count atomic.Int64
	em.OnAny(func(ctx context.Context, e Event) error {
		l := em.On("push", func(context.Context, Event) error { count.Add(1); return nil })
		em.RemoveListener("push", l)
		return nil
	})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				if g%2 == 0 {
					l := em.On(fmt.Sprintf("push.%d", i%3), func(context.Context, Event) error { return nil })
					em.OnAny(func(context.Context, Event) error { return nil })
					em.RemoveListener(fmt.Sprintf("push.%d", i%3), l)
				} else if err := em.Receive(context.Background(), Event{Name: "push", Payload: []byte(`{"action":"1"}`)}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
}

func TestUnknownNameWarning(t *testing.T) {
	var logs bytes.Buffer
	em := New(Options{
		Logger:     slog.New(slog.NewTextHandler(&logs, nil)),
		KnownEvent: func(name string) bool { return name == "push" || name == "issues.opened" },
	})
	ran := false
	em.On("push", func(context.Context, Event) error { return nil })
	em.OnNames([]string{"issues.opened", "brand_new"}, func(context.Context, Event) error { ran = true; return nil })
	if strings.Count(logs.String(), "unknown event name") != 1 || !strings.Contains(logs.String(), "name=brand_new") {
		t.Fatalf("log: %s", logs.String())
	}
	if err := em.Receive(context.Background(), Event{Name: "brand_new", Payload: []byte(`{}`)}); err != nil || !ran {
		t.Fatalf("unknown name not registered: err %v, ran %v", err, ran)
	}
}

func TestAction(t *testing.T) {
	tests := []struct {
		payload string
		want    string
	}{
		{`{"action":"opened"}`, "opened"},
		{`{"action":"a","action":"b"}`, "b"},
		{`{"x":{"action":"nested"}}`, ""},
		{`{"action":5}`, ""},
		{`{"action":"\u00e9"}`, "é"},
		{`[{"action":"x"}]`, ""},
		{`not json`, ""},
		{``, ""},
	}
	for _, tt := range tests {
		e := Event{Name: "x", Payload: []byte(tt.payload)}
		if got := e.Action(); got != tt.want {
			t.Errorf("Action(%s) = %q, want %q", tt.payload, got, tt.want)
		}
	}
	// Inside Receive, Action uses the scan; a replaced Payload is scanned afresh.
	em := New(Options{})
	em.On("issues", func(ctx context.Context, e Event) error {
		if got := e.Action(); got != "opened" {
			t.Errorf("Action = %q", got)
		}
		e.Payload = []byte(`{"action":"closed"}`)
		if got := e.Action(); got != "closed" {
			t.Errorf("Action after replacing the payload = %q", got)
		}
		e.Payload = e.Payload[:0]
		if got := e.Action(); got != "" {
			t.Errorf("Action of an empty payload = %q", got)
		}
		return nil
	})
	if err := em.Receive(context.Background(), Event{Name: "issues", Payload: []byte(`{"action":"opened"}`)}); err != nil {
		t.Fatal(err)
	}
}

// TestAllocsIndependentOfPayloadSize checks that a delivery costs the same number
// of allocations whatever its size.
func TestAllocsIndependentOfPayloadSize(t *testing.T) {
	for _, handlers := range []int{1, 10} {
		em := New(Options{})
		for range handlers {
			em.On("issues", func(context.Context, Event) error { return nil })
		}
		var counts []float64
		for _, size := range []int{64, 64 << 10, 1 << 20} {
			ev := Event{Name: "issues", Payload: payloadOfSize(size)}
			counts = append(counts, testing.AllocsPerRun(20, func() {
				if err := em.Receive(context.Background(), ev); err != nil {
					t.Fatal(err)
				}
			}))
		}
		if counts[0] != counts[1] || counts[1] != counts[2] {
			t.Errorf("%d handlers: allocations per delivery by size: %v", handlers, counts)
		}
	}
}

func payloadOfSize(n int) []byte {
	b := []byte(`{"action":"opened","pad":"`)
	for len(b) < n-2 {
		b = append(b, 'x')
	}
	return append(b, `"}`...)
}
