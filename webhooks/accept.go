package webhooks

import (
	"fmt"
	"net/http"
	"path"
	"strings"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/internal/clip"
	"forgehooks.dev/forgehooks/internal/deliverylog"
)

// Accept is a filter of verified deliveries by event name, for
// MiddlewareOptions.Accept: a delivery no pattern matches is answered 200
// "ignored", and is neither stored nor run. Make it with ParseAccept.
type Accept struct {
	patterns []string
}

// ParseAccept returns the filter of patterns, each an event ("issues") or
// an event and action ("issues.opened"), with "*" matching any run of
// characters but dots ("pull_request.*", "*"); a pattern without an action
// accepts every action of its events. It fails for an empty list or pattern
// and a malformed one ("[").
func ParseAccept(patterns []string) (*Accept, error) {
	if len(patterns) == 0 {
		return nil, fmt.Errorf("webhooks: ParseAccept: no pattern")
	}
	a := &Accept{}
	for _, p := range patterns {
		p = strings.TrimSpace(p)
		if p == "" || strings.Count(p, ".") > 1 || strings.Contains(p, "/") {
			return nil, fmt.Errorf("webhooks: ParseAccept: %q: want event or event.action, with * wildcards", p)
		}
		if _, err := path.Match(p, ""); err != nil {
			return nil, fmt.Errorf("webhooks: ParseAccept: %q: %w", p, err)
		}
		a.patterns = append(a.patterns, p)
	}
	return a, nil
}

// Accepts reports whether a delivery of event with action (empty: none)
// passes the filter.
func (a *Accept) Accepts(event, action string) bool {
	for _, p := range a.patterns {
		ev, act, hasAct := strings.Cut(p, ".")
		if ok, _ := path.Match(ev, event); !ok {
			continue
		}
		if !hasAct {
			return true
		}
		if ok, _ := path.Match(act, action); ok {
			return true
		}
	}
	return false
}

// ignored answers a verified delivery that no filter accepts (Accept,
// AcceptHandled) and reports whether it did.
func (m *Middleware) ignored(rw http.ResponseWriter, r *http.Request, d Delivery, oc *outcome) bool {
	if m.accept == nil && !m.acceptHandled {
		return false
	}
	action := emitter.Event{Payload: d.Payload}.Action()
	if m.accept != nil && !m.accept.Accepts(d.Name, action) ||
		m.acceptHandled && !m.w.handlers().Handles(d.Name, action) {
		if oc != nil {
			oc.res.Ignored = true
		}
		deliverylog.SetIgnored(r.Context())
		m.logger.Info("webhooks: delivery ignored: no filter accepts it", "delivery", clip.String(d.ID), "event", clip.String(d.Name), "action", clip.String(action), "tenant", d.Tenant)
		writeText(rw, http.StatusOK, "ignored\n")
		return true
	}
	return false
}
