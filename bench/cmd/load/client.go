package main

import (
	"bufio"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"forgehooks.dev/forgehooks/bench"
)

// conn is one keep-alive connection of the load generator. It writes each
// request as one buffer made ahead (only the delivery id changes) and reads the
// answer with http.ReadResponse, instead of going through http.Client, whose
// transport costs more CPU per request than the fastest receivers: the load
// generator, not the receiver, would set the pace, and a receiver left waiting
// for its next request pays for being woken (see bench/README.md, "HTTP end
// to end").
type conn struct {
	c    net.Conn
	br   *bufio.Reader
	head []byte // the request up to the delivery id's value
	tail []byte // the rest of the headers, and the body
	buf  []byte
	sent int // requests sent, for the delivery id
	want int // the status code the receiver must answer

	// With unique bodies: the request is made anew each time, its body the
	// delivery's with a member of its own put first, and signed.
	unique      bool
	i           int
	path, addr  string
	event, body []byte
	hdr         headerNames
	mac         hash.Hash
	body2       []byte
}

// dial opens connection number i to addr, which sends delivery d to path with
// its headers under the names hdr, and must be answered want. With unique,
// every request has a body of its own (see uniqueBody), signed anew: what a
// receiver that refuses a body seen before under another id (the inbox's
// replay guard) needs.
func dial(i int, addr, path string, d *bench.Delivery, hdr headerNames, want int, unique bool) (*conn, error) {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s: %s\r\n%s: %s\r\n%s: d-%d-",
		path, addr, len(d.Body), hdr.event, d.Event, hdr.signature, d.Signature, hdr.delivery, i)
	tail := append([]byte("\r\n\r\n"), d.Body...)
	cn := &conn{c: c, br: bufio.NewReaderSize(c, 4096), head: []byte(head), tail: tail, want: want}
	if unique {
		cn.unique, cn.i, cn.path, cn.addr, cn.event, cn.body, cn.hdr = true, i, path, addr, []byte(d.Event), d.Body, hdr
		cn.mac = hmac.New(sha256.New, []byte(bench.Secret))
	}
	return cn, nil
}

// uniqueBody is body (a JSON object) with a member "zz_load" first whose
// value names connection i's request n, in a fixed width: every body of a run
// differs and all have the same length.
func uniqueBody(dst, body []byte, i, n int) []byte {
	dst = fmt.Appendf(dst[:0], `{"zz_load":"%04d-%010d",`, i, n)
	return append(dst, body[1:]...)
}

// build makes the request of a unique-body connection into c.buf.
func (c *conn) build() {
	c.body2 = uniqueBody(c.body2, c.body, c.i, c.sent)
	c.mac.Reset()
	c.mac.Write(c.body2)
	var sum [sha256.Size]byte
	c.buf = fmt.Appendf(c.buf[:0], "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s: %s\r\n%s: sha256=%s\r\n%s: d-%d-%d\r\n\r\n",
		c.path, c.addr, len(c.body2), c.hdr.event, c.event, c.hdr.signature, hex.EncodeToString(c.mac.Sum(sum[:0])), c.hdr.delivery, c.i, c.sent)
	c.buf = append(c.buf, c.body2...)
}

// do sends one request and reads its answer, which must be c.want.
func (c *conn) do() error {
	c.sent++
	if c.unique {
		c.build()
	} else {
		c.buf = append(strconv.AppendInt(append(c.buf[:0], c.head...), int64(c.sent), 10), c.tail...)
	}
	c.c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.c.Write(c.buf); err != nil {
		return err
	}
	res, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if err == nil && res.StatusCode != c.want {
		err = fmt.Errorf("status %s", res.Status)
	}
	if err == nil && res.Close {
		err = fmt.Errorf("the receiver closed the connection (status %s)", res.Status)
	}
	return err
}
