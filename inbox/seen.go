package inbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/inbox/internal/recstore"
	"forgehooks.dev/forgehooks/inbox/internal/stored"
	"forgehooks.dev/forgehooks/webhooks"
)

// What the inbox remembers of the deliveries it stored, for the duplicate
// window, in a bucket of its own (Name_SEEN): for each delivery id, the
// digest of its body; for each body digest, the id it came with. Dedupe
// reads this state, not the stored message (whose body may have been dropped
// after HandledRetention) nor JetStream's duplicate map (rebuilt from the
// messages at start, and kept in memory for its whole window: JetStream's
// own window is kept short, jsDuplicates, to cover concurrent stores only).

// jsDuplicates is the inbox stream's own duplicate window: long enough that
// two stores of one id at the same moment store it once.
const jsDuplicates = 2 * time.Minute

// Counters are totals, since Open, of what Enqueue found. A metrics
// exporter reads them with Inbox.Counters.
type Counters struct {
	// Duplicates counts deliveries answered duplicate because their id was
	// stored already (queued, retrying, running or handled).
	Duplicates uint64
	// Requeued counts redeliveries of a dead letter that made it run again.
	Requeued uint64
	// Replays counts deliveries refused as possible replays: their body was
	// stored already under another id (see Options.AllowRepeatedBodies).
	Replays uint64
	// IDReuses counts deliveries whose id was stored already with a
	// different body: not the forge's redelivery (which sends the same
	// bytes), so a possible replay or a sender reusing ids.
	IDReuses uint64
	// Unsealed, BadSeals and NotDeliveries count the stored messages the
	// workers refused to run and made dead letters at once: without a
	// seal, with a seal that does not hold under the inbox key, or not a
	// delivery (headers missing, a body that is not a JSON object).
	Unsealed, BadSeals, NotDeliveries uint64
}

// counters are the atomic counts behind Counters.
type counters struct {
	duplicates, requeued, replays, idReuses atomic.Uint64
	unsealed, badSeals, notDeliveries       atomic.Uint64
}

// Counters returns the counts of duplicates, requeued dead letters,
// possible replays and id reuses since Open.
func (in *Inbox) Counters() Counters {
	return Counters{
		Duplicates:    in.count.duplicates.Load(),
		Requeued:      in.count.requeued.Load(),
		Replays:       in.count.replays.Load(),
		IDReuses:      in.count.idReuses.Load(),
		Unsealed:      in.count.unsealed.Load(),
		BadSeals:      in.count.badSeals.Load(),
		NotDeliveries: in.count.notDeliveries.Load(),
	}
}

// seenID is what the bucket holds for a delivery id.
type seenID struct {
	Digest string `json:"d"`
	// Seq is the sequence of the copy stored last by Enqueue, Retry or
	// Replay: with stored subjects shared by all deliveries, how a
	// delivery is found by id (lastStored).
	Seq uint64 `json:"s,omitempty"`
	// ID is the delivery's id: the record is also the body digest's.
	ID string `json:"id,omitempty"`
}

// seenBodyID is the delivery id a body digest's record names: the record
// of the delivery (seenID), or the bare id an earlier version wrote.
func seenBodyID(v []byte) string {
	var s seenID
	if json.Unmarshal(v, &s) == nil && s.ID != "" {
		return s.ID
	}
	return string(v)
}

func seenIDKey(token string) string    { return "i_" + token }
func seenBodyKey(digest string) string { return "b_" + digest }

// bodyDigest is the hex SHA-256 of a body.
func bodyDigest(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}

// tenantDigest is the replay guard's digest of a body: per tenant, since one
// event sent to two tenants' hooks comes with the same body.
func tenantDigest(tenant string, body []byte) string {
	if tenant == "" {
		return bodyDigest(body)
	}
	h := sha256.New()
	h.Write([]byte(tenant))
	h.Write([]byte{0})
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// known decides, from the inbox's state, what becomes of a delivery whose id
// or body may have been stored before: ok false when it is new and must be
// stored. A dead letter under the same id and body is stored again (its
// handlers run on a fresh schedule).
func (in *Inbox) known(ctx context.Context, d webhooks.Delivery, token, digest string) (res webhooks.EnqueueResult, ok bool, err error) {
	// In a cluster the body's digest is looked up at the same time as the
	// id: a new delivery, the common case, then costs one round trip of
	// waiting. The embedded index answers "none" from memory: it is asked
	// only when needed.
	byBody := func() ([]byte, error) { return in.getSeen(ctx, seenBodyKey(digest)) }
	if _, local := in.seen.(*recstore.Indexed); !local && !in.opts.AllowRepeatedBodies {
		type found struct {
			v   []byte
			err error
		}
		ch := make(chan found, 1)
		go func() {
			v, err := in.getSeen(ctx, seenBodyKey(digest))
			ch <- found{v, err}
		}()
		byBody = func() ([]byte, error) {
			f := <-ch
			return f.v, f.err
		}
	}
	v, err := in.getSeen(ctx, seenIDKey(token))
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
	case err != nil:
		return 0, true, fmt.Errorf("inbox: looking up delivery %q: %w", d.ID, err)
	default:
		var s seenID
		_ = json.Unmarshal(v, &s)
		if s.Digest != "" && s.Digest != digest {
			in.count.idReuses.Add(1)
			in.log.Warn("inbox: a different body under a delivery id already stored (id reuse, a possible replay); answered duplicate, not stored",
				"delivery", d.ID, "event", d.Name, "bytes", len(d.Payload))
			return webhooks.Duplicate, true, nil
		}
		_, derr := in.dead.GetLastMsgForSubject(ctx, in.deadSubj+token)
		switch {
		case derr == nil:
			if err := in.Retry(ctx, stored.DeliveryKey(d.Tenant, d.ID)); err != nil && !errors.Is(err, delivery.ErrNotDead) {
				return 0, true, fmt.Errorf("inbox: requeuing dead letter %q: %w", d.ID, err)
			} else if err == nil {
				in.count.requeued.Add(1)
				in.log.Info("inbox: a redelivery of a dead letter; it runs again on a fresh schedule", "delivery", d.ID, "event", d.Name)
				return webhooks.Requeued, true, nil
			}
		case !errors.Is(derr, jetstream.ErrMsgNotFound):
			return 0, true, fmt.Errorf("inbox: looking up dead letter %q: %w", d.ID, derr)
		}
		in.count.duplicates.Add(1)
		return webhooks.Duplicate, true, nil
	}
	if in.opts.AllowRepeatedBodies {
		return 0, false, nil
	}
	v, err = byBody()
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return 0, false, nil
	case err != nil:
		return 0, true, fmt.Errorf("inbox: looking up the body of delivery %q: %w", d.ID, err)
	}
	if seenBodyID(v) == d.ID {
		// The same delivery, its id's record not written yet.
		in.count.duplicates.Add(1)
		return webhooks.Duplicate, true, nil
	}
	in.replay(d, seenBodyID(v))
	return webhooks.Duplicate, true, nil
}

