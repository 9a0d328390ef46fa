package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/forgetest"
	"forgehooks.dev/forgehooks/signing"
	"forgehooks.dev/forgehooks/webhooks"
)

const (
	secret  = "lambda-example-secret-0123456789"
	token   = "lambda-example-token"
	childEv = "FORGEHOOKS_LAMBDA_CHILD"
)

// TestMain runs the function under lambda.Start when the test binary is
// started as a Lambda instance by one of the tests (lambda.Start exits the
// process when its runtime API goes away).
func TestMain(m *testing.M) {
	if os.Getenv(childEv) != "" {
		fn, err := functionFromEnv(os.Getenv, registerRecording(os.Getenv("RECORD")))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		mainWith(fn)
		return
	}
	os.Exit(m.Run())
}

// registerRecording adds the handlers of the test's instances: each appends
// lines to the file at path, which the test reads.
func registerRecording(path string) func(*webhooks.Webhooks) {
	var mu sync.Mutex
	record := func(line string) {
		mu.Lock()
		defer mu.Unlock()
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			panic(err)
		}
		defer f.Close()
		fmt.Fprintln(f, line)
	}
	return func(wh *webhooks.Webhooks) {
		wh.OnAny(func(ctx context.Context, e emitter.Event) error {
			record("ran " + e.ID + " " + e.Name)
			switch e.Name {
			case "slow":
				time.Sleep(300 * time.Millisecond)
				record("done " + e.ID)
			case "fails_once":
				if _, err := os.Stat(path + ".failed-" + e.ID); err != nil {
					os.WriteFile(path+".failed-"+e.ID, nil, 0o600)
					return errors.New("the first attempt fails")
				}
			case "leaky":
				// Work a handler leaves behind: it may start nothing after
				// the answer.
				go func() {
					<-ctx.Done()
					err := wh.Receive(ctx, emitter.Event{ID: "late-" + e.ID, Name: "push", Payload: []byte(`{}`)})
					record(fmt.Sprintf("late %s refused=%v", e.ID, errors.Is(err, webhooks.ErrAnswered)))
				}()
			}
			return nil
		})
	}
}

// runtimeAPI is a fake of the Lambda Runtime API (version 2018-06-01):
// instances poll invocation/next and post each invocation's response or
// error.
type runtimeAPI struct {
	srv    *httptest.Server
	queue  chan *invocation
	stop   chan struct{}
	mu     sync.Mutex
	issued map[string]*invocation
	record string // the handlers' record file, read when a response arrives
}

type invocation struct {
	id    string
	event []byte
	done  chan result
}

type result struct {
	status      string // "response" or "error"
	body        []byte
	recordAtEnd string // the record file when the response arrived
}

func newRuntimeAPI(t *testing.T, record string) *runtimeAPI {
	rt := &runtimeAPI{queue: make(chan *invocation), stop: make(chan struct{}), issued: map[string]*invocation{}, record: record}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /2018-06-01/runtime/invocation/next", rt.next)
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/{kind}", rt.post)
	mux.HandleFunc("POST /2018-06-01/runtime/init/error", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		t.Errorf("init error: %s", b)
		w.WriteHeader(http.StatusAccepted)
	})
	rt.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		close(rt.stop)
		rt.srv.Close()
	})
	return rt
}

func (rt *runtimeAPI) next(w http.ResponseWriter, r *http.Request) {
	select {
	case inv := <-rt.queue:
		w.Header().Set("Lambda-Runtime-Aws-Request-Id", inv.id)
		w.Header().Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(time.Now().Add(time.Minute).UnixMilli(), 10))
		w.Header().Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:123456789012:function:forgehooks")
		w.Header().Set("Lambda-Runtime-Trace-Id", "Root=1-00000000-000000000000000000000000")
		w.Header().Set("Content-Type", "application/json")
		w.Write(inv.event)
	case <-rt.stop:
		w.WriteHeader(http.StatusGone)
	case <-r.Context().Done():
	}
}

