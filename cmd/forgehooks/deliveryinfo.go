package main

import (
	"context"
	"encoding/json"
	"strings"
	"sync"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/internal/jsonscan"
)

// deliveryInfo is what the handlers learn of a verified delivery, for relay's
// log line: the context carries it to recordDelivery.
type deliveryInfo struct {
	mu                       sync.Mutex
	action, repository, user string
}

type infoKey struct{}

// logPaths are the strings of a payload that a delivery's line names.
var logPaths = []jsonscan.Path{{"repository", "full_name"}, {"sender", "login"}}

// recordDelivery is relay's handler: it notes the delivery's action,
// repository and sender for the log line.
func recordDelivery(ctx context.Context, e emitter.Event) error {
	info, _ := ctx.Value(infoKey{}).(*deliveryInfo)
	if info == nil {
		return nil
	}
	var found [2]jsonscan.Result
	_ = jsonscan.Lookup(e.Payload, logPaths, found[:])
	info.mu.Lock()
	defer info.mu.Unlock()
	info.action = e.Action()
	info.repository = found[0].String(e.Payload)
	info.user = found[1].String(e.Payload)
	return nil
}

// reason is the error message of a JSON error answer, or its text.
func reason(body []byte) string {
	var e struct{ Error string }
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		return e.Error
	}
	return strings.TrimSpace(string(body))
}
