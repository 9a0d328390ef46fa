package emitter

import (
	"context"
	"fmt"
	"testing"

	"forgehooks.dev/forgehooks/internal/corpus"
)

// BenchmarkReceive dispatches a real issues.opened payload, and a 1 MiB one, to
// 1 and 10 raw handlers. Allocations per delivery must not grow with the size.
func BenchmarkReceive(b *testing.B) {
	var body []byte
	for _, ex := range corpus.Public() {
		if ex.Name() == "issues.opened" {
			body = ex.Body
			break
		}
	}
	for _, payload := range []struct {
		name string
		body []byte
	}{{"issues.opened", body}, {"1MiB", payloadOfSize(1 << 20)}} {
		for _, handlers := range []int{1, 10} {
			b.Run(fmt.Sprintf("payload=%s/handlers=%d", payload.name, handlers), func(b *testing.B) {
				em := New(Options{})
				for i := range handlers {
					name := "issues"
					if i%2 == 1 {
						name = "issues.opened"
					}
					em.On(name, func(context.Context, Event) error { return nil })
				}
				ev := Event{ID: "1", Name: "issues", Payload: payload.body}
				ctx := context.Background()
				b.SetBytes(int64(len(payload.body)))
				b.ReportAllocs()
				for b.Loop() {
					if err := em.Receive(ctx, ev); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
