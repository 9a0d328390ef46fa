package recstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// leaderWait bounds a read from a leader when the caller's context has no
// deadline.
const leaderWait = 10 * time.Second

// LeaderMsg reads the message at seq of stream from the stream's leader,
// through JetStream's API ($JS.API.STREAM.MSG.GET), never a direct get: a
// direct get may be answered by a replica that does not hold the message
// yet. The error wraps jetstream.ErrMsgNotFound when there is no such
// message and jetstream.ErrStreamNotFound when there is no such stream.
func LeaderMsg(ctx context.Context, nc *nats.Conn, stream string, seq uint64) (*jetstream.RawStreamMsg, error) {
	return leaderGet(ctx, nc, stream, msgGetRequest{Seq: seq})
}

// LeaderLastMsg reads the last message of stream on subject (no wildcards)
// from the stream's leader, as LeaderMsg does, with the same errors.
func LeaderLastMsg(ctx context.Context, nc *nats.Conn, stream, subject string) (*jetstream.RawStreamMsg, error) {
	return leaderGet(ctx, nc, stream, msgGetRequest{LastFor: subject})
}

// msgGetRequest is JetStream's request of a stream's message.
type msgGetRequest struct {
	Seq     uint64 `json:"seq,omitempty"`
	LastFor string `json:"last_by_subj,omitempty"`
}

// fail says which message of stream req asked for, in err.
func (req msgGetRequest) fail(stream string, err error) error {
	if req.LastFor != "" {
		return fmt.Errorf("reading the last message of %s on %s: %w", stream, req.LastFor, err)
	}
	return fmt.Errorf("reading message %d of %s: %w", req.Seq, stream, err)
}

// The err_code values of JetStream's answers that leaderGet maps to
// nats.go's errors.
const (
	errCodeNoMessage      = 10037
	errCodeStreamNotFound = 10059
)

// leaderGet asks the leader of stream for the message req names.
func leaderGet(ctx context.Context, nc *nats.Conn, stream string, req msgGetRequest) (*jetstream.RawStreamMsg, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, leaderWait)
		defer cancel()
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, req.fail(stream, err)
	}
	resp, err := nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+stream, body)
	if err != nil {
		return nil, req.fail(stream, err)
	}
	var ans struct {
		Error *struct {
			ErrCode     int    `json:"err_code"`
			Description string `json:"description"`
		} `json:"error"`
		Message *struct {
			Subject string    `json:"subject"`
			Seq     uint64    `json:"seq"`
			Header  []byte    `json:"hdrs"`
			Data    []byte    `json:"data"`
			Time    time.Time `json:"time"`
		} `json:"message"`
	}
	if err := json.Unmarshal(resp.Data, &ans); err != nil {
		return nil, req.fail(stream, err)
	}
	switch {
	case ans.Error != nil && ans.Error.ErrCode == errCodeNoMessage:
		return nil, req.fail(stream, jetstream.ErrMsgNotFound)
	case ans.Error != nil && ans.Error.ErrCode == errCodeStreamNotFound:
		return nil, req.fail(stream, jetstream.ErrStreamNotFound)
	case ans.Error != nil:
		return nil, req.fail(stream, fmt.Errorf("%s (%d)", ans.Error.Description, ans.Error.ErrCode))
	case ans.Message == nil:
		return nil, req.fail(stream, errors.New("an empty answer"))
	}
	out := &jetstream.RawStreamMsg{Subject: ans.Message.Subject, Sequence: ans.Message.Seq, Data: ans.Message.Data, Time: ans.Message.Time}
	if len(ans.Message.Header) > 0 {
		if out.Header, err = nats.DecodeHeadersMsg(ans.Message.Header); err != nil {
			return nil, req.fail(stream, err)
		}
	}
	return out, nil
}

// LeaderReads returns kv with its reads (Get, GetRevision) sent to the
// leader of its stream (LeaderMsg), whatever the stream's AllowDirect says;
// its other methods are kv's. A read from a replica that lags, for seconds
// while a leader is elected, would take a record just written for one
// missing.
//
// The reads do not follow AllowDirect because nats.go's bucket follows the
// value it read when it was opened, which another process may change later
// (each one that opens the bucket writes its configuration): a bucket opened
// while it was on sends direct gets after it is turned off, and each is
// answered "no responders".
func LeaderReads(nc *nats.Conn, kv jetstream.KeyValue) jetstream.KeyValue {
	return &leaderKV{KeyValue: kv, nc: nc, stream: "KV_" + kv.Bucket(), pre: "$KV." + kv.Bucket() + "."}
}

// leaderKV is a bucket read from its leader (LeaderReads).
type leaderKV struct {
	jetstream.KeyValue
	nc     *nats.Conn
	stream string // the bucket's stream, KV_<bucket>
	pre    string // "$KV.<bucket>.", the prefix of a key's subject
}

// Get returns key's last value, as jetstream.KeyValue's Get does.
func (kv *leaderKV) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	if !validBucketKey(key) {
		return nil, jetstream.ErrInvalidKey
	}
	m, err := LeaderLastMsg(ctx, kv.nc, kv.stream, kv.pre+key)
	return kv.entry(key, m, err)
}

// GetRevision returns key's value at revision, as jetstream.KeyValue's
// GetRevision does.
func (kv *leaderKV) GetRevision(ctx context.Context, key string, revision uint64) (jetstream.KeyValueEntry, error) {
	if !validBucketKey(key) {
		return nil, jetstream.ErrInvalidKey
	}
	m, err := LeaderMsg(ctx, kv.nc, kv.stream, revision)
	if err == nil && m.Subject != kv.pre+key {
		return nil, jetstream.ErrKeyNotFound
	}
	return kv.entry(key, m, err)
}

// entry makes the entry of key read as m; a message missing, or one that
// marks the key deleted or purged, is jetstream.ErrKeyNotFound.
func (kv *leaderKV) entry(key string, m *jetstream.RawStreamMsg, err error) (jetstream.KeyValueEntry, error) {
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, jetstream.ErrKeyNotFound
	}
	if err != nil {
		return nil, err
	}
	switch m.Header.Get("KV-Operation") {
	case "DEL", "PURGE":
		return nil, jetstream.ErrKeyNotFound
	}
	switch m.Header.Get(jetstream.MarkerReasonHeader) {
	case "MaxAge", "Purge", "Remove":
		return nil, jetstream.ErrKeyNotFound
	}
	return &kvEntry{bucket: kv.Bucket(), key: key, value: m.Data, rev: m.Sequence, created: m.Time}, nil
}

// validBucketKey reports whether key names one key of a bucket: tokens of
// a subject, no wildcards, which would make a read by subject match others.
func validBucketKey(key string) bool {
	if key == "" || key[0] == '.' || key[len(key)-1] == '.' || strings.Contains(key, "..") {
		return false
	}
	return !strings.ContainsAny(key, "*> \t\r\n")
}

// kvEntry is a value read by leaderKV.
type kvEntry struct {
	bucket, key string
	value       []byte
	rev         uint64
	created     time.Time
}

func (e *kvEntry) Bucket() string                  { return e.bucket }
func (e *kvEntry) Key() string                     { return e.key }
func (e *kvEntry) Value() []byte                   { return e.value }
func (e *kvEntry) Revision() uint64                { return e.rev }
func (e *kvEntry) Created() time.Time              { return e.created }
func (e *kvEntry) Delta() uint64                   { return 0 }
func (e *kvEntry) Operation() jetstream.KeyValueOp { return jetstream.KeyValuePut }
