package webhooks

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestWorkersRunEveryJobOnceWithoutBlocking: run returns at once even when
// every worker is busy, each job runs exactly once, and a job given after the
// others ended runs too (on a kept worker or a new one).
func TestWorkersRunEveryJobOnceWithoutBlocking(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    func() *workers
	}{
		{"NewWorkers", func() *workers { p := newWorkers(); return &p }},
		{"zero value", func() *workers { return new(workers) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.p()
			const n = 200
			var (
				ran     [n]atomic.Int32
				release = make(chan struct{})
				wg      sync.WaitGroup
			)
			wg.Add(n)
			for i := range n {
				returned := make(chan struct{})
				go func() {
					p.run(func() {
						defer wg.Done()
						ran[i].Add(1)
						<-release // every job stays busy until all were given
					})
					close(returned)
				}()
				select {
				case <-returned:
				case <-time.After(10 * time.Second):
					t.Fatalf("run %d blocked while the workers were busy", i)
				}
			}
			close(release)
			wg.Wait()
			for i := range n {
				if got := ran[i].Load(); got != 1 {
					t.Errorf("job %d ran %d times, want 1", i, got)
				}
			}
			// Again, now that idle workers may be waiting.
			done := make(chan struct{})
			p.run(func() { close(done) })
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("a job given to idle workers did not run")
			}
		})
	}
}

// TestWorkersEndWhenIdle: no worker outlives workerIdle without a job.
func TestWorkersEndWhenIdle(t *testing.T) {
	t.Parallel()
	p := newWorkers()
	var wg sync.WaitGroup
	wg.Add(3)
	for range 3 {
		p.run(wg.Done)
	}
	wg.Wait()
	deadline := time.Now().Add(workerIdle + 10*time.Second)
	for p.live.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d workers still running %v after their last job", p.live.Load(), workerIdle+10*time.Second)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