func (rt *runtimeAPI) post(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var rec []byte
	if rt.record != "" {
		rec, _ = os.ReadFile(rt.record)
	}
	rt.mu.Lock()
	inv := rt.issued[r.PathValue("id")]
	delete(rt.issued, r.PathValue("id"))
	rt.mu.Unlock()
	if inv == nil {
		http.Error(w, "unknown invocation", http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusAccepted)
	inv.done <- result{status: r.PathValue("kind"), body: body, recordAtEnd: string(rec)}
}

// invoke runs event on whichever instance asks next, and returns its result.
func (rt *runtimeAPI) invoke(t *testing.T, event []byte) result {
	t.Helper()
	inv := &invocation{id: newID(), event: event, done: make(chan result, 1)}
	rt.mu.Lock()
	rt.issued[inv.id] = inv
	rt.mu.Unlock()
	timeout := time.After(60 * time.Second)
	select {
	case rt.queue <- inv:
	case <-timeout:
		t.Fatal("no instance asked for the next invocation")
	}
	select {
	case res := <-inv.done:
		return res
	case <-timeout:
		t.Fatal("the invocation got no response")
	}
	return result{}
}

// startInstances starts n Lambda instances: this test binary, re-run under
// lambda.Start with the runtime API's address.
func startInstances(t *testing.T, rt *runtimeAPI, n int, env ...string) {
	for range n {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEv+"=1", "AWS_LAMBDA_RUNTIME_API="+strings.TrimPrefix(rt.srv.URL, "http://"),
			"FORGE_WEBHOOK_SECRET="+secret, "RECORD="+rt.record)
		cmd.Env = append(cmd.Env, env...)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			cmd.Process.Kill()
			cmd.Wait()
		})
	}
}

func newID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// The events as the platforms send them: a function URL (the body
// base64-encoded), an HTTP API (payload format 2.0, the body as text) and a
// load balancer (single- and multi-valued headers). Header names come in
// whatever case the platform gives them.
const (
	functionURLEvent = `{
  "version": "2.0", "routeKey": "$default", "rawPath": "/", "rawQueryString": "",
  "headers": {"content-type": "application/json", "user-agent": "forge-hookshot/1", "x-forge-event": %[1]q,
    "x-forge-delivery": %[2]q, "x-hub-signature-256": %[3]q, "host": "abcdefgh.lambda-url.us-east-1.on.aws",
    "x-forwarded-proto": "https", "x-amzn-trace-id": "Root=1-5e1b4151-5ac6c58f5a7a8e7a1d2ab0f3"},
  "requestContext": {"accountId": "anonymous", "apiId": "abcdefgh", "domainName": "abcdefgh.lambda-url.us-east-1.on.aws",
    "domainPrefix": "abcdefgh", "http": {"method": "POST", "path": "/", "protocol": "HTTP/1.1", "sourceIp": "192.0.2.1",
    "userAgent": "forge-hookshot/1"}, "requestId": "c6af9ac6-7b61-11e6-9a41-93e8deadbeef", "routeKey": "$default",
    "stage": "$default", "time": "27/Nov/2026:23:00:00 +0000", "timeEpoch": 1795820400000},
  "body": %[4]q, "isBase64Encoded": true
}`
	httpAPIEvent = `{
  "version": "2.0", "routeKey": "POST /hooks", "rawPath": "/hooks", "rawQueryString": "source=forge",
  "headers": {"Content-Type": "application/json", "X-FORGE-EVENT": %[1]q, "X-Forge-Delivery": %[2]q, "X-HUB-SIGNATURE-256": %[3]q},
  "queryStringParameters": {"source": "forge"},
  "requestContext": {"accountId": "123456789012", "apiId": "api1234567", "domainName": "api1234567.execute-api.us-east-1.amazonaws.com",
    "domainPrefix": "api1234567", "http": {"method": "POST", "path": "/hooks", "protocol": "HTTP/1.1", "sourceIp": "192.0.2.1",
    "userAgent": "forge-hookshot/1"}, "requestId": "JKJaXmPLvHcESHA=", "routeKey": "POST /hooks", "stage": "$default",
    "time": "27/Nov/2026:23:00:00 +0000", "timeEpoch": 1795820400000},
  "body": %[4]q, "isBase64Encoded": false
}`
	albEvent = `{
  "requestContext": {"elb": {"targetGroupArn": "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/hooks/0123456789abcdef"}},
  "httpMethod": "POST", "path": "/hooks", "queryStringParameters": {},
  "headers": {"content-type": "application/json", "x-forge-event": %[1]q, "x-forge-delivery": %[2]q, "x-hub-signature-256": %[3]q},
  "body": %[4]q, "isBase64Encoded": true
}`
	albMultiEvent = `{
  "requestContext": {"elb": {"targetGroupArn": "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/hooks/0123456789abcdef"}},
  "httpMethod": "POST", "path": "/hooks", "multiValueQueryStringParameters": {},
  "multiValueHeaders": {"content-type": ["application/json"], "X-Forge-Event": [%[1]q], "x-forge-delivery": [%[2]q], "X-Hub-Signature-256": [%[3]q]},
  "body": %[4]q, "isBase64Encoded": false
}`
	scheduledEvent = `{
  "version": "0", "id": "53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa", "detail-type": "Scheduled Event", "source": "aws.events",
  "account": "123456789012", "time": "2026-11-27T23:15:00Z", "region": "us-east-1",
  "resources": ["arn:aws:events:us-east-1:123456789012:rule/forgehooks-catchup"], "detail": {}
}`
)

