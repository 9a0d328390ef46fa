package inbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/internal/jsonscan"
	"forgehooks.dev/forgehooks/webhooks"
)

// DefaultOrderPartitions is Options.OrderPartitions when zero.
const DefaultOrderPartitions = 16

// OrderKey returns the key of a delivery for Options.OrderBy: deliveries
// with the same key run one at a time, in the order they were stored. An
// empty key puts the delivery outside any order (it runs as without
// OrderBy). It is called once per delivery, at ingest, before the delivery
// is stored, on the request's goroutine: it must be fast and must not keep
// d.Payload.
type OrderKey func(d webhooks.Delivery) string

// Paths the built-in order keys read, in one pass over the body.
var (
	repositoryPath   = []jsonscan.Path{{"repository", "id"}}
	installationPath = []jsonscan.Path{{"installation", "id"}}
	// subjectPaths, most specific first; the repository last (subjectKey
	// reads it with a number).
	subjectPaths = []jsonscan.Path{
		{"workflow_job", "id"}, {"workflow_run", "id"}, {"check_suite", "id"},
		{"pull_request", "number"}, {"issue", "number"}, {"repository", "id"},
	}
	subjectPrefixes      = []string{"workflow_job:", "workflow_run:", "check_suite:", "issue:", "issue:", "repository:"}
	installationPrefixes = []string{"installation:"}
)

// lookupKey returns prefixes[i] and the integer found at paths[i], for the
// first i found; "" when none is.
func lookupKey(body []byte, paths []jsonscan.Path, prefixes []string) string {
	var res [8]jsonscan.Result
	if jsonscan.Lookup(body, paths, res[:len(paths)]) != nil {
		return ""
	}
	return keyOf(body, res[:len(paths)], prefixes)
}

// keyOf returns prefixes[i] and the integer of res[i], for the first i that
// holds one; "" when none does.
func keyOf(body []byte, res []jsonscan.Result, prefixes []string) string {
	for i := range res {
		if id, ok := res[i].Int64(body); ok {
			return prefixes[i] + strconv.FormatInt(id, 10)
		}
	}
	return ""
}

// subjectKey is BySubject's key from the results of subjectPaths: the first
// found, a number with its repository's id.
func subjectKey(body []byte, res []jsonscan.Result) string {
	repo, hasRepo := res[5].Int64(body)
	for i := range res {
		id, ok := res[i].Int64(body)
		switch {
		case !ok:
		case i == 3 || i == 4:
			// A number means something only in its repository.
			if hasRepo {
				return subjectPrefixes[i] + strconv.FormatInt(repo, 10) + "#" + strconv.FormatInt(id, 10)
			}
		default:
			return subjectPrefixes[i] + strconv.FormatInt(id, 10)
		}
	}
	return ""
}

// ByRepository orders the deliveries of each repository (the payload's
// repository.id); those without a repository are not ordered.
func ByRepository(d webhooks.Delivery) string {
	return lookupKey(d.Payload, repositoryPath, subjectPrefixes[5:])
}

// ByInstallation orders the deliveries of each app installation (the
// payload's installation.id); those without one (a repository's own webhook)
// are not ordered.
func ByInstallation(d webhooks.Delivery) string {
	return lookupKey(d.Payload, installationPath, installationPrefixes)
}

// BySubject orders the deliveries about one thing: the first the payload
// names of
//
//	payload member            key                       events
//	workflow_job.id           workflow_job:<id>         workflow_job
//	workflow_run.id           workflow_run:<id>         workflow_run
//	check_suite.id            check_suite:<id>          check_suite
//	pull_request.number       issue:<repository id>#<n> pull_request, pull_request_review,
//	                                                    pull_request_review_comment,
//	                                                    pull_request_review_thread
//	issue.number              issue:<repository id>#<n> issues, issue_comment
//	repository.id             repository:<id>           anything else about a repository
//
// A pull request is an issue to the forge (one number space per
// repository), and a comment in its conversation is an issue_comment whose
// issue is the pull request: so a pull request, its reviews, its review
// comments and the comments on it share one key, as an issue and its
// comments do. A delivery with none of these (a ping, an installation's) is
// not ordered.
func BySubject(d webhooks.Delivery) string {
	var res [6]jsonscan.Result
	if jsonscan.Lookup(d.Payload, subjectPaths, res[:]) != nil {
		return ""
	}
	return subjectKey(d.Payload, res[:])
}

// ParseOrderBy returns the built-in OrderKey named "repository",
// "installation" or "subject"; nil for "" or "none".
func ParseOrderBy(name string) (OrderKey, error) {
	switch name {
	case "", "none":
		return nil, nil
	case "repository":
		return ByRepository, nil
	case "installation":
		return ByInstallation, nil
	case "subject":
		return BySubject, nil
	}
	return nil, fmt.Errorf("inbox: unknown order %q: use repository, installation or subject", name)
}

// partitionOf is the partition of key among n.
func partitionOf(key string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int(h.Sum32() % uint32(n))
}

// partitionToken is the subject token of partition p: "p" and its number.
// Delivery tokens start with "i", "h" or "n" (subjectToken), and the stored
// subjects end in storeToken, so none can be mistaken for another.
func partitionToken(p int) string { return "p" + strconv.Itoa(p) }

