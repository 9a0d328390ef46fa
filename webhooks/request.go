package webhooks

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/internal/clip"
	"forgehooks.dev/forgehooks/internal/deliverylog"
)

var requiredHeaders = [...]string{HeaderEvent, HeaderSignature, HeaderDelivery}

// serve handles a request for the middleware's path: it checks the method,
// the content type and the headers, reads and verifies the body, and hands
// the delivery to the inbox or to its handlers. oc, when not nil, gathers the
// Result for OnResult.
func (m *Middleware) serve(rw http.ResponseWriter, r *http.Request, oc *outcome) {
	var start time.Time
	if oc != nil {
		start = oc.start
	} else {
		start = time.Now()
	}
	if r.Method != http.MethodPost {
		m.reject(rw, r, http.StatusNotFound, "Unknown route: "+r.Method+" "+requestURI(r), slog.LevelInfo, "method is not POST")
		return
	}
	keys, tenant := m.w.keyring(), ""
	var tk *tenantKeys
	if m.w.tenants != nil {
		var ok bool
		tk, ok = m.tenantOf(rw, r)
		if !ok {
			return
		}
		keys, tenant = tk.keys, tk.name
		deliverylog.SetTenant(r.Context(), tenant)
		if oc != nil {
			oc.res.Tenant = tenant
		}
	}
	if cts := r.Header.Values("Content-Type"); len(cts) != 1 || !isJSON(cts[0]) {
		m.reject(rw, r, http.StatusUnsupportedMediaType, msgUnsupportedType, slog.LevelWarn, "content type is not application/json", "content_type", clip.String(strings.Join(cts, ", ")))
		return
	}
	var missing, repeated []string
	for _, h := range requiredHeaders {
		switch vs := r.Header.Values(h); {
		case len(vs) == 0 || len(vs) == 1 && strings.TrimSpace(vs[0]) == "":
			missing = append(missing, strings.ToLower(h))
		case len(vs) > 1:
			repeated = append(repeated, strings.ToLower(h))
		}
	}
	if missing != nil {
		m.reject(rw, r, http.StatusBadRequest, "Required headers missing: "+strings.Join(missing, ", "), slog.LevelWarn, "required headers missing")
		return
	}
	if repeated != nil {
		m.reject(rw, r, http.StatusBadRequest, "Headers sent more than once, ambiguous: "+strings.Join(repeated, ", "), slog.LevelWarn, "required headers repeated")
		return
	}
	id := strings.TrimSpace(r.Header.Get(HeaderDelivery))
	if !validID(id) {
		// The id is not logged: it is what is wrong, and may be anything.
		m.reject(rw, r, http.StatusBadRequest, msgBadID, slog.LevelWarn, "delivery id is not an id", "id_bytes", len(id))
		return
	}
	d := Delivery{
		ID:         id,
		Name:       strings.TrimSpace(r.Header.Get(HeaderEvent)),
		Signature:  strings.TrimSpace(r.Header.Get(HeaderSignature)),
		Header:     r.Header,
		ReceivedAt: start,
		Tenant:     tenant,
	}
	if r.ContentLength > m.max {
		m.tooLarge(rw, r, d)
		return
	}

	// Read the body once, hashing it with the primary secret on the way in; the
	// additional secrets are tried on the same bytes only if that fails. The
	// body is held in the budget of unverified bodies until it is verified.
	digest := keys.digest()
	defer keys.release(digest)
	res := m.unverified.Reserve(clientAddr(r.RemoteAddr), start.Add(budgetWait))
	defer res.Release()
	var pace pacer
	body, err := readBody(r.Body, r.ContentLength, m.max, digest, &res, pace.start(rw, r, m.minRate, m.window, start))
	switch {
	case err == nil:
	case isTooLarge(err):
		m.tooLarge(rw, r, d)
		return
	case errors.Is(err, errBudget):
		rw.Header().Set("Connection", "close") // the body stays unread
		m.unavailable(rw, r, msgUnverifiedBudget, "unverified bodies over budget", "delivery", clip.String(d.ID), "event", clip.String(d.Name), "content_length", r.ContentLength, "held", res.Held(), "max_unverified_bytes", m.unverified.Max())
		return
	case errors.Is(err, errSlowBody):
		rw.Header().Set("Connection", "close") // the body stays unread
		m.reject(rw, r, http.StatusRequestTimeout, msgSlowBody, slog.LevelWarn, "body below the minimum rate", "delivery", clip.String(d.ID), "event", clip.String(d.Name), "content_length", r.ContentLength, "min_body_rate", m.minRate)
		return
	case err != nil:
		m.reject(rw, r, http.StatusBadRequest, "Could not read the request body", slog.LevelWarn, "body read failed", "delivery", clip.String(d.ID), "error", err)
		return
	}
	d.Payload = body
	matched := keys.match(digest, body, d.Signature)
	res.Release() // verified or not: from here on other budgets count the body
	if !matched {
		ctx := context.WithoutCancel(r.Context())
		if m.inline {
			ctx = emitter.WaitForErrorHandlers(ctx)
		}
		m.w.mismatch(ctx, d, nil)
		m.reject(rw, r, http.StatusBadRequest, msgMismatch, slog.LevelWarn, "signature mismatch", "delivery", clip.String(d.ID), "event", clip.String(d.Name), "tenant", tenant)
		return
	}
	if tk != nil {
		m.w.tenants.verified(tk) // its key is no longer one anyone could make up
	}
	if oc != nil {
		oc.res.Verified, oc.res.Payload = true, body
	}
	if m.ignored(rw, r, d, oc) {
		return
	}
	if m.inbox != nil {
		m.enqueue(rw, r, d)
		return
	}

	// The delivery is counted for Close before any answer can acknowledge it,
	// so that a 202 is never sent for handlers a shutdown would not wait for;
	// only now, after the body was read and verified, so that a slow or
	// forged request never holds a place among MaxInFlight.
	f, err := m.w.inFlight.take(d.ID, int64(len(d.Payload)), m.maxInFlight, m.maxRunning)
	switch {
	case errors.Is(err, errClosedTracker):
		m.unavailable(rw, r, msgShuttingDown, "closed", "delivery", clip.String(d.ID))
		return
	case err != nil:
		m.unavailable(rw, r, msgBusy, "too many deliveries in flight", "delivery", clip.String(d.ID), "event", clip.String(d.Name), "in_flight", m.InFlight(), "max_in_flight", m.maxInFlight, "max_running_bytes", m.maxRunning)
		return
	}

	// The handlers outlive the request when they take longer than the timeout,
	// so they must not see its cancellation; Close waits for them.
	ctx := context.WithoutCancel(r.Context())
	if m.inline {
		// Nothing outlives the request: the handlers see its deadline (a
		// function's timeout) and its end.
		ctx = r.Context()
	}
	if oc != nil {
		oc.left.Add(1) // the handlers' end, as well as the answer
	}
	if m.inline {
		m.receiveBeforeAnswer(ctx, rw, r, d, f, oc)
		return
	}
	if m.timeout < 0 || r.ProtoMajor == 1 && canFlush(rw) {
		m.receiveInline(ctx, rw, r, d, f, oc)
		return
	}
	m.receiveHandedOff(ctx, rw, r, d, f, oc)
}

