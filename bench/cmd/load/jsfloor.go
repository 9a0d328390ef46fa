package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// jsFloor is the JetStream floor of a durable receiver: what any receiver
// that stores a delivery in JetStream before answering pays at least. It
// verifies the signature, publishes the body to a stream of an embedded
// server (file store, as the inbox's stream is configured, minus the
// message id), answers 200 once the store acknowledged it, and a consumer
// fetches and acknowledges each stored message. Nothing else: no dedupe, no
// status, no seal, no handler, two headers instead of the inbox's ~15.
type jsFloor struct {
	js  jetstream.JetStream
	dir string
	ns  *server.Server
	nc  *nats.Conn
}

// newJSFloor starts the embedded server in a fresh directory under the
// system's temporary one, the stream and its consumer.
func newJSFloor() (*jsFloor, error) {
	dir, err := os.MkdirTemp("", "forgehooks-jsfloor-")
	if err != nil {
		return nil, err
	}
	f := &jsFloor{dir: dir}
	f.ns, err = server.NewServer(&server.Options{
		ServerName: "forgehooks-jsfloor",
		JetStream:  true,
		StoreDir:   dir,
		DontListen: true,
		NoSigs:     true,
		NoLog:      true,
		MaxPayload: 64 << 20,
	})
	if err != nil {
		f.close()
		return nil, err
	}
	f.ns.Start()
	if !f.ns.ReadyForConnections(30 * time.Second) {
		f.close()
		return nil, errors.New("jsfloor: the embedded server did not start")
	}
	if f.nc, err = nats.Connect("", nats.InProcessServer(f.ns)); err != nil {
		f.close()
		return nil, err
	}
	if f.js, err = jetstream.New(f.nc); err != nil {
		f.close()
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := f.js.CreateStream(ctx, jetstream.StreamConfig{
		Name:        "FLOOR",
		Subjects:    []string{"floor.>"},
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardNew,
		Duplicates:  2 * time.Minute,
		Storage:     jetstream.FileStorage,
		AllowDirect: true,
	})
	if err != nil {
		f.close()
		return nil, fmt.Errorf("jsfloor: the stream: %w", err)
	}
	cons, err := st.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:   "workers",
		AckPolicy: jetstream.AckExplicitPolicy,
		AckWait:   30 * time.Second,
	})
	if err != nil {
		f.close()
		return nil, fmt.Errorf("jsfloor: the consumer: %w", err)
	}
	go f.consume(cons)
	return f, nil
}

// consume fetches what is stored, up to 64 messages a pull request as the
// inbox's workers ask for at most, and acknowledges each.
func (f *jsFloor) consume(cons jetstream.Consumer) {
	for {
		batch, err := cons.Fetch(64, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			if errors.Is(err, nats.ErrConnectionClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		for m := range batch.Messages() {
			_ = m.Ack()
		}
		if errors.Is(batch.Error(), nats.ErrConnectionClosed) {
			return
		}
	}
}

// close stops the server and removes its directory.
func (f *jsFloor) close() {
	if f.nc != nil {
		f.nc.Close()
	}
	if f.ns != nil {
		f.ns.Shutdown()
		f.ns.WaitForShutdown()
	}
	os.RemoveAll(f.dir)
}

// ServeHTTP verifies, stores and answers 200 after the store's
// acknowledgement; 503 when it cannot store.
func (f *jsFloor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, ok := verifiedBody(w, r)
	if !ok {
		return
	}
	msg := &nats.Msg{Subject: "floor.d", Data: body, Header: nats.Header{
		"Forge-Event":    []string{r.Header.Get("X-Forge-Event")},
		"Forge-Delivery": []string{r.Header.Get("X-Forge-Delivery")},
	}}
	if _, err := f.js.PublishMsg(r.Context(), msg); err != nil {
		http.Error(w, "not stored: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.WriteString(w, "ok\n")
}