// httpResponse is the part of any of the platforms' responses the tests read.
type httpResponse struct {
	StatusCode        int                 `json:"statusCode"`
	StatusDescription string              `json:"statusDescription"`
	Headers           map[string]string   `json:"headers"`
	MultiValueHeaders map[string][]string `json:"multiValueHeaders"`
	Body              string              `json:"body"`
	IsBase64Encoded   bool                `json:"isBase64Encoded"`
}

// TestLambdaStart drives the real lambda.Start loop through the fake runtime
// API with deliveries as each platform hands them over.
func TestLambdaStart(t *testing.T) {
	record := t.TempDir() + "/record"
	rt := newRuntimeAPI(t, record)
	startInstances(t, rt, 1)

	payload := []byte(`{"action":"opened","issue":{"number":1,"title":"caf\u00e9 ☕"}}`)
	good, err := signing.Sign(secret, payload)
	if err != nil {
		t.Fatal(err)
	}
	bad, _ := signing.Sign("another-secret-0123456789", payload)
	b64 := base64.StdEncoding.EncodeToString(payload)

	tests := []struct {
		name, template, event, signature, body string
		status                                 int
		ran                                    bool
	}{
		{"function URL, base64 body", functionURLEvent, "issues", good, b64, 200, true},
		{"function URL, wrong signature", functionURLEvent, "issues", bad, b64, 400, false},
		{"function URL, signed over the base64 text", functionURLEvent, "issues", mustSign(t, []byte(b64)), b64, 400, false},
		{"HTTP API, text body, headers in upper case", httpAPIEvent, "issues", good, string(payload), 200, true},
		{"load balancer, base64 body", albEvent, "issues", good, b64, 200, true},
		{"load balancer, multi-valued headers", albMultiEvent, "issues", good, string(payload), 200, true},
		{"handler fails", functionURLEvent, "fails_once", good, b64, 500, true},
		{"slow handler", functionURLEvent, "slow", good, b64, 200, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := newID()
			res := rt.invoke(t, []byte(fmt.Sprintf(tt.template, tt.event, id, tt.signature, tt.body)))
			if res.status != "response" {
				t.Fatalf("invocation %s: %s", res.status, res.body)
			}
			var hr httpResponse
			if err := json.Unmarshal(res.body, &hr); err != nil {
				t.Fatalf("%v: %s", err, res.body)
			}
			if hr.StatusCode != tt.status {
				t.Fatalf("status %d (%s), want %d", hr.StatusCode, hr.Body, tt.status)
			}
			ran := strings.Contains(res.recordAtEnd, "ran "+id+" ")
			if ran != tt.ran {
				t.Fatalf("handler ran before the response: %v, want %v\nrecord:\n%s", ran, tt.ran, res.recordAtEnd)
			}
			if tt.event == "slow" && !strings.Contains(res.recordAtEnd, "done "+id) {
				t.Fatalf("the response came before the slow handler returned\nrecord:\n%s", res.recordAtEnd)
			}
			if tt.template == albMultiEvent && hr.MultiValueHeaders["Content-Type"] == nil || tt.template == albEvent && hr.StatusDescription != "200 OK" {
				t.Fatalf("load balancer response: %+v", hr)
			}
		})
	}

	t.Run("nothing starts after the response", func(t *testing.T) {
		id := newID()
		res := rt.invoke(t, []byte(fmt.Sprintf(functionURLEvent, "leaky", id, good, b64)))
		if !strings.Contains(string(res.body), `"statusCode":200`) {
			t.Fatalf("response %s", res.body)
		}
		// The goroutine the handler left behind tries to dispatch once the
		// answer is written (here the process is not frozen, so it runs).
		deadline := time.Now().Add(30 * time.Second)
		for {
			rec, _ := os.ReadFile(record)
			if strings.Contains(string(rec), "late "+id) {
				if !strings.Contains(string(rec), "late "+id+" refused=true") || strings.Contains(string(rec), "ran late-"+id) {
					t.Fatalf("a handler started after the answer:\n%s", rec)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the left-behind goroutine never reported:\n%s", rec)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})

	t.Run("unknown event", func(t *testing.T) {
		res := rt.invoke(t, []byte(`{"hello":"world"}`))
		if res.status != "error" || !strings.Contains(string(res.body), "unknown event") {
			t.Fatalf("%s: %s", res.status, res.body)
		}
	})
}

func mustSign(t *testing.T, b []byte) string {
	s, err := signing.Sign(secret, b)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// functionURL fronts the instances as a function URL does: each request
// becomes an invocation whose event carries it, the body base64-encoded.
func functionURL(t *testing.T, rt *runtimeAPI) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		res := rt.invoke(t, []byte(fmt.Sprintf(functionURLEvent, r.Header.Get("X-Forge-Event"), r.Header.Get("X-Forge-Delivery"),
			r.Header.Get("X-Hub-Signature-256"), base64.StdEncoding.EncodeToString(body))))
		var hr httpResponse
		if res.status != "response" || json.Unmarshal(res.body, &hr) != nil {
			http.Error(w, "function error", http.StatusBadGateway)
			return
		}
		w.WriteHeader(hr.StatusCode)
		io.WriteString(w, hr.Body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestScheduledCatchup: a delivery the function answered 500 is redelivered
// by the next scheduled invocation, once: the run after that finds the log's
// last attempt succeeded and asks for nothing. No state is kept between
// invocations.
func TestScheduledCatchup(t *testing.T) {
	record := t.TempDir() + "/record"
	rt := newRuntimeAPI(t, record)
	forge := forgetest.New(t, forgetest.Options{Token: token, Secret: secret, Receiver: functionURL(t, rt)})
	hook := forgetest.RepoHook("octo", "site", 7)
	forge.AddHook(hook)
	// Two instances: the forge redelivers while the catch-up invocation waits
	// for its answer, and Lambda runs that on another instance.
	startInstances(t, rt, 2, "FORGE_CATCHUP_HOOK=repos/octo/site/hooks/7", "FORGE_TOKEN="+token, "FORGE_API_URL="+forge.URL)

	first := forge.Send(hook, "fails_once", []byte(`{"action":"created"}`))
	if first.StatusCode != http.StatusInternalServerError {
		t.Fatalf("first attempt: %+v, want a 500", first)
	}
	forge.Send(hook, "issues", []byte(`{"action":"opened"}`)) // succeeds: not redelivered

	for i, want := range []int{1, 0} {
		res := rt.invoke(t, []byte(scheduledEvent))
		var cr CatchupResult
		if res.status != "response" || json.Unmarshal(res.body, &cr) != nil {
			t.Fatalf("scheduled invocation %d: %s %s", i, res.status, res.body)
		}
		if cr.Requested != want || cr.Entries != 2 {
			t.Fatalf("scheduled invocation %d: %+v, want %d requested of 2 entries", i, cr, want)
		}
	}
	var attempts []string
	for _, a := range forge.Attempts(hook) {
		if a.GUID == first.GUID {
			attempts = append(attempts, fmt.Sprintf("%d redelivery=%v", a.StatusCode, a.Redelivery))
		}
	}
	if got := strings.Join(attempts, ", "); got != "500 redelivery=false, 200 redelivery=true" {
		t.Fatalf("attempts of the failed delivery: %s", got)
	}
	rec, _ := os.ReadFile(record)
	if n := strings.Count(string(rec), "ran "+first.GUID+" "); n != 2 {
		t.Fatalf("handler runs of the failed delivery: %d, want 2\n%s", n, rec)
	}
}
