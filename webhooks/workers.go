package webhooks

import (
	"sync/atomic"
	"time"
)

// workerIdle is how long a worker waits for the next delivery before it ends.
const workerIdle = 2 * time.Second

// workers runs each accepted delivery's handlers on a goroutine kept from an
// earlier delivery when one is idle, and on a new goroutine otherwise, where
// they cannot run on the request's own goroutine (HTTP/2, or a writer that
// cannot flush: see Middleware).
//
// Why: a new goroutine's stack starts small and grows by copying as the
// scan, the typed decode and the handlers go deeper; a goroutine per delivery
// would pay that growth every time, where a kept one has grown already and
// the hand-over is a select and a timer reset.
//
// Busy workers are one per delivery in flight, which MaxInFlight bounds; idle ones end after workerIdle, so a burst leaves none
// behind for long. The zero value is usable: with no channel every delivery
// gets a new goroutine.
type workers struct {
	jobs chan func()  // unbuffered: a send succeeds only into an idle worker
	live atomic.Int64 // goroutines running work, busy or idle
}

func newWorkers() workers { return workers{jobs: make(chan func())} }

// run calls f on another goroutine, an idle worker if there is one.
func (p *workers) run(f func()) {
	select {
	case p.jobs <- f:
	default:
		p.live.Add(1)
		go p.work(f)
	}
}

// work calls f, then whatever run hands it, until it has waited workerIdle
// for nothing.
func (p *workers) work(f func()) {
	defer p.live.Add(-1)
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		f()
		f = nil // let the delivery be collected while this one waits
		idle.Reset(workerIdle)
		select {
		case f = <-p.jobs:
		case <-idle.C:
			return
		}
	}
}
