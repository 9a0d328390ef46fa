// Package inbox is a durable inbox for webhook deliveries on NATS JetStream.
//
// With an Inbox as webhooks.MiddlewareOptions.Inbox, the middleware verifies a
// delivery and calls Enqueue, which publishes it to a JetStream stream and
// returns only once the stream has acknowledged it; only then does the forge
// get its 2xx. Workers of the Inbox then run the Webhooks' handlers for every
// stored delivery, retry a failing one on a delay schedule, and move it to the
// dead letters when the schedule is used up.
//
// # Modes
//
// By default (Options.Dir) an Inbox runs a NATS server in the process, with
// JetStream's file store in Dir and no listening port. With Options.URLs it
// connects to an existing NATS cluster instead and creates its streams with
// Options.Replicas replicas (default 3). The code path is the same.
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
// AckWait that expired, a Replay), so handlers must be idempotent. There is no
// ordering promise: deliveries run concurrently and retries come later.
//
// Deliveries are deduplicated by their id (Nats-Msg-Id) within
// Options.DuplicateWindow (default 72 hours, the time the forge keeps its
// delivery log), across restarts. A delivery without an id is never
// deduplicated.
//
// # Headers
//
// The request's headers are stored with the delivery, except those whose
// names start with "Nats-" (which would instruct JetStream) or "Forgehooks-"
// (the inbox's own): a sender cannot steer the store through them.
package inbox
