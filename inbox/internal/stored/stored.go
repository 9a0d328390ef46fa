// Package stored is the encoding of an inbox's stored messages, shared by
// the side that takes deliveries in (package inbox) and the side that runs
// them (package runner): the headers the inbox writes on a delivery, the
// tokens and keys a delivery is known by, the status record of each
// delivery, the check that a stored message is a delivery at all, and the
// Record a stored message lists as.
package stored

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/internal/clip"
	"forgehooks.dev/forgehooks/internal/jsonscan"
	"forgehooks.dev/forgehooks/webhooks"
)

// Headers the inbox writes on a stored delivery. A request's own headers with
// these prefixes are dropped (see RequestHeader).
const (
	HeaderVersion    = "Forgehooks-Version"
	HeaderEvent      = "Forgehooks-Event"
	HeaderDelivery   = "Forgehooks-Delivery"
	HeaderSignature  = "Forgehooks-Signature"
	HeaderReceivedAt = "Forgehooks-Received-At"
	// HeaderTenant names the delivery's tenant (webhooks.Tenants). A sender
	// cannot set it: the request's Forgehooks- headers are dropped.
	HeaderTenant = "Forgehooks-Tenant"
	// What a list shows, read from the payload when it was stored.
	HeaderAction     = "Forgehooks-Action"
	HeaderRepository = "Forgehooks-Repository"
	HeaderSender     = "Forgehooks-Sender"
	HeaderSize       = "Forgehooks-Size"
	// HeaderExactAction ("1") says that the intake validated the payload
	// and HeaderAction holds its top-level action exactly, or that it has
	// none when HeaderAction is absent (IngestAction).
	HeaderExactAction = "Forgehooks-Exact-Action"
	// HeaderBefore, on a delivery stored again by Retry or Replay, counts the
	// attempts made before, so that attempt numbers go on.
	HeaderBefore = "Forgehooks-Attempts-Before"
	// HeaderKey, on a delivery stored again, names its status key.
	HeaderKey = "Forgehooks-Key"
	// On a dead letter: the last error, the attempts, the inbox sequence.
	// HeaderSeq also names the delivery a key's parked entry stands for.
	HeaderError    = "Forgehooks-Error"
	HeaderAttempts = "Forgehooks-Attempts"
	HeaderSeq      = "Forgehooks-Seq"
	// HeaderPartition names the partition of an ordered delivery.
	HeaderPartition = "Forgehooks-Partition"
	// HeaderOrderKey, on an ordered delivery, is its key (clipped to
	// MaxOrderKey).
	HeaderOrderKey = "Forgehooks-Order-Key"
	// HeaderNonce tells a publish's own write from another request's.
	HeaderNonce = "Forgehooks-Nonce"
)

// Version is the value of HeaderVersion on every delivery the inbox stores.
const Version = "1"

// MaxOrderKey bounds the order key kept in a header and a key's record.
const MaxOrderKey = 256

// ClipKey bounds an order key as it is stored.
func ClipKey(key string) string {
	if len(key) > MaxOrderKey {
		return key[:MaxOrderKey]
	}
	return key
}

// StoreToken ends the subjects deliveries are stored on: <Name>.in.q, or
// <Name>.in.p<N>.q in a partition. A few subjects in all, not one per
// delivery: JetStream keeps an index entry in memory for every subject of a
// stream. Stores written before have a subject per delivery,
// <Name>.in[.p<N>].<token>, still read (TokenOf).
const StoreToken = "q"

// PartitionToken is the subject token of partition p: "p" and its number.
// Delivery tokens start with "i", "h" or "n" (SubjectToken), and the stored
// subjects end in StoreToken, so none can be mistaken for another.
func PartitionToken(p int) string { return "p" + strconv.Itoa(p) }

// OverflowToken starts the subjects of the deliveries a tenant stores
// while it has a backlog: <Name>.in.t.<TenantDigest>.q, one subject per such
// tenant (package overflow). The workers' consumer takes one or two tokens
// after <Name>.in., so it never takes these three.
const OverflowToken = "t"

