package emitter

import (
	"context"
	"errors"
	"slices"
	"testing"

	"forgehooks.dev/forgehooks/internal/corpus"
	"forgehooks.dev/forgehooks/internal/vouched"
)

// TestReceiveVouched: a payload that the context vouches for (as the
// inbox's workers do for a sealed delivery its intake validated) is
// dispatched by the vouched action without a scan, and Action says it; a
// word for another slice counts for nothing: the payload is scanned and
// refused when it is not a JSON object, as without one.
func TestReceiveVouched(t *testing.T) {
	t.Parallel()
	body := []byte(`{"action":"opened"}`)
	notJSON := []byte(`not json`)
	tests := []struct {
		name    string
		ctx     context.Context
		payload []byte
		ran     []string // "handler:action"
		err     error
	}{
		{"vouched", vouched.With(context.Background(), body, "opened"), body, []string{"issues:opened", "opened:opened"}, nil},
		// The word is taken as it is: proof that nothing scanned the body.
		{"vouched another action", vouched.With(context.Background(), body, "closed"), body, []string{"closed:closed", "issues:closed"}, nil},
		{"vouched no action", vouched.With(context.Background(), body, ""), body, []string{"issues:"}, nil},
		{"a word for a copy", vouched.With(context.Background(), append([]byte(nil), notJSON...), ""), notJSON, nil, ErrInvalidPayload},
		{"no word", context.Background(), body, []string{"issues:opened", "opened:opened"}, nil},
		{"no word, not JSON", context.Background(), notJSON, nil, ErrInvalidPayload},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var r recorder
			em := New(Options{})
			for _, name := range []string{"issues", "issues.opened", "issues.closed"} {
				label := name[len("issues"):]
				if label == "" {
					label = "issues"
				} else {
					label = label[1:]
				}
				em.On(name, func(ctx context.Context, e Event) error {
					return r.handler(label+":"+e.Action())(ctx, e)
				})
			}
			err := em.Receive(tt.ctx, Event{ID: "1", Name: "issues", Payload: tt.payload})
			if !errors.Is(err, tt.err) {
				t.Fatalf("Receive: %v, want %v", err, tt.err)
			}
			if got := r.sorted(); !slices.Equal(got, tt.ran) {
				t.Errorf("ran %q, want %q", got, tt.ran)
			}
		})
	}
}

// BenchmarkReceiveVouched is BenchmarkReceive's issues.opened with one
// handler, with and without the context's word on the payload.
func BenchmarkReceiveVouched(b *testing.B) {
	var body []byte
	for _, ex := range corpus.Public() {
		if ex.Name() == "issues.opened" {
			body = ex.Body
			break
		}
	}
	em := New(Options{})
	em.On("issues", func(context.Context, Event) error { return nil })
	ev := Event{ID: "1", Name: "issues", Payload: body}
	for _, c := range []struct {
		name string
		ctx  context.Context
	}{{"scanned", context.Background()}, {"vouched", vouched.With(context.Background(), body, "opened")}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if err := em.Receive(c.ctx, ev); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
