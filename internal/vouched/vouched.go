// Package vouched carries, in a context, a payload that its sender has
// validated already (one JSON object) together with its top-level action,
// so that the emitter dispatches it without scanning it a second time. Only
// code of this module can vouch: the key is this package's, so a context
// from anywhere else never carries one. The inbox's workers vouch for a
// stored delivery whose seal proves it unchanged since its intake scanned
// it.
package vouched

import "context"

type key struct{}

// vouching is a context that vouches for one payload: the first byte and
// length of its slice, so that a payload replaced on the way (by a
// receiver of one's own between the inbox and the emitter, say) is not
// taken for it. It is context.WithValue and its value in one allocation.
type vouching struct {
	context.Context
	first  *byte
	n      int
	action string
}

func (c *vouching) Value(k any) any {
	if k == (key{}) {
		return c
	}
	return c.Context.Value(k)
}

// With returns a context that vouches that data is exactly one JSON object
// whose top-level "action" member is action: a string, decoded, the last
// one counting ("" when there is none or it is not a string), as
// jsonscan.Scan finds it. data must not be empty, nor modified afterwards.
func With(ctx context.Context, data []byte, action string) context.Context {
	if len(data) == 0 {
		return ctx
	}
	return &vouching{Context: ctx, first: &data[0], n: len(data), action: action}
}

// Action returns the action that ctx vouches for when data is the very
// slice vouched for (same first byte, same length); ok is false otherwise,
// and the caller validates data itself.
func Action(ctx context.Context, data []byte) (action string, ok bool) {
	if len(data) == 0 {
		return "", false
	}
	v, _ := ctx.Value(key{}).(*vouching)
	if v == nil || v.first != &data[0] || v.n != len(data) {
		return "", false
	}
	return v.action, true
}