// TenantDigest is the subject token of tenant among the overflow subjects:
// 16 hex digits of its SHA-256 (tenant names are not all subject tokens; ""
// is the group of the deliveries without a tenant).
func TenantDigest(tenant string) string {
	sum := sha256.Sum256([]byte(tenant))
	return hex.EncodeToString(sum[:8])
}

// ValidPartitionToken reports whether p is a partition's token as
// PartitionToken writes it.
func ValidPartitionToken(p string) bool {
	n, err := strconv.Atoi(strings.TrimPrefix(p, "p"))
	return strings.HasPrefix(p, "p") && err == nil && n >= 0 && strconv.Itoa(n) == p[1:]
}

// DeliveryKey is what a delivery is known by in the inbox (its subject
// token, status and dedupe record): its id, or with a tenant "tenant/id", so
// that two tenants' hooks may receive one delivery id and each is stored.
// Tenant names hold no slash (webhooks.ValidTenantName).
func DeliveryKey(tenant, id string) string {
	if tenant == "" || id == "" {
		return id
	}
	return tenant + "/" + id
}

// SubjectToken is the token of a delivery with id (a DeliveryKey): the id
// in base64url (subjects and keys allow its alphabet; the id may hold
// anything), or its SHA-256 when long; "n" for a delivery without an id.
func SubjectToken(id string) string {
	if id == "" {
		return "n"
	}
	if len(id) > 96 {
		sum := sha256.Sum256([]byte(id))
		return "h" + hex.EncodeToString(sum[:])
	}
	// One allocation, the token's: the id and its encoding are copied
	// through arrays on the stack (the id is at most 96 bytes here).
	var src [96]byte
	var dst [1 + 128]byte
	n := copy(src[:], id)
	dst[0] = 'i'
	m := base64.RawURLEncoding.EncodedLen(n)
	base64.RawURLEncoding.Encode(dst[1:1+m], src[:n])
	return string(dst[:1+m])
}

// TokenOf returns the token (SubjectToken) of the delivery stored as a
// message with header h on subject: its id's, or, in a store written with a
// subject per delivery, the subject's last token.
func TokenOf(h nats.Header, subject string) string {
	if t := LastToken(subject); t != StoreToken {
		return t
	}
	return SubjectToken(DeliveryKey(h.Get(HeaderTenant), h.Get(HeaderDelivery)))
}

// StatusKey is a stored message's key in the status records: its
// delivery's token, or for a delivery without an id its first sequence.
func StatusKey(h nats.Header, token string, seq uint64) string {
	if k := h.Get(HeaderKey); k != "" {
		return k
	}
	if token == "n" {
		return "s" + strconv.FormatUint(seq, 10)
	}
	return token
}

// LastToken is the last token of a subject.
func LastToken(subject string) string {
	return subject[strings.LastIndexByte(subject, '.')+1:]
}

// InternalHeader reports a header name a sender must not set.
func InternalHeader(name string) bool {
	return hasPrefixFold(name, "nats-") || hasPrefixFold(name, "forgehooks-")
}

// hasPrefixFold reports whether s begins with prefix (lower case ASCII)
// in any ASCII case, without the copy that lowering s would make (twice per
// header of every delivery). Header names are ASCII tokens: net/http refuses
// others.
func hasPrefixFold(s, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != prefix[i] {
			return false
		}
	}
	return true
}

// RequestHeader copies a request's headers for the store, without those
// that would instruct JetStream or pass for the inbox's own, and without the
// connection's.
func RequestHeader(h http.Header) nats.Header {
	// Room for the inbox's own headers, which the caller adds (up to 16):
	// a map that grows rehashes.
	out := make(nats.Header, len(h)+16)
	for k, v := range h {
		if InternalHeader(k) || strings.EqualFold(k, "Content-Length") || strings.EqualFold(k, "Connection") {
			continue
		}
		out[k] = v
	}
	return out
}

// HTTPHeader returns the request's headers kept in a stored message.
func HTTPHeader(h nats.Header) http.Header {
	out := make(http.Header, len(h))
	for k, v := range h {
		if InternalHeader(k) {
			continue
		}
		out[http.CanonicalHeaderKey(k)] = v
	}
	return out
}

