// Package deliverylog carries, from a delivery's handlers to the code that
// logs its line, what the line names besides the headers: the action, the
// repository and the sender, found in one pass over the payload. The receiver
// and the CLI's relay log deliveries so.
package deliverylog

import (
	"context"
	"sync"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/internal/clip"
	"forgehooks.dev/forgehooks/internal/jsonscan"
)

// Info is what Note found of one delivery. It is safe for concurrent use.
type Info struct {
	mu                         sync.Mutex
	action, repository, sender string
	tenant                     string
	ignored                    bool
}

type key struct{}

// With returns ctx carrying a new, empty Info, for the handlers' Note to fill.
func With(ctx context.Context) (context.Context, *Info) {
	info := &Info{}
	return context.WithValue(ctx, key{}, info), info
}

// paths are the strings of a payload that a delivery's line names.
var paths = []jsonscan.Path{{"repository", "full_name"}, {"sender", "login"}}

// Note is a handler (register it with OnAny) that fills the Info of ctx, if
// any, with e's action, repository and sender, each clipped: a payload is
// hostile input.
func Note(ctx context.Context, e emitter.Event) error {
	info, _ := ctx.Value(key{}).(*Info)
	if info == nil {
		return nil
	}
	repository, sender := Find(e.Payload)
	info.mu.Lock()
	defer info.mu.Unlock()
	info.action = clip.String(e.Action())
	info.repository, info.sender = repository, sender
	return nil
}

// Find returns the repository ("repository.full_name") and the sender
// ("sender.login") of payload, each clipped; "" for what it lacks.
func Find(payload []byte) (repository, sender string) {
	var found [2]jsonscan.Result
	_ = jsonscan.Lookup(payload, paths, found[:])
	return clip.String(found[0].String(payload)), clip.String(found[1].String(payload))
}

// Fields returns what Note found: empty strings before it ran, or for what
// the payload lacks.
func (i *Info) Fields() (action, repository, sender string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.action, i.repository, i.sender
}

// SetTenant records, in the Info of ctx if any, the tenant the middleware
// resolved the delivery to.
func SetTenant(ctx context.Context, tenant string) {
	if info, _ := ctx.Value(key{}).(*Info); info != nil {
		info.mu.Lock()
		info.tenant = tenant
		info.mu.Unlock()
	}
}

// Tenant returns what SetTenant recorded: "" without tenants, or for a
// request that named none.
func (i *Info) Tenant() string {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.tenant
}

// SetIgnored records, in the Info of ctx if any, that no filter accepted the
// delivery (it was answered 200 "ignored").
func SetIgnored(ctx context.Context) {
	if info, _ := ctx.Value(key{}).(*Info); info != nil {
		info.mu.Lock()
		info.ignored = true
		info.mu.Unlock()
	}
}

// Ignored reports what SetIgnored recorded.
func (i *Info) Ignored() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.ignored
}
