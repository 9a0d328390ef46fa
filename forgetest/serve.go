package forgetest

import (
	"bytes"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// docURL is the documentation_url the forge's errors carry.
const docURL = "https://docs.example/rest"

// recorder captures the status of an answer for the request log.
type recorder struct {
	http.ResponseWriter
	status       int
	operation    string
	installation int64
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	rec := &recorder{ResponseWriter: w}
	now := s.now()
	var body []byte
	defer func() {
		s.mu.Lock()
		s.requests = append(s.requests, Request{
			Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), At: now, Status: rec.status,
			Operation: rec.operation, Installation: rec.installation, Authorization: r.Header.Get("Authorization"), Body: body,
		})
		s.mu.Unlock()
	}()
	path, ok := strings.CutPrefix(r.URL.Path, s.opts.BasePath)
	if !ok {
		s.violate("%s %s: not under the API's base path %s", r.Method, r.URL.Path, s.opts.BasePath)
		s.errorJSON(rec, nil, http.StatusNotFound, "Not Found")
		return
	}
	route, params := s.desc.match(path)
	if route == nil {
		s.violate("%s %s: no such path in the description", r.Method, r.URL.Path)
		s.errorJSON(rec, nil, http.StatusNotFound, "Not Found")
		return
	}
	op := route.ops[r.Method]
	if op == nil {
		s.violate("%s %s: no %s operation on %s", r.Method, r.URL.Path, r.Method, route.template)
		s.errorJSON(rec, nil, http.StatusNotFound, "Not Found")
		return
	}
	rec.operation = op.OperationID
	body, msg := s.readBody(r, op)
	if msg == "" {
		msg = s.checkRequest(r, op, params)
	}
	if msg != "" {
		s.violate("%s %s (%s): %s", r.Method, r.URL.Path, op.OperationID, msg)
		s.errorJSON(rec, op, http.StatusUnprocessableEntity, msg)
		return
	}
	if r.Header.Get("User-Agent") == "" {
		s.violate("%s %s: no User-Agent header", r.Method, r.URL.Path)
		s.errorJSON(rec, op, http.StatusForbidden, "Request forbidden by administrative rules. Please make sure your request has a User-Agent header.")
		return
	}
	if s.appOperation(rec, r, op, params, body, now) {
		return
	}
	if !strings.Contains(route.template, "/deliveries") {
		s.botOperation(rec, r, op, params, body, now)
		return
	}
	key := hookKey(route.template, params)
	if msg := s.authorize(r, key, now); msg != "" {
		s.errorJSON(rec, op, http.StatusUnauthorized, msg)
		return
	}
	if !s.primaryLimit(rec, op, now) || (r.Method == http.MethodPost && !s.secondaryLimit(rec, op, now)) {
		return
	}
	if s.fault(rec, r) {
		return
	}
	s.mu.Lock()
	intercept := s.intercept
	h := s.hooks[key]
	s.mu.Unlock()
	if intercept != nil && intercept(rec, r) {
		return
	}
	if h == nil {
		s.errorJSON(rec, op, http.StatusNotFound, "Not Found")
		return
	}
	switch {
	case strings.HasSuffix(route.template, "/deliveries"):
		s.list(rec, r, op, h)
	case strings.HasSuffix(route.template, "/attempts"):
		s.redeliver(rec, op, key, params["delivery_id"])
	default:
		s.detail(rec, op, h, params["delivery_id"])
	}
}

// maxRequestBody bounds a request body the fake reads.
const maxRequestBody = 1 << 20

// readBody reads the request's body and checks it against the operation's
// request body schema; it returns the message of a departure, or "".
func (s *Server) readBody(r *http.Request, op *operation) ([]byte, string) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody+1))
	if err != nil {
		return nil, "reading the body: " + err.Error()
	}
	if len(body) > maxRequestBody {
		return nil, fmt.Sprintf("body over %d bytes", maxRequestBody)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		if op.RequestBody != nil && op.RequestBody.Required {
			return nil, "a JSON body is required"
		}
		return nil, ""
	}
	if op.RequestBody == nil {
		return nil, "a body was sent to an operation that takes none"
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, "the body is not JSON: " + err.Error()
	}
	if mt, ok := op.RequestBody.Content["application/json"]; ok && mt.Schema != nil {
		if p := s.desc.Validate(mt.Schema, v); len(p) > 0 {
			return nil, "body: " + strings.Join(p, "; ")
		}
	}
	return body, ""
}

