package webhooks

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestContextWithDelivery checks that the context ContextWithDelivery returns
// behaves as context.WithValue's would: it carries the delivery, the innermost
// one when nested, passes other keys, the cancellation and its cause, and the
// deadline through from its parent, and works as a parent of its own.
func TestContextWithDelivery(t *testing.T) {
	type otherKey struct{}
	errCause := errors.New("cause")
	parent, cancel := context.WithCancelCause(context.WithValue(context.Background(), otherKey{}, "other"))
	deadline := time.Now().Add(time.Hour)
	parentD, cancelD := context.WithDeadline(parent, deadline)
	defer cancelD()
	outer := ContextWithDelivery(parentD, Delivery{ID: "outer", Name: "push"})
	inner := ContextWithDelivery(outer, Delivery{ID: "inner", Name: "issues", Attempt: 2})
	child, cancelChild := context.WithCancel(inner)
	defer cancelChild()
	stopped := make(chan struct{})
	context.AfterFunc(inner, func() { close(stopped) })

	tests := []struct {
		name   string
		ctx    context.Context
		wantID string
	}{
		{"outer", outer, "outer"},
		{"inner", inner, "inner"},
		{"child", child, "inner"},
	}
	for _, tt := range tests {
		d, ok := DeliveryFrom(tt.ctx)
		if !ok || d.ID != tt.wantID {
			t.Errorf("%s: DeliveryFrom = %q, %v; want %q", tt.name, d.ID, ok, tt.wantID)
		}
		if v := tt.ctx.Value(otherKey{}); v != "other" {
			t.Errorf("%s: Value(otherKey) = %v, want the parent's", tt.name, v)
		}
		if got, ok := tt.ctx.Deadline(); !ok || !got.Equal(deadline) {
			t.Errorf("%s: Deadline = %v, %v; want the parent's", tt.name, got, ok)
		}
	}
	if _, ok := DeliveryFrom(parentD); ok {
		t.Error("DeliveryFrom(parent) found a delivery")
	}
	if d, _ := DeliveryFrom(inner); d.Attempt != 2 || d.Name != "issues" {
		t.Errorf("DeliveryFrom(inner) = %+v", d)
	}

	cancel(errCause)
	select {
	case <-child.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the child of a delivery's context was not cancelled with its parent")
	}
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("AfterFunc on a delivery's context did not run on cancellation")
	}
	for _, ctx := range []context.Context{outer, inner, child} {
		if !errors.Is(ctx.Err(), context.Canceled) || context.Cause(ctx) != errCause {
			t.Errorf("Err = %v, Cause = %v; want Canceled and the parent's cause", ctx.Err(), context.Cause(ctx))
		}
	}
}