// replay counts and logs a possible replay: d's body was stored under the
// id storedAs ("" when not known).
func (in *Inbox) replay(d webhooks.Delivery, storedAs string) {
	in.count.replays.Add(1)
	in.log.Warn("inbox: a body already stored under another delivery id (a possible replay); answered duplicate, not stored",
		"delivery", d.ID, "event", d.Name, "stored_as", storedAs)
}

// duplicateAtOnce counts a delivery that the stream itself found a
// duplicate of the message at seq (stored a moment before, before remember's
// writes landed): a possible replay when the replay guard keys the stream's
// duplicates by body and that message has another id.
func (in *Inbox) duplicateAtOnce(ctx context.Context, d webhooks.Delivery, seq uint64) {
	if d.ID != "" && !in.opts.AllowRepeatedBodies {
		if m, err := in.inbox.GetMsg(ctx, seq); err == nil && m.Header.Get(stored.HeaderDelivery) != d.ID {
			in.replay(d, m.Header.Get(stored.HeaderDelivery))
			return
		}
	}
	in.count.duplicates.Add(1)
}

// remember writes what known reads for a delivery just stored, and returns
// once the store acknowledged it: from the 2xx on, the id stays known
// across a crash (the writes of concurrent deliveries share one record in
// the embedded mode). It waits out what publishRetrying waits out.
func (in *Inbox) remember(ctx context.Context, id, token, digest string, seq uint64) error {
	_, local := in.seen.(*recstore.Indexed)
	return in.retrying(ctx, func(ctx context.Context) error {
		switch {
		case in.opts.AllowRepeatedBodies:
			rec, _ := json.Marshal(seenID{Digest: digest, Seq: seq})
			return in.seen.PutWait(ctx, rec, seenIDKey(token))
		case local:
			// One record for both keys: one write fewer per delivery.
			return in.seen.PutWait(ctx, stored.SeenRecord(digest, seq, id), seenIDKey(token), seenBodyKey(digest))
		default:
			// A bucket's key per value, as receivers of an earlier version
			// in the same cluster read them; written at the same time.
			rec, _ := json.Marshal(seenID{Digest: digest, Seq: seq})
			errs := make(chan error, 1)
			go func() { errs <- in.seen.PutWait(ctx, []byte(id), seenBodyKey(digest)) }()
			return errors.Join(in.seen.PutWait(ctx, rec, seenIDKey(token)), <-errs)
		}
	})
}

// rememberDuplicate makes sure that d's id stays known after it is answered
// as a duplicate of the delivery stored at seq by JetStream's own window:
// the request that stored it may have died before writing its records (or
// stored another id under the same body). Only the id's record is written:
// the body's names the delivery stored.
func (in *Inbox) rememberDuplicate(ctx context.Context, d webhooks.Delivery, token, digest string, seq uint64) error {
	if d.ID == "" {
		return nil
	}
	if ok, err := in.seen.Has(ctx, seenIDKey(token)); err == nil && ok {
		return nil
	}
	rec, _ := json.Marshal(seenID{Digest: digest, Seq: seq})
	return in.retrying(ctx, func(ctx context.Context) error { return in.seen.PutWait(ctx, rec, seenIDKey(token)) })
}

// rememberStored writes the dedupe records of the delivery stored at seq
// when they are missing: a delivery found leased at a start may have been
// stored by a process that died before its records were written.
func (in *Inbox) rememberStored(ctx context.Context, seq uint64) error {
	m, err := in.inbox.GetMsg(ctx, seq)
	if err != nil {
		return err
	}
	id := m.Header.Get(stored.HeaderDelivery)
	if id == "" || m.Header.Get(stored.HeaderKey) != "" {
		return nil // no id, or a copy stored again (its records exist)
	}
	tenant := m.Header.Get(stored.HeaderTenant)
	token := stored.SubjectToken(stored.DeliveryKey(tenant, id))
	if ok, err := in.seen.Has(ctx, seenIDKey(token)); err != nil || ok {
		return err
	}
	return in.remember(ctx, id, token, tenantDigest(tenant, m.Data), seq)
}