func (s *Server) violate(format string, a ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.violations = append(s.violations, fmt.Sprintf(format, a...))
}

// checkRequest checks path and query parameters against the operation.
func (s *Server) checkRequest(r *http.Request, op *operation, params map[string]string) string {
	query := r.URL.Query()
	for name := range query {
		if !slices.ContainsFunc(op.Parameters, func(p *parameter) bool { return p.In == "query" && p.Name == name }) {
			return fmt.Sprintf("query parameter %q is not in the description", name)
		}
	}
	for _, p := range op.Parameters {
		var v string
		var ok bool
		switch p.In {
		case "path":
			v, ok = params[p.Name]
			if ok {
				var err error
				if v, err = url.PathUnescape(v); err != nil {
					return fmt.Sprintf("path parameter %q: %v", p.Name, err)
				}
			}
		case "query":
			vs := query[p.Name]
			if len(vs) > 1 {
				return fmt.Sprintf("query parameter %q given %d times", p.Name, len(vs))
			}
			if ok = len(vs) == 1; ok {
				v = vs[0]
			}
		default:
			continue
		}
		if !ok {
			if p.Required {
				return fmt.Sprintf("%s parameter %q is required", p.In, p.Name)
			}
			continue
		}
		if err := checkParam(p, v); err != nil {
			return err.Error()
		}
		if p.Name == "per_page" {
			if n, _ := strconv.Atoi(v); n < 1 || n > 100 {
				return fmt.Sprintf("per_page %s is not in 1..100", v)
			}
		}
	}
	return ""
}

func hookKey(template string, params map[string]string) string {
	switch {
	case strings.HasPrefix(template, "/app/"):
		return AppHook
	case strings.HasPrefix(template, "/repos/"):
		return fmt.Sprintf("repos/%s/%s/hooks/%s", params["owner"], params["repo"], params["hook_id"])
	default:
		return fmt.Sprintf("orgs/%s/hooks/%s", params["org"], params["hook_id"])
	}
}

// authorize checks the Authorization header: a valid app JWT for the app
// hook, the token for the others. It returns the 401 message, or "".
func (s *Server) authorize(r *http.Request, key string, now time.Time) string {
	auth := r.Header.Get("Authorization")
	if auth == "" {
		return "Requires authentication"
	}
	scheme, cred, ok := strings.Cut(auth, " ")
	if !ok || cred == "" {
		s.violate("%s %s: Authorization header %q is not \"<scheme> <credentials>\"", r.Method, r.URL.Path, scheme)
		return "Bad credentials"
	}
	if key == AppHook {
		if !strings.EqualFold(scheme, "Bearer") {
			return "A JSON web token could not be decoded"
		}
		if err := VerifyJWT(cred, s.opts.PublicKey, s.opts.AppID, now); err != nil {
			return err.Error()
		}
		return ""
	}
	if !strings.EqualFold(scheme, "Bearer") && !strings.EqualFold(scheme, "token") {
		return "Bad credentials"
	}
	if s.opts.Token == "" || subtle.ConstantTimeCompare([]byte(cred), []byte(s.opts.Token)) != 1 {
		return "Bad credentials"
	}
	return ""
}

// VerifyJWT checks an app JWT as the forge does: RS256 over header.claims with
// the app's public key, iss = appID, iat not in the future, exp in the future
// and no more than 10 minutes after iat. It uses the standard library alone.
func VerifyJWT(jwt string, pub *rsa.PublicKey, appID string, now time.Time) error {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return errors.New("A JSON web token could not be decoded")
	}
	enc := base64.RawURLEncoding
	hb, err1 := enc.DecodeString(parts[0])
	cb, err2 := enc.DecodeString(parts[1])
	sig, err3 := enc.DecodeString(parts[2])
	if err := errors.Join(err1, err2, err3); err != nil {
		return errors.New("A JSON web token could not be decoded")
	}
	var header struct {
		Alg string `json:"alg"`
		Typ string `json:"typ"`
	}
	if err := json.Unmarshal(hb, &header); err != nil || header.Alg != "RS256" {
		return fmt.Errorf("JWT algorithm %q, want RS256", header.Alg)
	}
	if pub == nil {
		return errors.New("no app public key configured")
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(pub, crypto.SHA256, sum[:], sig); err != nil {
		return errors.New("A JSON web token could not be decoded: signature invalid")
	}
	var claims struct {
		IAT *int64 `json:"iat"`
		EXP *int64 `json:"exp"`
		ISS any    `json:"iss"`
	}
	if err := json.Unmarshal(cb, &claims); err != nil || claims.IAT == nil || claims.EXP == nil {
		return errors.New("JWT claims: want integer iat and exp")
	}
	if fmt.Sprint(claims.ISS) != appID {
		return fmt.Errorf("JWT iss %v is not app %s", claims.ISS, appID)
	}
	if *claims.IAT > now.Unix() {
		return errors.New("'Issued at' claim ('iat') must be an Integer representing a time in the past")
	}
	if *claims.EXP <= now.Unix() {
		return errors.New("'Expiration time' claim ('exp') is too far in the past")
	}
	if *claims.EXP-*claims.IAT > 600 {
		return errors.New("'Expiration time' claim ('exp') is too far in the future")
	}
	return nil
}

