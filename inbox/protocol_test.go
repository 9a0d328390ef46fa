package inbox

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/webhooks"
)

// protoCounter counts the protocol messages a server traces for its client
// connections, by kind: what a client sends (a publish by what its subject
// names) and what it is sent (a stored message delivered, a status message,
// the answer to a request, classed as the request it answers).
type protoCounter struct {
	mu      sync.Mutex
	on      bool
	counts  map[string]int
	replies map[string]string // reply subject → the kind of its request
	// acks holds, by client, an ack whose payload (ack, in progress, nak)
	// comes in the next trace line.
	acks map[string]string
}

func newProtoCounter() *protoCounter {
	return &protoCounter{counts: map[string]int{}, replies: map[string]string{}, acks: map[string]string{}}
}

func (p *protoCounter) Noticef(string, ...any) {}
func (p *protoCounter) Warnf(string, ...any)   {}
func (p *protoCounter) Fatalf(string, ...any)  {}
func (p *protoCounter) Errorf(string, ...any)  {}
func (p *protoCounter) Debugf(string, ...any)  {}

// Tracef reads one traced operation: "<<- [HPUB subject reply hdr size]"
// from a client, "->> [HMSG subject sid reply hdr size]" to it.
func (p *protoCounter) Tracef(format string, v ...any) {
	line := fmt.Sprintf(format, v...)
	in := strings.Index(line, "<<- [")
	out := strings.Index(line, "->> [")
	switch {
	case in >= 0:
		p.sent(line[:in], strings.Fields(strings.TrimSuffix(line[in+5:], "]")))
	case strings.Contains(line, "<<- MSG_PAYLOAD: "):
		p.payload(line[:strings.Index(line, "<<- MSG_PAYLOAD: ")], line)
	case out >= 0:
		p.received(strings.Fields(strings.TrimSuffix(line[out+5:], "]")))
	}
}

// sent counts an operation of the client: PUB subject [reply] size, HPUB
// subject [reply] hdr size.
func (p *protoCounter) sent(client string, f []string) {
	if len(f) >= 2 && (f[0] == "SUB" || f[0] == "UNSUB") {
		p.mu.Lock()
		if p.on {
			p.counts["sent: "+f[0]]++
		}
		p.mu.Unlock()
		return
	}
	if len(f) < 2 || (f[0] != "PUB" && f[0] != "HPUB") {
		return
	}
	args := len(f) - 1
	if f[0] == "HPUB" {
		args--
	}
	reply := ""
	if args == 3 {
		reply = f[2]
	}
	kind := pubKind(f[1], reply)
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.on {
		return
	}
	if strings.HasPrefix(kind, "ack of a delivery") {
		p.acks[client] = kind
		return
	}
	p.counts["sent: "+kind]++
	if reply != "" {
		p.replies[reply] = kind
	}
}

// payload counts the ack of client whose payload line is line: an ack
// ("+ACK", or none), a renewal of its lease ("+WPI"), a nak ("-NAK").
func (p *protoCounter) payload(client, line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	kind, ok := p.acks[client]
	if !ok {
		return
	}
	delete(p.acks, client)
	switch {
	case strings.Contains(line, "+WPI"):
		kind = "lease renewal (in progress)"
	case strings.Contains(line, "-NAK"):
		kind = "nak of a delivery"
	case strings.Contains(line, "+TERM"):
		kind = "term of a delivery"
	}
	p.counts["sent: "+kind]++
}

// pubKind names what a publish on subj is.
func pubKind(subj, reply string) string {
	switch {
	case strings.HasPrefix(subj, "$JS.ACK."):
		if reply != "" {
			return "ack of a delivery, answered"
		}
		return "ack of a delivery"
	case strings.HasPrefix(subj, "$JS.API.CONSUMER.MSG.NEXT."):
		return "pull request"
	case strings.HasPrefix(subj, "$JS.API.DIRECT.GET."), strings.HasPrefix(subj, "$JS.API.STREAM.MSG.GET."):
		return "record get"
	case strings.HasPrefix(subj, "$JS.API."):
		f := strings.Split(subj, ".")
		return "other API request (" + strings.Join(f[2:min(len(f), 6)], " ") + ")"
	case strings.Contains(subj, ".rec."):
		return "record write (" + subj[strings.LastIndex(subj, ".")+1:] + ")"
	case strings.Contains(subj, ".in.") || strings.HasPrefix(subj, "floor."):
		return "delivery publish"
	}
	return "other publish (" + subj + ")"
}

