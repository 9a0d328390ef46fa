package receiver

import "forgehooks.dev/forgehooks/internal/bound"

// Descriptors a Receiver keeps for what is not a connection of its
// servers: the embedded store's files, the NATS connections, the
// connections to Forward (up to one per worker), the tenants and secret
// files, the log. An eighth of the limit, and at least fdReserveMin.
const (
	fdReserveMin = 256
	// otherMaxConns bounds the inspector's and the metrics' connections
	// by default: a few browsers and scrapers.
	otherMaxConns = 256
)

// connBounds returns the bounds of the webhook server's connections and of
// each other server's (the inspector, the metrics), for Options.MaxConns
// set, with others other servers, and the descriptor limit the default was
// chosen under (0: none known). -1 is no bound. A bound set by the caller
// bounds every server; the default keeps the sum of the bounds below the
// descriptor limit minus a reserve, so that a flood of connections makes
// the servers close idle ones before accept fails for want of a
// descriptor (EMFILE), which would leave a fresh delivery unanswered.
func connBounds(set, others int, limit uint64, known bool) (hook, other int, fdLimit uint64) {
	if set != 0 || !known {
		n := bound.Value(set, DefaultMaxConns, -1)
		return n, n, 0
	}
	reserve := uint64(fdReserveMin)
	if limit/8 > reserve {
		reserve = limit / 8
	}
	avail := 16
	if limit > reserve+16 {
		avail = int(min(limit-reserve, 1<<30))
	}
	other = max(1, min(otherMaxConns, avail/16))
	hook = max(1, min(DefaultMaxConns, avail-others*other))
	return hook, other, limit
}