// primaryLimit counts the request against the hourly limit, sets the
// X-RateLimit headers, and answers 403 when none is left.
func (s *Server) primaryLimit(w http.ResponseWriter, op *operation, now time.Time) bool {
	s.mu.Lock()
	if s.window.IsZero() || !now.Before(s.window.Add(time.Hour)) {
		s.window, s.used = now, 0
	}
	reset := s.window.Add(time.Hour)
	ok := s.used < s.opts.RateLimit
	if ok {
		s.used++
	} else {
		s.throttled++
	}
	remaining := s.opts.RateLimit - s.used
	s.mu.Unlock()
	h := w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(s.opts.RateLimit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
	h.Set("X-RateLimit-Used", strconv.Itoa(s.opts.RateLimit-remaining))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	h.Set("X-RateLimit-Resource", "core")
	if !ok {
		s.errorJSON(w, op, http.StatusForbidden, "API rate limit exceeded for installation.")
	}
	return ok
}

// secondaryLimit refuses a content-creating request past SecondaryLimit a
// minute, with 403 and Retry-After.
func (s *Server) secondaryLimit(w http.ResponseWriter, op *operation, now time.Time) bool {
	if s.opts.SecondaryLimit < 0 {
		return true
	}
	s.mu.Lock()
	s.posts = slices.DeleteFunc(s.posts, func(t time.Time) bool { return !t.After(now.Add(-time.Minute)) })
	ok := len(s.posts) < s.opts.SecondaryLimit
	if ok {
		s.posts = append(s.posts, now)
	} else {
		s.throttled++
	}
	s.mu.Unlock()
	if !ok {
		w.Header().Set("Retry-After", strconv.Itoa(int(max(s.opts.SecondaryRetryAfter/time.Second, 1))))
		s.errorJSON(w, op, http.StatusForbidden, "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.")
	}
	return ok
}

func (s *Server) fault(w http.ResponseWriter, r *http.Request) bool {
	s.mu.Lock()
	var f *Fault
	for i, c := range s.faults {
		if (c.Method == "" || c.Method == r.Method) && strings.HasSuffix(r.URL.Path, c.Suffix) {
			f = c
			if c.Times--; c.Times == 0 {
				s.faults = slices.Delete(s.faults, i, i+1)
			}
			break
		}
	}
	s.mu.Unlock()
	if f == nil {
		return false
	}
	for k, vs := range f.Header {
		w.Header().Del(k) // replaces the fake's own X-RateLimit-* headers
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(f.Status)
	w.Write([]byte(f.Body))
	return true
}

// list serves one page of a delivery log, newest first.
func (s *Server) list(w http.ResponseWriter, r *http.Request, op *operation, h *hookLog) {
	q := r.URL.Query()
	per := 30
	if v := q.Get("per_page"); v != "" {
		per, _ = strconv.Atoi(v)
	}
	s.mu.Lock()
	all := slices.Clone(h.attempts)
	s.mu.Unlock()
	slices.SortFunc(all, func(a, b Attempt) int {
		if c := b.DeliveredAt.Compare(a.DeliveredAt); c != 0 {
			return c
		}
		return int(b.ID - a.ID)
	})
	switch q.Get("status") {
	case "success":
		all = slices.DeleteFunc(all, func(a Attempt) bool { return a.StatusCode < 200 || a.StatusCode > 399 })
	case "failure":
		all = slices.DeleteFunc(all, func(a Attempt) bool { return a.StatusCode < 400 || a.StatusCode > 599 })
	}
	start := 0
	if c := q.Get("cursor"); c != "" {
		id, err := strconv.ParseInt(strings.TrimPrefix(c, "v1_"), 10, 64)
		i := slices.IndexFunc(all, func(a Attempt) bool { return a.ID == id })
		if !strings.HasPrefix(c, "v1_") || err != nil || i < 0 {
			s.errorJSON(w, op, http.StatusUnprocessableEntity, "Invalid cursor")
			return
		}
		start = i + 1
	}
	end := min(start+per, len(all))
	items := make([]any, 0, end-start)
	for _, a := range all[start:end] {
		items = append(items, a.item())
	}
	if end < len(all) {
		next := *r.URL
		nq := next.Query()
		nq.Set("cursor", "v1_"+strconv.FormatInt(all[end-1].ID, 10))
		next.RawQuery = nq.Encode()
		w.Header().Set("Link", fmt.Sprintf(`<%s%s>; rel="next"`, s.URL, next.RequestURI()))
	}
	s.answer(w, op, http.StatusOK, items)
}

// detail serves one attempt with its request and response (hook-delivery).
func (s *Server) detail(w http.ResponseWriter, op *operation, h *hookLog, id string) {
	s.mu.Lock()
	a, d, ok := find(h, id)
	receiver := s.receiver
	s.mu.Unlock()
	if !ok {
		s.errorJSON(w, op, http.StatusNotFound, "Not Found")
		return
	}
	m := a.item()
	var payload any
	json.Unmarshal(d.payload, &payload)
	m["url"] = receiver
	m["request"] = map[string]any{
		"headers": map[string]any{"Content-Type": "application/json", "X-Forge-Event": a.Event, "X-Forge-Delivery": a.GUID},
		"payload": payload,
	}
	m["response"] = map[string]any{"headers": map[string]any{}, "payload": nil}
	s.answer(w, op, http.StatusOK, m)
}

func find(h *hookLog, id string) (Attempt, delivery, bool) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return Attempt{}, delivery{}, false
	}
	for _, a := range h.attempts {
		if a.ID == n {
			return a, h.deliveries[a.GUID], true
		}
	}
	return Attempt{}, delivery{}, false
}