// ackConsumer names the stream and consumer of an ack subject:
// $JS.ACK.<stream>.<consumer>.<...> (or with a domain and account hash first).
func ackConsumer(subj string) string {
	f := strings.Split(subj, ".")
	if len(f) > 9 {
		f = f[2:] // $JS.ACK.<domain>.<account hash>.<stream>...
	}
	if len(f) < 4 {
		return subj
	}
	return f[2] + " " + f[3]
}

// received counts a message to the client: MSG subject sid [reply] size,
// HMSG subject sid [reply] hdr size.
func (p *protoCounter) received(f []string) {
	if len(f) < 4 || (f[0] != "MSG" && f[0] != "HMSG") {
		return
	}
	subj, reply := f[1], ""
	args := len(f) - 1
	if f[0] == "HMSG" {
		args--
	}
	if args == 4 {
		reply = f[3]
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.on {
		return
	}
	switch {
	case strings.HasPrefix(reply, "$JS.ACK."):
		p.counts["received: stored message delivered ("+ackConsumer(reply)+")"]++
	case f[0] == "HMSG" && f[len(f)-1] == f[len(f)-2]:
		// Headers alone: a status (heartbeat, end of a pull request).
		p.counts["received: status message"]++
	default:
		kind, ok := p.replies[subj]
		if !ok {
			kind = "?"
		}
		delete(p.replies, subj)
		p.counts["received: answer to "+kind]++
	}
}

// start counts from now on.
func (p *protoCounter) start() {
	p.mu.Lock()
	p.on = true
	p.mu.Unlock()
}

// stop stops counting and returns the counts.
func (p *protoCounter) stop() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.on = false
	return maps.Clone(p.counts)
}

// table prints counts per delivery.
func protoTable(t *testing.T, name string, counts map[string]int, n int) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s, %d deliveries: protocol messages per delivery\n", name, n)
	total := 0
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		fmt.Fprintf(&b, "  %-58s %6.3f\n", k, float64(counts[k])/float64(n))
		total += counts[k]
	}
	fmt.Fprintf(&b, "  %-58s %6.3f\n", "all", float64(total)/float64(n))
	t.Log(b.String())
}

// traceConn turns the server's tracing on with p as its logger and makes
// nc connect again: a client's tracing is set when it connects.
func traceConn(t *testing.T, ns *server.Server, nc *nats.Conn, p *protoCounter) {
	t.Helper()
	ns.SetLoggerV2(p, false, true, false)
	reconnected := make(chan struct{}, 1)
	nc.SetReconnectHandler(func(*nats.Conn) {
		select {
		case reconnected <- struct{}{}:
		default:
		}
	})
	if err := nc.ForceReconnect(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-reconnected:
	case <-time.After(30 * time.Second):
		t.Fatal("the connection did not come back")
	}
}

// protoDeliveries is how many deliveries a count runs: enough that the
// requests shared by many (pull requests, batched records) show.
const protoDeliveries = 2000

