package inbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/inbox/internal/runner"
	"forgehooks.dev/forgehooks/inbox/internal/stored"
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

// order sets the subject of a delivery of tenant about to be stored: with a
// key, its partition's, whose consumer hands out one delivery at a time;
// else the one package overflow chooses for the tenant.
func (in *Inbox) order(msg *nats.Msg, key, tenant string) {
	if key != "" {
		p := stored.PartitionToken(partitionOf(key, in.opts.OrderPartitions))
		msg.Header.Set(stored.HeaderPartition, p)
		msg.Header.Set(stored.HeaderOrderKey, stored.ClipKey(key))
		msg.Subject = in.inSubj + p + "." + stored.StoreToken
		return
	}
	msg.Subject = in.share.Subject(context.Background(), in.inbox, tenant)
}

// storedSubject is the inbox subject of a delivery stored again (Retry,
// Replay) with the headers of its stored copy: in its partition, when it had
// one, where it runs after the deliveries of its key stored before.
func (in *Inbox) storedSubject(h nats.Header) string {
	if p := h.Get(stored.HeaderPartition); p != "" && stored.ValidPartitionToken(p) {
		return in.inSubj + p + "." + stored.StoreToken
	}
	return in.inSubj + stored.StoreToken
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
		if err == nil && stored.TokenOf(m.Header, m.Subject) == token {
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
func (in *Inbox) workersConsumer() string { return runner.WorkersConsumer(in.opts.Name) }

// orderConsumerPrefix, and a partition's token, name that partition's
// consumer.
func (in *Inbox) orderConsumerPrefix() string { return runner.OrderConsumerPrefix(in.opts.Name) }
