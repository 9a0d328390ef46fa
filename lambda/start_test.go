package lambda_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/forgetest"
	"forgehooks.dev/forgehooks/lambda"
	"forgehooks.dev/forgehooks/webhooks"
)

const (
	token   = "lambda-test-token"
	childEv = "FORGEHOOKS_LAMBDA_CHILD"
)

// TestMain runs a Function under Start when the test binary is started as a
// Lambda instance by one of the tests (Start exits the process when its
// runtime API goes away).
func TestMain(m *testing.M) {
	if os.Getenv(childEv) != "" {
		runChild()
		return
	}
	os.Exit(m.Run())
}

func runChild() {
	wh, err := webhooks.New(webhooks.Options{Secret: os.Getenv("FORGE_WEBHOOK_SECRET")})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	registerRecording(wh, os.Getenv("RECORD"))
	co, err := lambda.CatchupFromEnv(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	lambda.New(wh, lambda.Options{Catchup: co}).Start()
}

// registerRecording adds the handlers of the test's instances: each appends
// lines to the file at path, which the test reads.
func registerRecording(wh *webhooks.Webhooks, path string) {
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
	wh.OnAny(func(ctx context.Context, e emitter.Event) error {
		record("ran " + e.ID + " " + e.Name)
		switch e.Name {
		case "slow":
			// Long enough that an answer not waiting for it would come first.
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

// startInstances starts n Lambda instances: this test binary, re-run under
// Start with the runtime API's address.
func startInstances(t *testing.T, rt *runtimeAPI, n int, env ...string) {
	for range n {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEv+"=1", "AWS_LAMBDA_RUNTIME_API="+rt.addr(),
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

// TestStart drives the real Start loop through the fake runtime API with
// deliveries as each platform hands them over.
func TestStart(t *testing.T) {
	t.Parallel()
	record := t.TempDir() + "/record"
	rt := newRuntimeAPI(t, record)
	startInstances(t, rt, 1)

	payload := []byte(`{"action":"opened","issue":{"number":1,"title":"caf\u00e9 ☕"}}`)
	good, bad := sign(t, secret, payload), sign(t, "another-secret-0123456789", payload)
	b64 := base64.StdEncoding.EncodeToString(payload)

	tests := []struct {
		name, template, event, signature, body string
		status                                 int
		ran                                    bool
	}{
		{"function URL, base64 body", functionURLEvent, "issues", good, b64, 200, true},
		{"function URL, wrong signature", functionURLEvent, "issues", bad, b64, 400, false},
		{"HTTP API, text body", httpAPIEvent, "issues", good, string(payload), 200, true},
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
		deadline := time.Now().Add(time.Minute)
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
	t.Parallel()
	record := t.TempDir() + "/record"
	rt := newRuntimeAPI(t, record)
	forge := forgetest.New(t, forgetest.Options{Token: token, Secret: secret, Receiver: functionURL(t, rt)})
	hook := forgetest.RepoHook("octo", "site", 7)
	forge.AddHook(hook)
	// Two instances: the forge redelivers while the catch-up invocation waits
	// for its answer, and Lambda runs that on another instance.
	startInstances(t, rt, 2, lambda.EnvCatchupHook+"=repos/octo/site/hooks/7", lambda.EnvToken+"="+token, lambda.EnvAPIURL+"="+forge.URL)

	first := forge.Send(hook, "fails_once", []byte(`{"action":"created"}`))
	if first.StatusCode != http.StatusInternalServerError {
		t.Fatalf("first attempt: %+v, want a 500", first)
	}
	forge.Send(hook, "issues", []byte(`{"action":"opened"}`)) // succeeds: not redelivered

	for i, want := range []int{1, 0} {
		res := rt.invoke(t, []byte(scheduledEvent))
		var cr lambda.CatchupResult
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
