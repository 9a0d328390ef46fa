package connlimit

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"syscall"
	"testing"
	"time"
)

const generous = time.Minute

// request sends one GET on c and reads its answer, leaving c open.
func request(t *testing.T, c net.Conn, rd *bufio.Reader, path string) int {
	t.Helper()
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path)
	c.SetReadDeadline(time.Now().Add(generous))
	res, err := http.ReadResponse(rd, nil)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

func serve(t *testing.T, max int, h http.Handler) (*Limiter, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := New(max)
	srv := &http.Server{Handler: h}
	go srv.Serve(l.Serve(srv, ln))
	t.Cleanup(func() { srv.Close() })
	return l, ln.Addr().String()
}

func waitOpen(t *testing.T, l *Limiter, want int) {
	t.Helper()
	for deadline := time.Now().Add(generous); l.Open() != want; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections open, want %d", l.Open(), want)
		}
	}
}

// waitIdle waits until want of l's connections are idle.
func waitIdle(t *testing.T, l *Limiter, want int) {
	t.Helper()
	for deadline := time.Now().Add(generous); l.idleCount() != want; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections idle, want %d", l.idleCount(), want)
		}
	}
}

// TestIdleClosedFirst: past the bound, a new connection closes the one idle
// longest, then one that never sent a request; never one with a request in
// progress, which makes new connections wait for its end.
func TestIdleClosedFirst(t *testing.T) {
	block, blocked := make(chan struct{}), make(chan struct{}, 3)
	l, addr := serve(t, 3, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/block" {
			blocked <- struct{}{}
			<-block
		}
	}))
	dial := func() (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c, bufio.NewReader(c)
	}
	// closedByServer reports whether the server closed c.
	closedByServer := func(c net.Conn, rd *bufio.Reader) bool {
		c.SetReadDeadline(time.Now().Add(generous))
		_, err := rd.ReadByte()
		return err == io.EOF
	}
	var idle [3]net.Conn
	var rds [3]*bufio.Reader
	for i := range idle {
		idle[i], rds[i] = dial()
		if code := request(t, idle[i], rds[i], "/"); code != 200 {
			t.Fatalf("idle %d: %d", i, code)
		}
		// The server marks a connection idle after its answer is out: wait,
		// so that they are idle in the order of their requests.
		waitIdle(t, l, i+1)
	}
	waitOpen(t, l, 3)
	// A fourth closes the first idle one, and is served.
	c4, rd4 := dial()
	if code := request(t, c4, rd4, "/"); code != 200 {
		t.Fatalf("fourth: %d", code)
	}
	if !closedByServer(idle[0], rds[0]) {
		t.Error("the connection idle longest was not closed")
	}
	waitOpen(t, l, 3)
	// The second idle one becomes active: the next to go is the third.
	idle[1].SetReadDeadline(time.Time{})
	fmt.Fprintf(idle[1], "GET /block HTTP/1.1\r\nHost: x\r\n\r\n")
	<-blocked
	c5, rd5 := dial()
	if code := request(t, c5, rd5, "/"); code != 200 {
		t.Fatalf("fifth: %d", code)
	}
	if !closedByServer(idle[2], rds[2]) {
		t.Error("the idle connection was not closed before the active one")
	}
	// Now one active (/block) and c4, c5 idle; make both active too.
	for _, c := range []net.Conn{c4, c5} {
		fmt.Fprintf(c, "GET /block HTTP/1.1\r\nHost: x\r\n\r\n")
	}
	for range 2 {
		<-blocked
	}
	// A connection over the bound with all active waits for one to end.
	c6, rd6 := dial()
	done := make(chan int, 1)
	go func() { done <- request(t, c6, rd6, "/") }()
	select {
	case code := <-done:
		t.Fatalf("served (%d) past the bound with every connection active", code)
	case <-time.After(200 * time.Millisecond):
	}
	close(block)
	select {
	case code := <-done:
		if code != 200 {
			t.Errorf("waiting connection: %d", code)
		}
	case <-time.After(generous):
		t.Fatal("the waiting connection was never served")
	}
	if n := l.Open(); n > 3 {
		t.Errorf("%d connections open, bound 3", n)
	}
}

func (l *Limiter) idleCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.idle.Len()
}

// TestNilLimiter: no bound leaves the server as it is.
func TestNilLimiter(t *testing.T) {
	if New(0) != nil || New(-1) != nil {
		t.Fatal("a bound of 0 or less is not nil")
	}
	var l *Limiter
	srv := &http.Server{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if l.Serve(srv, ln) != ln || srv.ConnState != nil || l.Open() != 0 {
		t.Error("a nil Limiter changed the server")
	}
}

// fullTable is a listener whose Accept fails with EMFILE while full is
// set, as accept(2) does with the descriptor table full; a connection
// closed frees a descriptor (clears full).
type fullTable struct {
	net.Listener
	full  chan bool // holds the state: true while full
	fails chan struct{}
}

func (f *fullTable) Accept() (net.Conn, error) {
	full := <-f.full
	f.full <- full
	if full {
		f.fails <- struct{}{}
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	c, err := f.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &freeOnClose{Conn: c, full: f.full}, nil
}

type freeOnClose struct {
	net.Conn
	full chan bool
}

func (c *freeOnClose) Close() error {
	<-c.full
	c.full <- false
	return c.Conn.Close()
}

// TestFullTableShedsIdle: when accept fails for want of a descriptor, the
// connection idle longest is closed and accept goes on, well under the
// bound: the fresh connection is answered at once.
func TestFullTableShedsIdle(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ft := &fullTable{Listener: inner, full: make(chan bool, 1), fails: make(chan struct{}, 16)}
	ft.full <- false
	l := New(100)
	srv := &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})}
	go srv.Serve(l.Serve(srv, ft))
	t.Cleanup(func() { srv.Close() })

	var idle []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if got := request(t, c, bufio.NewReader(c), "/"); got != 200 {
			t.Fatalf("GET: %d", got)
		}
		idle = append(idle, c)
		// The server marks a connection idle after the client has read
		// its answer: wait for it, so that the first is idle longest.
		waitIdle(t, l, len(idle))
	}
	waitOpen(t, l, 2)
	<-ft.full
	ft.full <- true
	fresh, err := net.Dial("tcp", inner.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	start := time.Now()
	if got := request(t, fresh, bufio.NewReader(fresh), "/"); got != 200 {
		t.Fatalf("fresh GET: %d", got)
	}
	// http.Server waits 5 ms, then longer, after a failed accept: shedding
	// answers without that wait, after exactly one failure.
	if n := len(ft.fails); n != 1 {
		t.Errorf("accept failed %d times, want 1 (then an idle connection closed)", n)
	}
	t.Logf("fresh connection answered in %v", time.Since(start))
	// The first idle connection, idle longest, was closed; the second not.
	idle[0].SetReadDeadline(time.Now().Add(generous))
	if _, err := idle[0].Read(make([]byte, 1)); err == nil || os.IsTimeout(err) {
		t.Errorf("the connection idle longest is still open (%v)", err)
	}
	if got := request(t, idle[1], bufio.NewReader(idle[1]), "/"); got != 200 {
		t.Errorf("second idle connection: %d", got)
	}
}
