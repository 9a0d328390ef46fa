package embedded

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Recovery starts a store that stopped on a full disk again once the disk
// has room. Set its exported fields before use; its methods are safe for
// concurrent use.
type Recovery struct {
	// Dir is the store's directory, whose disk is watched.
	Dir string
	// MaxStore bounds the store (0: none); MaxMessage is the largest
	// message it takes.
	MaxStore, MaxMessage int64
	// Restart starts the store again; an error is logged and it is called
	// again a second later.
	Restart func() error
	// Closing, once closed, ends the recovery and the waits.
	Closing <-chan struct{}
	Log     *slog.Logger

	recovering atomic.Bool
	mu         sync.Mutex
	up         chan struct{} // closed when the recovery under way restarted the store
	restarted  time.Time     // the last restart
}

// minFree is the least free space a recovery waits for.
const minFree = 1 << 20

// NeedFree returns the free space the disk must have before the store is
// started again: room for four of the largest messages, but never more than
// a quarter of the store's bound or an eighth of the disk, so that a small
// disk or store recovers too (a 64 MiB disk: 8 MiB), and never less than 1
// MiB.
func (r *Recovery) NeedFree() int64 {
	need := 4 * r.MaxMessage
	if r.MaxStore > 0 {
		need = min(need, r.MaxStore/4)
	}
	if _, size := space(r.Dir); size > 0 {
		need = min(need, size/8)
	}
	return max(need, minFree)
}

// Full reports whether the disk has less free space than NeedFree.
func (r *Recovery) Full() bool {
	free, _ := space(r.Dir)
	return free < r.NeedFree()
}

// Start starts, unless one is under way, the recovery: a goroutine that
// calls Restart once the disk has NeedFree, looking every second.
func (r *Recovery) Start() {
	select {
	case <-r.Closing:
		return // the server stopped for good
	default:
	}
	if !r.recovering.CompareAndSwap(false, true) {
		return
	}
	up := make(chan struct{})
	r.mu.Lock()
	r.up = up
	r.mu.Unlock()
	r.Log.Error("inbox: the embedded store stopped: the disk is full; deliveries are refused (503) until it restarts, which it does once the disk has room",
		"dir", r.Dir, "needs_free_bytes", r.NeedFree())
	go func() {
		defer r.recovering.Store(false)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-r.Closing:
				return
			case <-t.C:
			}
			if r.Full() {
				continue
			}
			if err := r.Restart(); err != nil {
				r.Log.Warn("inbox: restarting the embedded store", "error", err)
				continue
			}
			r.Log.Info("inbox: the embedded store restarted; deliveries are taken again", "dir", r.Dir)
			r.mu.Lock()
			r.up, r.restarted = nil, time.Now()
			r.mu.Unlock()
			close(up)
			return
		}
	}()
}

// Recovering reports whether a recovery is under way: the store stopped
// and is not yet started again.
func (r *Recovery) Recovering() bool { return r.recovering.Load() }

// recentRestart is how long after a restart Await still says a write
// that failed is worth another try: it may have failed on the server
// before.
const recentRestart = 10 * time.Second

// Await reports whether a write that failed is worth one more try: once
// the recovery under way has restarted the store (it waits for that,
// within ctx and until Closing), or when a restart ended just now.
func (r *Recovery) Await(ctx context.Context) bool {
	r.mu.Lock()
	up, recent := r.up, time.Since(r.restarted) < recentRestart
	r.mu.Unlock()
	if up == nil {
		return recent
	}
	select {
	case <-up:
		return true
	case <-ctx.Done():
	case <-r.Closing:
	}
	return false
}
