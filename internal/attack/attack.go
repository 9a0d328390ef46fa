// Package attack sends the hostile traffic that the middleware's bounds are
// tested against (forged bodies held open, floods of forged requests, header
// floods) to a receiver on 127.0.0.1, and reads a process's peak memory.
// Tests of package webhooks and of cmd/forgehooks share it; it is no part of
// the SDK.
package attack

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ForgedSignature is a well-formed signature that matches no body.
const ForgedSignature = "sha256=0000000000000000000000000000000000000000000000000000000000000000"

// Held is a set of connections each sending a forged body that stops one
// byte short of its Content-Length, so that the receiver waits for the rest.
type Held struct {
	conns []net.Conn
	wg    sync.WaitGroup
}

// HoldForgedBodies opens n connections to addr, and on each posts to path a
// forged delivery announcing size bytes and sends size-1 of them (as fast as
// the receiver takes them; a receiver that answers early and closes the
// connection ends that writer). It returns at once; Close ends them.
func HoldForgedBodies(addr, path string, n int, size int64) (*Held, error) {
	h := &Held{}
	chunk := bytes.Repeat([]byte(" "), 256<<10)
	for i := range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			h.Close()
			return nil, err
		}
		h.conns = append(h.conns, c)
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nX-Forge-Event: push\r\nX-Forge-Delivery: forged-%d\r\nX-Hub-Signature-256: %s\r\n\r\n{", path, addr, size, i, ForgedSignature)
			if _, err := io.WriteString(c, head); err != nil {
				return
			}
			left := size - 2 // "{" sent; one byte held back
			for left > 0 {
				k, err := c.Write(chunk[:min(int64(len(chunk)), left)])
				left -= int64(k)
				if err != nil {
					break
				}
			}
		}()
	}
	return h, nil
}

// Close closes every connection and waits for the writers.
func (h *Held) Close() {
	for _, c := range h.conns {
		c.Close()
	}
	h.wg.Wait()
}

// Answer is what a valid delivery sent during an attack got.
type Answer struct {
	Status     int
	RetryAfter string
	Took       time.Duration
}

// Deliver posts a validly signed delivery (a small "issues.opened" body) to
// addr on a fresh connection and returns its answer, waiting at most
// timeout.
func Deliver(addr, path, secret string, timeout time.Duration) (Answer, error) {
	body := []byte(`{"action":"opened","issue":{"number":1}}`)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+path, bytes.NewReader(body))
	if err != nil {
		return Answer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Forge-Event", "issues")
	req.Header.Set("X-Forge-Delivery", "valid-1")
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	client := &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
	start := time.Now()
	res, err := client.Do(req)
	if err != nil {
		return Answer{Took: time.Since(start)}, err
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return Answer{Status: res.StatusCode, RetryAfter: res.Header.Get("Retry-After"), Took: time.Since(start)}, nil
}

// ForgedRequests sends n forged deliveries of size bytes each, whole, over
// conns connections (keep-alive), and returns how many were answered with
// each status. It stops a connection's requests at the first error.
func ForgedRequests(addr, path string, n, conns int, size int) (map[int]int, error) {
	body := append(append([]byte(`{"pad":"`), bytes.Repeat([]byte("x"), max(0, size-10))...), `"}`...)
	var (
		mu       sync.Mutex
		statuses = map[int]int{}
		firstErr error
		wg       sync.WaitGroup
	)
	per := (n + conns - 1) / conns
	for c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			defer client.CloseIdleConnections()
			for i := c * per; i < min(n, (c+1)*per); i++ {
				req, _ := http.NewRequest(http.MethodPost, "http://"+addr+path, bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-Forge-Event", "push")
				req.Header.Set("X-Forge-Delivery", "forged-"+strconv.Itoa(i))
				req.Header.Set("X-Hub-Signature-256", ForgedSignature)
				res, err := client.Do(req)
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				mu.Lock()
				statuses[res.StatusCode]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return statuses, firstErr
}

// HeaderFlood sends n forged deliveries whose delivery and event headers
// hold about headerBytes of 0xFF bytes each (together under net/http's
// default limit of 1 MiB of headers), one connection each, and returns how
// many were answered with each status.
func HeaderFlood(addr, path string, n, headerBytes int) (map[int]int, error) {
	junk := strings.Repeat("\xff", headerBytes/2)
	statuses := map[int]int{}
	for i := range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return statuses, err
		}
		body := `{"action":"opened"}`
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nX-Forge-Event: %s%d\r\nX-Forge-Delivery: %s%d\r\nX-Hub-Signature-256: %s\r\nConnection: close\r\n\r\n%s",
			path, addr, len(body), junk, i, junk, i, ForgedSignature, body)
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			c.Close()
			return statuses, err
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		c.Close()
		statuses[res.StatusCode]++
	}
	return statuses, nil
}

// VmHWM returns the peak resident set size of process pid, from
// /proc/pid/status, in bytes.
func VmHWM(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) != 2 || f[1] != "kB" {
				return 0, fmt.Errorf("VmHWM line %q", line)
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}