// TestProtocolPerDelivery counts the NATS protocol messages the embedded
// inbox's connection exchanges per delivery, from its store to its
// handler's end, and bounds them: each delivery's publish and PubAck, its
// dedupe record, its status records, the workers' pull requests and acks.
// Run with -v for the table.
func TestProtocolPerDelivery(t *testing.T) {
	t.Parallel()
	wh := newWebhooks(t)
	var handled atomic.Int64
	wh.OnAny(func(context.Context, emitter.Event) error { handled.Add(1); return nil })
	// Opened without workers: the connection comes back traced before
	// they start.
	in := openInbox(t, t.TempDir(), Options{})
	in.opts.Receiver = wh
	p := newProtoCounter()
	traceConn(t, in.ns.Running(), in.nc, p)
	ctx := context.Background()
	if err := in.Start(ctx); err != nil {
		t.Fatal(err)
	}
	p.start()
	var wg sync.WaitGroup
	var next atomic.Int64
	for range 64 {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > protoDeliveries {
					return
				}
				id := fmt.Sprintf("proto-%d", i)
				if _, err := in.Enqueue(ctx, webhooks.Delivery{ID: id, Name: "issues", Payload: unique(benchBody, id)}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	waitFor(t, 2*time.Minute, "every delivery handled and acknowledged", func() bool {
		p.mu.Lock()
		acks := p.counts["sent: ack of a delivery"]
		p.mu.Unlock()
		return handled.Load() >= protoDeliveries && acks >= protoDeliveries
	})
	counts := p.stop()
	protoTable(t, "inbox", counts, protoDeliveries)
	per := func(kind string) float64 {
		n := 0
		for k, c := range counts {
			if k == kind || strings.HasPrefix(k, kind+" (") {
				n += c
			}
		}
		return float64(n) / protoDeliveries
	}
	for _, c := range []struct {
		kind string
		min  float64
		max  float64
	}{
		{"sent: delivery publish", 1, 1},
		{"received: answer to delivery publish", 1, 1},
		{"received: stored message delivered", 1, 1.05}, // by every consumer
		{"sent: ack of a delivery", 1, 1.05},
		// One dedupe record and at most two statuses per delivery, shared
		// by the writes under way at once.
		{"sent: record write (seen)", 0, 1},
		{"sent: record write (status)", 0, 2},
		// The sources wait a moment for places to free while the workers
		// have deliveries queued (gather): a pull request brings several.
		{"sent: pull request", 0, 0.2},
	} {
		if got := per(c.kind); got < c.min || got > c.max {
			t.Errorf("%s: %.3f per delivery, want %.2f to %.2f", c.kind, got, c.min, c.max)
		}
	}
}

// TestProtocolPerDeliveryFloor counts, for comparison, the protocol of the
// JetStream floor (bench/cmd/load's jsfloor): a publish waited for, then a
// consumer that fetches up to 64 at a time and acks each.
func TestProtocolPerDeliveryFloor(t *testing.T) {
	t.Parallel()
	ns, err := server.NewServer(&server.Options{JetStream: true, StoreDir: t.TempDir(), DontListen: true, NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	if !ns.ReadyForConnections(30 * time.Second) {
		t.Fatal("the server did not start")
	}
	p := newProtoCounter()
	ns.SetLoggerV2(p, false, true, false)
	nc, err := nats.Connect("", nats.InProcessServer(ns))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "FLOOR", Subjects: []string{"floor.>"}, Discard: jetstream.DiscardNew,
		Duplicates: 2 * time.Minute, Storage: jetstream.FileStorage, AllowDirect: true})
	if err != nil {
		t.Fatal(err)
	}
	cons, err := st.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "workers", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	p.start()
	var acked atomic.Int64
	stop := make(chan struct{})
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		for {
			select {
			case <-stop:
				return
			default:
			}
			batch, err := cons.Fetch(64, jetstream.FetchMaxWait(time.Second))
			if err != nil {
				if errors.Is(err, nats.ErrConnectionClosed) {
					return
				}
				continue
			}
			for m := range batch.Messages() {
				if m.Ack() == nil {
					acked.Add(1)
				}
			}
		}
	}()
	var wg sync.WaitGroup
	var next atomic.Int64
	for range 64 {
		wg.Go(func() {
			for next.Add(1) <= protoDeliveries {
				msg := &nats.Msg{Subject: "floor.d", Data: benchBody, Header: nats.Header{"Forge-Event": {"issues"}, "Forge-Delivery": {"x"}}}
				if _, err := js.PublishMsg(ctx, msg); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	waitFor(t, 2*time.Minute, "every message acknowledged", func() bool { return acked.Load() >= protoDeliveries })
	counts := p.stop()
	close(stop)
	<-consumed
	protoTable(t, "floor", counts, protoDeliveries)
	if got := float64(counts["sent: pull request"]) / protoDeliveries; got > 0.5 {
		t.Errorf("pull requests: %.3f per delivery, want at most 0.5", got)
	}
}