// Int reads a header's number; 0 when it holds none.
func Int(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// NotADelivery says why a stored message is not a delivery the inbox wrote,
// or returns "". A body whose size header the inbox wrote was checked when
// it was taken in and is trusted; any other (written by something else, or
// by an older version) is checked here.
func NotADelivery(h nats.Header, data []byte) string {
	switch {
	case h.Get(HeaderVersion) != Version:
		return "no " + HeaderVersion + " header " + Version + " (a message published by something else?)"
	case h.Get(HeaderEvent) == "":
		return "no " + HeaderEvent + " header"
	}
	if !sizeIs(h, len(data)) {
		if _, err := jsonscan.Scan(data); err != nil {
			return "the payload is not a JSON object: " + err.Error()
		}
	}
	return ""
}

// IngestAction returns the payload's top-level action (emitter.Event.Action)
// as the inbox's intake found it when it validated the payload, with ok
// when the stored message says so exactly: HeaderExactAction, and data the
// body the intake stored (HeaderSize). The caller has checked the seal,
// which proves both unchanged since. Otherwise (stored before, or an
// action no header carries as it is) ok is false and the caller scans data.
func IngestAction(h nats.Header, data []byte) (action string, ok bool) {
	if h.Get(HeaderExactAction) != "1" || !sizeIs(h, len(data)) {
		return "", false
	}
	return h.Get(HeaderAction), true
}

// lineBreaks replaces line breaks byte by byte, as NATS does (whatever the
// value's encoding).
var lineBreaks = strings.NewReplacer("\r", " ", "\n", " ")

// Carried is a header value as NATS carries it: blanks and line breaks at
// either end trimmed, line breaks within replaced by spaces. A message read
// back holds its values so; the seal covers them so.
func Carried(v string) string {
	v = textproto.TrimString(v)
	if strings.IndexByte(v, '\n') >= 0 || strings.IndexByte(v, '\r') >= 0 {
		return lineBreaks.Replace(v)
	}
	return v
}

// sizeIs reports whether h's HeaderSize is n as SetMeta writes it.
func sizeIs(h nats.Header, n int) bool {
	var buf [20]byte
	return h.Get(HeaderSize) == string(strconv.AppendInt(buf[:0], int64(n), 10))
}

// Delivery is the delivery a stored message holds, as its handlers see it
// on its attempt. A delivery stored without its request's headers (library
// use) gets those the forge would have sent.
func Delivery(h nats.Header, data []byte, attempt int) webhooks.Delivery {
	received, _ := time.Parse(time.RFC3339Nano, h.Get(HeaderReceivedAt))
	id, event, sig := h.Get(HeaderDelivery), h.Get(HeaderEvent), h.Get(HeaderSignature)
	header := HTTPHeader(h)
	for _, kv := range [...][2]string{{webhooks.HeaderEvent, event}, {webhooks.HeaderDelivery, id}, {webhooks.HeaderSignature, sig}} {
		if kv[1] != "" && header.Get(kv[0]) == "" {
			header.Set(kv[0], kv[1])
		}
	}
	return webhooks.Delivery{ID: id, Name: event, Payload: data, Signature: sig, Header: header,
		ReceivedAt: received, Attempt: attempt, Tenant: h.Get(HeaderTenant)}
}

// FirstLine is the first line of s, at most 1 KiB: what a header keeps of
// an error.
func FirstLine(s string) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i]
	}
	if len(s) > 1024 {
		s = s[:1024]
	}
	return s
}

// MetaPaths are the payload values a list shows, read once when a delivery
// is taken in and kept in its headers (HeaderRepository, HeaderSender).
var MetaPaths = []jsonscan.Path{{"repository", "full_name"}, {"sender", "login"}}

