package lambda_test

import (
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// runtimeAPI is a fake of the Lambda Runtime API (version 2018-06-01), as
// the custom runtime provided.al2023 serves it to a function's bootstrap:
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

// result is what an instance posted for an invocation.
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

// addr is the value of AWS_LAMBDA_RUNTIME_API: host and port, no scheme.
func (rt *runtimeAPI) addr() string { return strings.TrimPrefix(rt.srv.URL, "http://") }

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
		// An instance whose runtime API is gone exits: Start does not return.
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
	// Generous: an instance may still be starting on a loaded machine.
	timeout := time.After(2 * time.Minute)
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

func newID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
