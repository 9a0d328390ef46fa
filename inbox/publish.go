package inbox

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"forgehooks.dev/forgehooks/inbox/internal/embedded"
	"forgehooks.dev/forgehooks/inbox/internal/recstore"
	"forgehooks.dev/forgehooks/inbox/internal/stored"
)

// Error codes of the NATS server that the client names no constant for.
const (
	// errCodeDuplicateInProcess: a message with the same Nats-Msg-Id is
	// being stored (proposed, not yet applied) by the cluster.
	errCodeDuplicateInProcess jetstream.ErrorCode = 10158
	// errCodeJetStreamUnavailable: "JetStream system temporarily
	// unavailable", during an election.
	errCodeJetStreamUnavailable jetstream.ErrorCode = 10008
)

const (
	// publishAttempt bounds one publish (or record write) in a cluster: a
	// stream leader that died takes the request with it, and the next
	// attempt goes to the new one. The embedded server has no leader to
	// lose, and there an attempt runs until its context is done.
	publishAttempt = 2 * time.Second
	// publishRate is the slowest pace at which the bytes of the publishes
	// under way on the connection are counted on to reach the store: an
	// attempt in a cluster also gets their time at this pace, since its
	// answer comes only after them and an attempt cut short sends its
	// whole message again.
	publishRate = 8 << 20 // bytes per second
	// publishPatience bounds the retries of a publish whose context has no
	// deadline.
	publishPatience = 10 * time.Second
)

// publishRetrying publishes a delivery and, while the store cannot answer
// for a moment, publishes it again with a growing pause until ctx is done:
// a stream leader being elected, the connection failing over to another
// node, or the same delivery id being stored at that moment through another
// receiver (the retry then finds it stored: a duplicate, or stores it when
// that first publish failed). A retry after an attempt whose answer was lost
// may find that attempt's own write: the nonce header tells it from another
// request's, and the delivery is then reported stored, not a duplicate, so
// that the caller records it as its own. Errors that waiting cannot cure (a
// limit reached, a full disk, a message too large) return at once.
func (in *Inbox) publishRetrying(ctx context.Context, msg *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	nonce := strconv.FormatUint(rand.Uint64(), 36)
	msg.Header.Set(stored.HeaderNonce, nonce)
	var ack *jetstream.PubAck
	lost := false // an attempt may have been stored without our hearing of it
	size := int64(len(msg.Data))
	in.sending.Add(size)
	defer in.sending.Add(-size)
	err := in.retrying(ctx, func(ctx context.Context) (err error) {
		ack, err = in.js.PublishMsg(ctx, msg, opts...)
		lost = lost || err != nil && !refusedPublish(err)
		return err
	})
	if err == nil && ack.Duplicate && lost {
		if m, gerr := in.inbox.GetMsg(ctx, ack.Sequence); gerr == nil && m.Header.Get(stored.HeaderNonce) == nonce {
			ack.Duplicate = false
		}
	}
	return ack, err
}

// getSeen reads key of the dedupe bucket, waiting out what publishRetrying
// waits out. The embedded index answers a key it holds no record of from
// memory (a new delivery's lookups), without an attempt: its Has is true for
// every key Get may find, so a false one is Get's ErrKeyNotFound.
func (in *Inbox) getSeen(ctx context.Context, key string) ([]byte, error) {
	if ix, ok := in.seen.(*recstore.Indexed); ok {
		if has, err := ix.Has(ctx, key); err == nil && !has {
			return nil, jetstream.ErrKeyNotFound
		}
	}
	var v []byte
	err := in.retrying(ctx, func(ctx context.Context) (err error) {
		v, err = in.seen.Get(ctx, key)
		return err
	})
	return v, err
}

// retrying runs op, each attempt bounded by attemptBound, until it
// succeeds, fails with an error that waiting cannot cure, or ctx is done.
func (in *Inbox) retrying(ctx context.Context, op func(context.Context) error) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, publishPatience)
		defer cancel()
	}
	pause := 10 * time.Millisecond
	for {
		if in.store.down() {
			return errStoreDown
		}
		actx, cancel := ctx, context.CancelFunc(func() {})
		if bound, ok := in.attemptBound(); ok {
			actx, cancel = context.WithTimeout(ctx, bound)
		} else {
			// Nobody answers a request to a server that restarts (store.go).
			actx, cancel = in.ns.Attempt(ctx)
		}
		err := op(actx)
		stopped := in.ns != nil && embedded.Stopped(actx)
		cancel()
		if err == nil || !stopped && !transientPublishError(err) || in.isClosed() {
			return err
		}
		// Jitter spreads the retries of many requests over the election.
		t := time.NewTimer(pause/2 + rand.N(pause))
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		pause = min(2*pause, 400*time.Millisecond)
	}
}

// attemptBound is how long one attempt of retrying may wait for the store's
// answer, false when only its context bounds it (the embedded server, whose
// requests nothing loses on the way: an attempt cut short there would only
// send its message again behind itself, adding to what kept it waiting). In
// a cluster: publishAttempt, plus the time the bytes under way on the
// connection take at publishRate, which the answer waits behind.
func (in *Inbox) attemptBound() (time.Duration, bool) {
	if in.ns != nil {
		return 0, false
	}
	return publishAttempt + time.Duration(in.sending.Load())*time.Second/publishRate, true
}

// refusedPublish reports an error after which the store certainly did not
// take the message (it said so), as opposed to an answer that never came.
func refusedPublish(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) || errors.Is(err, nats.ErrNoResponders)
}

// transientPublishError reports an error that a publish a moment later may
// not meet.
func transientPublishError(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case errCodeDuplicateInProcess, errCodeJetStreamUnavailable:
			return true
		case errCodeInsufficientResources, errCodeStoreFailed:
			return false
		}
		return apiErr.Code == 503
	}
	return errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrConnectionReconnecting) || errors.Is(err, nats.ErrReconnectBufExceeded) ||
		errors.Is(err, nats.ErrDisconnected)
}