// storeToken ends the subjects deliveries are stored on: <Name>.in.q, or
// <Name>.in.p<N>.q in a partition. A few subjects in all, not one per
// delivery: JetStream keeps an index entry in memory for every subject of a
// stream, which grew with the deliveries stored. A delivery is found by id
// through its status or its dedupe record (lastStored). Stores written
// before have a subject per delivery, <Name>.in[.p<N>].<token>, still read.
const storeToken = "q"

// order sets the subject of a delivery about to be stored: with a key, its
// partition's, whose consumer hands out one delivery at a time; else the
// unordered one.
func (in *Inbox) order(msg *nats.Msg, key string) {
	if key != "" {
		p := partitionToken(partitionOf(key, in.opts.OrderPartitions))
		msg.Header.Set(hdrPartition, p)
		msg.Header.Set(hdrOrderKey, clipKey(key))
		msg.Subject = in.inSubj + p + "." + storeToken
		return
	}
	msg.Subject = in.inSubj + storeToken
}

// storedSubject is the inbox subject of a delivery stored again (Retry,
// Replay) with the headers of its stored copy: in its partition, when it had
// one, where it runs after the deliveries of its key stored before.
func (in *Inbox) storedSubject(h nats.Header) string {
	if p := h.Get(hdrPartition); p != "" && validPartitionToken(p) {
		return in.inSubj + p + "." + storeToken
	}
	return in.inSubj + storeToken
}

// tokenOf returns the token (subjectToken) of the delivery stored as a
// message with header h on subject: its id's, or, in a store written with a
// subject per delivery, the subject's last token.
func tokenOf(h nats.Header, subject string) string {
	if t := lastToken(subject); t != storeToken {
		return t
	}
	return subjectToken(deliveryKey(h.Get(hdrTenant), h.Get(hdrDelivery)))
}

// validPartitionToken reports whether p is a partition's token as
// partitionToken writes it.
func validPartitionToken(p string) bool {
	n, err := strconv.Atoi(strings.TrimPrefix(p, "p"))
	return strings.HasPrefix(p, "p") && err == nil && n >= 0 && strconv.Itoa(n) == p[1:]
}

// lastStored returns the latest stored copy of the delivery with token,
// ordered (in a partition) or not: the copy its status names when that copy
// ran, else the later of that and the one its dedupe record (the copy
// stored last by Enqueue, Retry or Replay) names, else, in a store written with a subject per
// delivery, the last message of its subject. The error wraps
// jetstream.ErrMsgNotFound when there is none.
func (in *Inbox) lastStored(ctx context.Context, token string) (*jetstream.RawStreamMsg, error) {
	var seq uint64
	st := in.loadStatus(ctx, token)
	if st != nil {
		seq = st.Seq
	}
	// A status of a copy that ran names the latest copy: Retry and Replay
	// write a queued status before they store another. Otherwise the
	// dedupe record names the copy stored last.
	var v []byte
	var err error
	if st != nil && st.Seq > 0 && st.Status != delivery.StatusQueued {
		err = jetstream.ErrKeyNotFound
	} else {
		v, err = in.seen.Get(ctx, seenIDKey(token))
	}
	switch {
	case err == nil:
		var s seenID
		_ = json.Unmarshal(v, &s)
		seq = max(seq, s.Seq)
	case !errors.Is(err, jetstream.ErrKeyNotFound):
		return nil, err
	}
	if seq > 0 {
		m, err := in.inbox.GetMsg(ctx, seq)
		if err == nil && tokenOf(m.Header, m.Subject) == token {
			return m, nil
		}
		if err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil, err
		}
	}
	m, err := in.inbox.GetLastMsgForSubject(ctx, in.inSubj+token)
	if !errors.Is(err, jetstream.ErrMsgNotFound) {
		return m, err
	}
	// A copy in a partition; a later unordered one, if any, was found above,
	// which is the latest unless ordering was switched on since.
	return in.inbox.GetLastMsgForSubject(ctx, in.inSubj+"*."+token)
}

// workersConsumer names the consumer of the unordered deliveries.
func (in *Inbox) workersConsumer() string { return in.opts.Name + "_WORKERS" }

// orderConsumerPrefix, and a partition's token, name that partition's
// consumer.
func (in *Inbox) orderConsumerPrefix() string { return in.opts.Name + "_ORDER_" }

// orderPartitions returns the partitions whose consumers exist, with those
// OrderBy needs: a partition left from a run with more partitions still has
// its deliveries handed out, one at a time.
func (in *Inbox) orderPartitions(ctx context.Context) ([]int, error) {
	seen := map[int]bool{}
	var out []int
	if in.opts.OrderBy != nil {
		for p := range in.opts.OrderPartitions {
			seen[p] = true
			out = append(out, p)
		}
	}
	names := in.inbox.ConsumerNames(ctx)
	for name := range names.Name() {
		rest, ok := strings.CutPrefix(name, in.orderConsumerPrefix())
		if !ok || !validPartitionToken(rest) {
			continue
		}
		p, _ := strconv.Atoi(rest[1:])
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	if err := names.Err(); err != nil {
		return nil, fmt.Errorf("inbox: listing the consumers: %w", err)
	}
	return out, nil
}
