package inbox

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/inbox/internal/recstore"
	"forgehooks.dev/forgehooks/webhooks"
)

// unreadStatus is the inbox's status store whose reads fail while failing
// is set, as they do while a node is shut down or a leader elected.
type unreadStatus struct {
	recstore.Records
	failing atomic.Bool
	failed  atomic.Int64
}

func (u *unreadStatus) Get(ctx context.Context, key string) ([]byte, error) {
	if u.failing.Load() {
		u.failed.Add(1)
		return nil, context.DeadlineExceeded
	}
	return u.Records.Get(ctx, key)
}

func (u *unreadStatus) Has(ctx context.Context, key string) (bool, error) {
	if u.failing.Load() {
		u.failed.Add(1)
		return false, context.DeadlineExceeded
	}
	return u.Records.Has(ctx, key)
}

// TestStatusUnreadIsNotNone: a delivery handled already comes back to a
// receiver (its key's record naming it again after a crash, or its
// partition or the workers' consumer handing it out again) while its status
// cannot be read. It must not run again: for an ordered delivery that run
// would come after the later deliveries of its key. Once the status can be
// read, it is found handled and settled without a run.
func TestStatusUnreadIsNotNone(t *testing.T) {
	for _, tt := range []struct {
		name    string
		ordered bool
		// back brings the handled delivery at seq back to the receiver.
		back func(t *testing.T, in *Inbox, seq uint64) (settle func())
	}{
		{"the head of its key's record", true, headAgain},
		{"admitted again by its partition", true, admittedAgain},
		{"handed out again to the workers", false, handedOutAgain},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var runs atomic.Int32
			wh := newWebhooks(t)
			wh.OnAny(func(context.Context, emitter.Event) error {
				runs.Add(1)
				return nil
			})
			o := Options{Dir: t.TempDir(), Receiver: wh, Logger: quiet(t)}
			if tt.ordered {
				o.OrderBy = ByRepository
			}
			ctx := context.Background()
			in, err := Open(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { in.Close(context.Background()) })
			st := &unreadStatus{Records: in.status}
			in.status = st
			if err := in.Start(ctx); err != nil {
				t.Fatal(err)
			}
			d := webhooks.Delivery{ID: "u-1", Name: "issues", Payload: []byte(`{"action":"opened","repository":{"id":7,"full_name":"o/r"}}`)}
			if _, err := in.Enqueue(ctx, d); err != nil {
				t.Fatal(err)
			}
			waitHandled(t, in, d.ID, 30*time.Second)
			r, err := in.Get(ctx, d.ID)
			if err != nil {
				t.Fatal(err)
			}
			st.failing.Store(true)
			settle := tt.back(t, in, r.Seq)
			waitFor(t, 30*time.Second, "a read of the status", func() bool { return st.failed.Load() > 0 })
			time.Sleep(200 * time.Millisecond)
			if n := runs.Load(); n != 1 {
				t.Fatalf("with its status unread, the handled delivery ran again: %d runs", n)
			}
			st.failing.Store(false)
			settle()
			if n := runs.Load(); n != 1 {
				t.Fatalf("once its status was read, the handled delivery ran again: %d runs", n)
			}
		})
	}
}

// orderKeyRecord reads the record of key; nil when there is none.
func orderKeyRecord(t *testing.T, in *Inbox, key string) jetstream.KeyValueEntry {
	t.Helper()
	e, err := in.keyBucket.Get(context.Background(), keyName(key))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// headAgain writes a record naming the delivery at seq as its key's Head,
// as a crash after its status was written and before its key went on
// leaves it.
func headAgain(t *testing.T, in *Inbox, seq uint64) func() {
	rec := keyRecord{Key: "repository:7", Head: seq, Tail: seq, Due: time.Now()}
	if _, err := in.keyBucket.Create(context.Background(), keyName(rec.Key), rec.Marshal()); err != nil {
		t.Fatal(err)
	}
	return func() {
		waitFor(t, 30*time.Second, "the key's record to go", func() bool { return orderKeyRecord(t, in, rec.Key) == nil })
	}
}

// redelivered returns the message at seq as a consumer hands it out a
// second time, with the consumer.
func redelivered(t *testing.T, in *Inbox, seq uint64) (jetstream.Consumer, jetstream.Msg) {
	ctx := context.Background()
	m, err := in.inbox.GetMsg(ctx, seq)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := in.inbox.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable: "UNREAD", FilterSubject: m.Subject, DeliverPolicy: jetstream.DeliverByStartSequencePolicy,
		OptStartSeq: seq, AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	first := fetchOne(t, cons)
	if err := first.Nak(); err != nil {
		t.Fatal(err)
	}
	msg := fetchOne(t, cons)
	if meta, err := msg.Metadata(); err != nil || meta.NumDelivered != 2 || meta.Sequence.Stream != seq {
		t.Fatalf("the message handed out again: %+v, %v", meta, err)
	}
	return cons, msg
}

func fetchOne(t *testing.T, cons jetstream.Consumer) jetstream.Msg {
	t.Helper()
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for msg := range batch.Messages() {
		return msg
	}
	t.Fatalf("nothing handed out: %v", batch.Error())
	return nil
}

// admittedAgain hands the ordered delivery at seq to admit a second time,
// as its partition does when the acknowledgement of its first admission was
// lost: its key has no record any more.
func admittedAgain(t *testing.T, in *Inbox, seq uint64) func() {
	return handAgain(t, in, seq, in.started.ordered.admit, func() {
		if orderKeyRecord(t, in, "repository:7") != nil {
			t.Fatal("admitted again with its status unread: its key has a record naming it")
		}
	})
}

// handedOutAgain hands the unordered delivery at seq to the workers'
// handle a second time, as the workers' consumer does when its
// acknowledgement was lost.
func handedOutAgain(t *testing.T, in *Inbox, seq uint64) func() {
	return handAgain(t, in, seq, in.started.handle, func() {})
}

// handAgain passes the delivery at seq, handed out again, to take; then,
// once its status can be read, the copy handed out after take gave it back,
// and checks that take acknowledged it.
func handAgain(t *testing.T, in *Inbox, seq uint64, take func(jetstream.Msg), check func()) func() {
	cons, msg := redelivered(t, in, seq)
	take(msg)
	check()
	return func() {
		again := fetchOne(t, cons) // given back, with a delay
		take(again)
		check()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := cons.Next(jetstream.FetchMaxWait(3 * time.Second)); err == nil {
			t.Error("handed out again once its status was read: it was not acknowledged")
		}
		_ = ctx
	}
}