// redeliver sends an attempt's delivery again, logs the new attempt, and
// answers 202.
func (s *Server) redeliver(w http.ResponseWriter, op *operation, key, id string) {
	s.mu.Lock()
	a, d, ok := find(s.hooks[key], id)
	s.mu.Unlock()
	if !ok {
		s.errorJSON(w, op, http.StatusNotFound, "Not Found")
		return
	}
	na := s.deliver(a.GUID, d.event, d.payload)
	na.Redelivery = true
	s.mu.Lock()
	s.nextID++
	na.ID = s.nextID
	h := s.hooks[key]
	h.attempts = append(h.attempts, na)
	s.mu.Unlock()
	s.answer(w, op, http.StatusAccepted, map[string]any{})
}

// answer writes v as JSON after checking it against the operation's response
// schema for code; a departure is a fault of the fake, reported as a violation.
func (s *Server) answer(w http.ResponseWriter, op *operation, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		s.violate("forgetest: cannot encode an answer: %v", err)
	}
	if schema := responseSchema(s.desc, op, code); schema != nil {
		var back any
		json.Unmarshal(b, &back)
		for _, p := range s.desc.Validate(schema, back) {
			s.violate("forgetest answered %d off the description (%s): %s", code, op.OperationID, p)
		}
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	w.Write(bytes.TrimSpace(b))
}

// responseSchema is the schema of op's answer with code, or basic-error for
// an error code the operation does not list.
func responseSchema(d *Description, op *operation, code int) *Schema {
	if op != nil {
		if res := op.Responses[strconv.Itoa(code)]; res != nil {
			if mt, ok := res.Content["application/json"]; ok {
				return mt.Schema
			}
			return nil
		}
	}
	if code >= 400 {
		return d.Schema("basic-error")
	}
	return nil
}

func (s *Server) errorJSON(w http.ResponseWriter, op *operation, code int, msg string) {
	body := map[string]any{"message": msg, "documentation_url": docURL}
	if code == http.StatusUnprocessableEntity {
		body["errors"] = []any{}
	}
	s.answer(w, op, code, body)
}
