// Package inbox is a durable inbox for webhook deliveries on NATS JetStream.
//
// With an Inbox as webhooks.MiddlewareOptions.Inbox, the middleware verifies a
// delivery and calls Enqueue, which publishes it to a JetStream stream and
// returns only once the stream has acknowledged it; only then does the forge
// get its 2xx. Once Start is called, workers of the Inbox run the Webhooks'
// handlers for every stored delivery, retry a failing one on a delay
// schedule, and move it to the dead letters when the schedule is used up.
// Open only builds and recovers: an Inbox that is never started takes
// deliveries in and answers queries, and another process (or another
// Inbox on the same cluster) runs them.
//
// # Modes
//
// By default (Options.Dir) an Inbox runs a NATS server in the process, with
// JetStream's file store in Dir and no listening port. With Options.URLs it
// connects to an existing NATS cluster instead and creates its streams with
// Options.Replicas replicas (default 3). The code path is the same.
//
// # The seal
//
// Every message the inbox stores is sealed with an HMAC-SHA256 under the
// inbox key (Options.Key) over its body and headers, and the workers run
// only messages whose seal holds: a message someone else published on the
// inbox's subjects is a dead letter at once, with the reason ("unsealed",
// "bad seal"), logged and counted (Counters). With URLs, every receiver and
// worker of one inbox needs the same key (or Options.InsecureUnsealed); the
// embedded mode keeps its own in Dir.
//
// # What the 2xx means
//
// Enqueue returns nil once JetStream has stored the delivery. In the embedded
// mode the file store has then written it to the operating system (the page
// cache): the delivery survives the process being killed, but not a power
// loss or kernel crash before the next flush to disk (JetStream syncs every
// two minutes by default). With Options.Fsync every write is synced to disk
// before it is acknowledged, which survives power loss and costs throughput
// (see bench/README.md). In a cluster a write is acknowledged once a majority
// of the replicas hold it.
//
// # Delivery guarantees
//
// At least once: a handler may run more than once for one delivery (a crash
// after the handler returned but before the acknowledgement was stored, an
// AckWait that expired, a Replay), so handlers must be idempotent. Without
// Options.OrderBy there is no ordering promise: deliveries run concurrently
// and retries come later.
//
// # Order
//
// With Options.OrderBy, deliveries with the same key (the repository, the
// installation, the subject — pull request, issue, check suite, workflow run
// or job — or a key of your own) run one at a time, in the order the inbox
// stored them, on whichever receiver of a cluster; different keys run in
// parallel. The key is read from the body at ingest and hashed into one of
// Options.OrderPartitions partitions, stored on that partition's subject
// (Name.in.p<N>.q). A partition's consumer hands out its deliveries one at a
// time, in stored order, to be admitted to their key: each key with a
// delivery running or waiting has a record (bucket Name_KEYS) naming the
// delivery that runs next, and the later ones are parked behind it in
// stored order (stream Name_PARKED). Admission takes a few record writes,
// not the handlers' time, so the partition goes on at once. Any receiver
// runs a key's next delivery once it is due, claiming the record with a
// write conditional on its revision and leasing it (AckWait) while the
// handlers run. So:
//
//   - A failing delivery holds back the later deliveries of its own key
//     until it succeeds or becomes a dead letter, and nothing else: other
//     keys run, whatever partition they share. `forgehooks inbox skip ID`
//     (Skip) sets it aside as a dead letter so that its key goes on.
//   - A key with many deliveries queued runs one of them at a time: other
//     keys take their turn beside it (the greater of Workers and
//     OrderPartitions at once, per receiver).
//   - A receiver that dies keeps the delivery it was running, and so its
//     key, until its lease (AckWait) runs out; then the next receiver runs it
//     again, before anything later of its key.
//   - A delivery can run again right after itself (at least once), never
//     after a later delivery of its key. Retry and Replay store a delivery
//     again at the end of its key's order.
//   - A delivery whose body has no key (a ping, an event without a
//     repository) is not ordered.
//
// # Handlers that hang
//
// Each attempt is bounded by Options.HandlerTimeout (default 30 s, the
// forward's own timeout): the handlers' context is done then. An ordered
// delivery whose handlers run on past it, ignoring their context (a
// target that never answers, a lock never freed), gives its place back to
// the other keys and goes on running; its own key stays held, and leased,
// until the handlers return, since nothing later of that key may run
// before it. Up to 64 times the places may run so (a bound on the
// goroutines and connections hanging handlers hold); past that an overdue
// delivery keeps its place. With P places (the greater of Workers and
// OrderPartitions: 16 by default up to 4 CPUs, 4 × GOMAXPROCS above),
// ordered traffic of one receiver stalls only when 65 × P handlers hang at
// once: 1,040 by default. Fewer than that delay the other keys by at most
// HandlerTimeout, and only when P of them start hanging together.
//
// # Restarts and leases
//
// A running delivery is leased to its worker for AckWait (default 10 s),
// renewed every third of it while the handlers run, so a long handler keeps
// its delivery however long it takes. In a cluster a receiver that dies hands
// its deliveries on after the lease. A receiver that stalls past the lease
// of an ordered delivery (its renewals late) has lost it the same way:
// another receiver runs the delivery again, and the stalled one, once it
// goes on, neither starts handlers it had not started nor moves the key on;
// handlers it was running already may still finish after the other's run.
// An embedded inbox needs no wait: at Start, the directory lock proves the
// process before it gone, and the deliveries it was running are handed
// back at once (those waiting for a retry keep their schedule).
//
// # A cluster's answers
//
// Enqueue waits out what a cluster resolves within the request's time: the
// same delivery id being stored at that moment through another receiver
// (the answer is then duplicate, or stored if that first store failed), a
// stream leader being elected, the connection failing over to another node.
// It publishes again with a growing pause until its context is done (the
// middleware's Timeout), and only then fails.
//
// # Trace context
//
// The request's headers are stored with the delivery and given to its
// handlers on every attempt (webhooks.Delivery.Header, from DeliveryFrom): a traceparent
// header, as the forge's request or a tracing middleware in front of the
// webhook middleware set it, continues on every attempt, retries and
// restarts included (examples/otel shows one trace from the request to the
// successful retry).
//
// Deliveries are deduplicated from the inbox's own state, across restarts,
// for Options.DuplicateWindow (default 72 hours, the time the forge keeps
// its delivery log on its public service; self-hosted servers keep it up to
// 7 days, so set the window to theirs): the same id again is answered 200
// "duplicate" while the delivery is queued, retrying or handled, and nothing
// runs; while it is a dead letter, the redelivery (the forge's "Redeliver",
// or catch-up) makes it run again on a fresh schedule, answered 202
// "requeued". A different body under a stored id is answered duplicate and
// logged as id reuse. The same body under another id is answered duplicate
// and logged as a possible replay (the signature covers the body only, not
// the id), unless Options.AllowRepeatedBodies. Counters counts each case. A
// delivery without an id is never deduplicated.
//
// # Store bounds
//
// Options.MaxStoreBytes (default 1 GiB) bounds the store; when it is full,
// deliveries are answered 503, with the reason logged, and nothing stored
// is dropped to make room. The stored copy of a handled delivery is dropped
// after Options.HandledRetention (default 24 hours), dead letters after
// Options.DeadRetention (30 days), anything after Options.MaxAge (7 days);
// ids, digests and attempts stay for the duplicate window. In the embedded
// mode, when the disk itself fills up, JetStream stops; once the disk has
// room the inbox restarts its server, and its workers once the handlers
// running have returned (none runs twice). Options.TenantMaxStoreBytes (default
// half of MaxStoreBytes) bounds the deliveries of one tenant not yet handled
// or dead: past it that tenant's are refused (ErrTenantFull), the others'
// still stored.
//
// # Tenants
//
// The workers are shared among the tenants with deliveries waiting: each
// worker that frees up takes the next delivery of the tenant with the
// fewest running (see Options.Workers), so that one tenant's backlog holds
// no more than its share, however deep; with OrderBy, each key's deliveries
// still run one at a time, in stored order. A tenant (those without one
// form a group) with 8 deliveries from one receiver waiting on the shared
// subject stores its next ones on its own, Name.in.t.<digest>.q, whose
// consumer (Name_T_<digest>, deleted after 10 idle minutes) every runner
// fetches from in turn with the workers', until it has none left (package
// inbox/internal/overflow): another tenant's delivery waits for a free
// worker, not for the backlog, embedded, in a cluster and in a fleet.
//
// # Layout
//
// Deliveries are stored on a few subjects (Name.in.q, Name.in.p<N>.q per
// partition, Name.in.t.<digest>.q per tenant with a backlog), not one per
// delivery: JetStream keeps an index entry in memory
// for every subject of a stream (about 110 bytes). A delivery is found by id
// through the inbox's records of it, keyed by its id: its status (Name_STATUS,
// kept MaxAge, with the sequence of the copy that ran last) and its dedupe
// records (Name_SEEN, kept the duplicate window: the body's digest and the
// sequence of the copy stored last; and the digest's id).
//
// In a cluster the records are key-value buckets (Name_STATUS, Name_SEEN),
// shared by the receivers; their memory is the NATS servers'. In the
// embedded mode they are streams of those names, each on one subject
// (Name.rec.status, Name.rec.seen), found through an index in the process
// (16 bytes a record key, a hash of it and its sequence) that is written to
// Dir (Name_STATUS.index, Name_SEEN.index) at Close, every minute, every
// 50,000 keys and right after an Open that read 1,000 keys or more past it
// (package inbox/internal/recstore); Open reads it, only
// when it is a regular file of a size the stream can need, and then the
// records written since, so that
// neither the memory nor the time to open grows with JetStream's index of
// keys. A lost or damaged index file is rebuilt from the streams (slower: a
// read of every record). Buckets an earlier version left in Dir are moved
// into the streams at the first Open, and a store with a subject per
// delivery (Name.in.<token>) is read as it is. bench/README.md has what a
// receiver pays for a million stored deliveries.
//
// # Headers
//
// The request's headers are stored with the delivery, except those whose
// names start with "Nats-" (which would instruct JetStream) or "Forgehooks-"
// (the inbox's own): a sender cannot steer the store through them.
package inbox