// SetMeta writes, with set (a header's only value), what a list shows of a
// delivery: its action, repository and sender as found in its payload,
// clipped (a payload value may be of any size), and the payload's size;
// with HeaderExactAction when the action header holds the action as it is
// (none: no action), so that the workers dispatch it without scanning the
// payload again. The caller has validated the payload.
func SetMeta(set func(name, value string), action, repository, sender string, size int) {
	if len(action) <= clip.Max && utf8.ValidString(action) && Carried(action) == action {
		set(HeaderExactAction, "1")
	}
	for _, kv := range [...][2]string{
		{HeaderAction, action},
		{HeaderRepository, repository},
		{HeaderSender, sender},
	} {
		if kv[1] != "" {
			set(kv[0], clip.String(kv[1]))
		}
	}
	set(HeaderSize, strconv.Itoa(size))
}

// Record builds the Record of a stored message (of the inbox or the dead
// letters) and its status (nil: none yet, queued). data is nil for a
// header-only read; size is the payload's length then.
func Record(h nats.Header, data []byte, size int, seq uint64, st *Status) delivery.Record {
	r := delivery.Record{
		ID:         h.Get(HeaderDelivery),
		Tenant:     h.Get(HeaderTenant),
		Name:       h.Get(HeaderEvent),
		Action:     h.Get(HeaderAction),
		Repository: h.Get(HeaderRepository),
		Sender:     h.Get(HeaderSender),
		Header:     HTTPHeader(h),
		Payload:    data,
		Size:       int64(size),
		Seq:        seq,
		Status:     delivery.StatusQueued,
		Verified:   true,
		HTTPStatus: http.StatusAccepted,
	}
	if data != nil && h.Get(HeaderSize) == "" {
		// Stored before the inbox kept these in headers.
		var found [2]jsonscan.Result
		_ = jsonscan.Lookup(data, MetaPaths, found[:])
		r.Action = emitter.Event{Payload: data}.Action()
		r.Repository, r.Sender = clip.String(found[0].String(data)), clip.String(found[1].String(data))
	}
	r.ReceivedAt, _ = time.Parse(time.RFC3339Nano, h.Get(HeaderReceivedAt))
	if st != nil {
		r.Status = st.Status
		r.Attempts = st.Attempts
	}
	return r
}

// MaxAttemptsKept bounds the attempts a status keeps.
const MaxAttemptsKept = 50

// Status is what the status records hold for a delivery: the stored copy
// it is about (Seq), its state and its attempts.
type Status struct {
	Seq      uint64             `json:"seq"`
	Status   delivery.Status    `json:"status"`
	Attempts []delivery.Attempt `json:"attempts,omitempty"`
}

// Add appends an attempt, keeping the last MaxAttemptsKept.
func (st *Status) Add(a delivery.Attempt) {
	st.Attempts = append(st.Attempts, a)
	if len(st.Attempts) > MaxAttemptsKept {
		st.Attempts = append([]delivery.Attempt(nil), st.Attempts[len(st.Attempts)-MaxAttemptsKept:]...)
	}
}

// Last is the number of the last attempt recorded; 0 when none (or st is
// nil).
func (st *Status) Last() int {
	if st == nil || len(st.Attempts) == 0 {
		return 0
	}
	return st.Attempts[len(st.Attempts)-1].Number
}

// Settled reports whether the status ends its copy seq: handled, or a dead
// letter.
func (st *Status) Settled(seq uint64) bool {
	return st != nil && st.Seq == seq && (st.Status == delivery.StatusHandled || st.Status == delivery.StatusDead)
}

// Marshal encodes the status as it is stored: encoding/json's bytes. Two
// are written per delivery (running, then handled), so the common case is
// written directly (appendStatus); a status with a string JSON would escape
// or a time it cannot write goes through json.Marshal.
func (st *Status) Marshal() []byte {
	if b, ok := appendStatus(make([]byte, 0, 64+96*len(st.Attempts)), st); ok {
		return b
	}
	b, _ := json.Marshal(st)
	return b
}

// ParseStatus decodes a stored status; nil when v is not one.
func ParseStatus(v []byte) *Status {
	var st Status
	if json.Unmarshal(v, &st) != nil {
		return nil
	}
	return &st
}