// Process is a receiver running in a process of its own, so that its peak
// memory is its own.
type Process struct {
	cmd  *exec.Cmd
	Addr string // host:port it listens on
	mu   sync.Mutex
	out  bytes.Buffer // stdout and stderr, as written
	done chan struct{}
}

// Start starts cmd and waits (at most a minute) until a line of its output
// matches listening, whose first group is the address it listens on.
func Start(cmd *exec.Cmd, listening *regexp.Regexp) (*Process, error) {
	p := &Process{cmd: cmd, done: make(chan struct{})}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		cmd.Wait()
		pw.Close()
		close(p.done)
	}()
	found := make(chan string, 1)
	go func() {
		rd := bufio.NewReaderSize(pr, 64<<10)
		for {
			line, err := rd.ReadString('\n')
			p.mu.Lock()
			p.out.WriteString(line)
			p.mu.Unlock()
			if m := listening.FindStringSubmatch(line); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
			if err != nil {
				return
			}
		}
	}()
	select {
	case p.Addr = <-found:
		return p, nil
	case <-p.done:
		return nil, fmt.Errorf("%s exited before it listened: %s", cmd.Path, p.Output())
	case <-time.After(time.Minute):
		p.Stop()
		return nil, errors.New(cmd.Path + " did not say where it listens within a minute: " + p.Output())
	}
}

// Output returns what the process has written so far.
func (p *Process) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// OutputLen returns how many bytes the process has written so far.
func (p *Process) OutputLen() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Len()
}

// PeakRSS returns the process's VmHWM.
func (p *Process) PeakRSS() (int64, error) { return VmHWM(p.cmd.Process.Pid) }

// Done is closed once the process has ended.
func (p *Process) Done() <-chan struct{} { return p.done }

// Stop kills the process and waits for it.
func (p *Process) Stop() {
	p.cmd.Process.Kill()
	<-p.done
}

// Slow is a set of connections that each announce a forged body and send
// it one byte at a time, reconnecting when the receiver cuts them.
type Slow struct {
	stop chan struct{}
	wg   sync.WaitGroup
	// Cut counts the connections the receiver ended (answered or closed).
	Cut atomic.Int64
}

// SlowBodies starts one sender per entry of sizes: each connects to addr,
// posts to path a forged delivery announcing that many bytes, and sends one
// byte every every; when the receiver answers or closes the connection, it
// connects again. Stop ends them.
func SlowBodies(addr, path string, sizes []int64, every time.Duration) *Slow {
	s := &Slow{stop: make(chan struct{})}
	for i, size := range sizes {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			for n := 0; ; n++ {
				select {
				case <-s.stop:
					return
				default:
				}
				c, err := net.Dial("tcp", addr)
				if err != nil {
					select {
					case <-s.stop:
						return
					case <-time.After(100 * time.Millisecond):
					}
					continue
				}
				closed := make(chan struct{})
				go func() {
					// Reads the answer, if any; the connection is then done.
					io.Copy(io.Discard, c)
					close(closed)
				}()
				fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nX-Forge-Event: push\r\nX-Forge-Delivery: slow-%d-%d\r\nX-Hub-Signature-256: %s\r\n\r\n", path, addr, size, i, n, ForgedSignature)
				t := time.NewTicker(every)
			trickle:
				for {
					if _, err := c.Write([]byte("{")); err != nil {
						break
					}
					select {
					case <-s.stop:
						t.Stop()
						c.Close()
						return
					case <-closed:
						break trickle
					case <-t.C:
					}
				}
				t.Stop()
				c.Close()
				s.Cut.Add(1)
			}
		}()
	}
	return s
}

// Stop ends the senders and waits for them.
func (s *Slow) Stop() {
	close(s.stop)
	s.wg.Wait()
}

// Sign returns the X-Hub-Signature-256 value of body under secret.
func Sign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// Post sends a delivery with the given id and body, signed under secret, on
// client, and returns the status and the answer's body.
func Post(client *http.Client, addr, path, secret, event, id string, body []byte) (int, string, error) {
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+path, bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Forge-Event", event)
	req.Header.Set("X-Forge-Delivery", id)
	req.Header.Set("X-Hub-Signature-256", Sign(secret, body))
	res, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
	return res.StatusCode, string(b), nil
}

// FillBudget returns the sizes that slow senders announce to fill a budget
// of budget bytes to within a few bytes, at most max each.
func FillBudget(budget, max int64) []int64 {
	var sizes []int64
	for left := budget - 3; left > 0; left -= max {
		sizes = append(sizes, min(left, max))
	}
	return sizes
}

// RunPeak runs cmd to its end and returns its peak resident set size, the
// highest VmHWM read from /proc while it ran (every 10 ms, and once more
// after it stops, before it is reaped). getrusage cannot tell it: a
// child's maximum counts its parent's memory at the fork.
func RunPeak(cmd *exec.Cmd) (int64, error) {
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	pid := cmd.Process.Pid
	var peak int64
	read := func() {
		if n, err := VmHWM(pid); err == nil && n > peak {
			peak = n
		}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case err := <-done:
			return peak, err
		case <-t.C:
			read()
		}
	}
}
