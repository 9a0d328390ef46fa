package lambda

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
)

// v2 serves a request of payload format 2.0: repeated headers arrive joined
// by commas, header names in lower case.
func (f *Function) v2(ctx context.Context, event []byte) (events.APIGatewayV2HTTPResponse, error) {
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(event, &ev); err != nil {
		return events.APIGatewayV2HTTPResponse{}, fmt.Errorf("lambda: payload format 2.0 event: %w", err)
	}
	h := http.Header{}
	for k, v := range ev.Headers {
		h.Set(k, v)
	}
	target := ev.RawPath
	if ev.RawQueryString != "" {
		target += "?" + ev.RawQueryString
	}
	r, err := newRequest(ctx, ev.RequestContext.HTTP.Method, target, h, ev.Body, ev.IsBase64Encoded)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusBadRequest, Body: err.Error()}, nil
	}
	r.Host, r.RemoteAddr = ev.RequestContext.DomainName, ev.RequestContext.HTTP.SourceIP
	rec := f.serve(r)
	body, b64 := rec.encodedBody()
	return events.APIGatewayV2HTTPResponse{StatusCode: rec.status, Headers: rec.single(), Body: body, IsBase64Encoded: b64}, nil
}

// alb serves a load balancer's request, whose headers and query come either
// single-valued or, when the target group enables it, multi-valued; the
// answer's headers come the same way.
func (f *Function) alb(ctx context.Context, event []byte) (events.ALBTargetGroupResponse, error) {
	var ev events.ALBTargetGroupRequest
	if err := json.Unmarshal(event, &ev); err != nil {
		return events.ALBTargetGroupResponse{}, fmt.Errorf("lambda: load balancer event: %w", err)
	}
	h := http.Header{}
	for k, v := range ev.Headers {
		h.Set(k, v)
	}
	for k, vs := range ev.MultiValueHeaders {
		h.Del(k)
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	q := url.Values{}
	for k, v := range ev.QueryStringParameters {
		q.Set(k, v)
	}
	for k, vs := range ev.MultiValueQueryStringParameters {
		q[k] = vs
	}
	target := ev.Path
	if len(q) > 0 {
		target += "?" + q.Encode()
	}
	r, err := newRequest(ctx, ev.HTTPMethod, target, h, ev.Body, ev.IsBase64Encoded)
	if err != nil {
		return events.ALBTargetGroupResponse{StatusCode: http.StatusBadRequest, StatusDescription: "400 Bad Request", Body: err.Error()}, nil
	}
	rec := f.serve(r)
	body, b64 := rec.encodedBody()
	res := events.ALBTargetGroupResponse{StatusCode: rec.status, StatusDescription: strconv.Itoa(rec.status) + " " + http.StatusText(rec.status), Body: body, IsBase64Encoded: b64}
	if ev.MultiValueHeaders != nil {
		res.MultiValueHeaders = rec.header
	} else {
		res.Headers = rec.single()
	}
	return res, nil
}

// newRequest builds the request of an event. A body the platform handed over
// base64-encoded is decoded first: the signature is over the bytes the forge
// sent.
func newRequest(ctx context.Context, method, target string, h http.Header, body string, isBase64 bool) (*http.Request, error) {
	b := []byte(body)
	if isBase64 {
		var err error
		if b, err = base64.StdEncoding.DecodeString(body); err != nil {
			return nil, fmt.Errorf("body is not base64: %w", err)
		}
	}
	if target == "" {
		target = "/"
	}
	if method == "" {
		method = http.MethodGet
	}
	r, err := http.NewRequestWithContext(ctx, method, target, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	r.Header = h
	r.RequestURI = target
	return r, nil
}

func (f *Function) serve(r *http.Request) *recorder {
	rec := &recorder{header: http.Header{}}
	f.handler.ServeHTTP(rec, r)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return rec
}

// recorder is the http.ResponseWriter whose answer becomes the event's
// response.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *recorder) Header() http.Header { return w.header }

func (w *recorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *recorder) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(p)
}

// single joins repeated headers with commas, as payload format 2.0 does.
func (w *recorder) single() map[string]string {
	m := make(map[string]string, len(w.header))
	for k, vs := range w.header {
		m[k] = strings.Join(vs, ",")
	}
	return m
}

// encodedBody is the body as text, or base64 when it is not UTF-8.
func (w *recorder) encodedBody() (string, bool) {
	if utf8.Valid(w.body.Bytes()) {
		return w.body.String(), false
	}
	return base64.StdEncoding.EncodeToString(w.body.Bytes()), true
}