// isTooLarge reports whether err says that a body passed a limit: readBody's
// own or an http.MaxBytesReader's. Apart from serve, so that the target of
// errors.As is made only when there is an error.
func isTooLarge(err error) bool {
	var maxErr *http.MaxBytesError
	return errors.Is(err, errTooLarge) || errors.As(err, &maxErr)
}

// MaxDeliveryIDLen is the longest X-Forge-Delivery accepted: the forge's ids
// are UUIDs (36 bytes); anything much longer is not one of its ids.
const MaxDeliveryIDLen = 128

// validID reports whether id looks like a delivery id: at most
// MaxDeliveryIDLen bytes of printable ASCII. Anything else is refused before
// it is stored (an inbox remembers every id for its duplicate window) or
// logged.
func validID(id string) bool {
	if len(id) > MaxDeliveryIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x20 || id[i] > 0x7e {
			return false
		}
	}
	return true
}

// msgNoSecrets answers a delivery whose tenant's secrets could not be found.
const msgNoSecrets = "Could not find the delivery's secrets: try again later"

// tenantOf resolves r's tenant, or answers r: 404 as for an unknown path
// when its key names no tenant, 503 when the SecretSource fails.
func (m *Middleware) tenantOf(rw http.ResponseWriter, r *http.Request) (*tenantKeys, bool) {
	ts := m.w.tenants
	key, ok := ts.KeyOf(r)
	var tk *tenantKeys
	err := ErrUnknownTenant
	if ok {
		tk, err = ts.resolve(r.Context(), key)
	}
	switch {
	case err == nil:
		return tk, true
	case errors.Is(err, ErrUnknownTenant) && ts.notFound != nil:
		if sw, ok := rw.(*statusWriter); ok && sw.oc.reason == "" {
			sw.oc.reason = "unknown tenant"
		}
		m.logger.Info("webhooks: rejected request: unknown tenant", "status", http.StatusNotFound, "method", r.Method, "path", clip.String(requestURI(r)), "remote", r.RemoteAddr)
		ts.notFound.ServeHTTP(rw, r)
	case errors.Is(err, ErrUnknownTenant):
		// The answer of an unknown path, byte for byte; the key is not
		// logged (it may be anything), its size is.
		m.reject(rw, r, http.StatusNotFound, "Unknown route: "+r.Method+" "+requestURI(r), slog.LevelInfo, "unknown tenant", "key_bytes", len(key.Path)+len(key.HookID)+len(key.TargetType)+len(key.TargetID))
	default:
		m.unavailable(rw, r, msgNoSecrets, "tenant lookup failed", "error", err)
	}
	return nil, false
}
