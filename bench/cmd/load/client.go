package main

import (
	"bufio"
	"fmt"
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
}

// dial opens connection number i to addr, which sends delivery d to path with
// its headers under the names hdr.
func dial(i int, addr, path string, d *bench.Delivery, hdr headerNames) (*conn, error) {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s: %s\r\n%s: %s\r\n%s: d-%d-",
		path, addr, len(d.Body), hdr.event, d.Event, hdr.signature, d.Signature, hdr.delivery, i)
	tail := append([]byte("\r\n\r\n"), d.Body...)
	return &conn{c: c, br: bufio.NewReaderSize(c, 4096), head: []byte(head), tail: tail}, nil
}

// do sends one request and reads its answer, which must be 200.
func (c *conn) do() error {
	c.sent++
	c.buf = append(strconv.AppendInt(append(c.buf[:0], c.head...), int64(c.sent), 10), c.tail...)
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
	if err == nil && res.StatusCode != http.StatusOK {
		err = fmt.Errorf("status %s", res.Status)
	}
	if err == nil && res.Close {
		err = fmt.Errorf("the receiver closed the connection (status %s)", res.Status)
	}
	return err
}
