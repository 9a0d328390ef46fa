package emitter

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestErrorReportBounds: past MaxErrorReports deliveries (or
// MaxErrorReportBytes of their payloads) whose error handlers still run, a
// failed delivery is logged instead of reported, with its id and without its
// payload; once the handlers return, reports run again.
func TestErrorReportBounds(t *testing.T) {
	tests := []struct {
		name     string
		opts     Options
		payloads []int // sizes, reported in order while all handlers block
		reported int
	}{
		{"count", Options{MaxErrorReports: 2}, []int{10, 10, 10, 10}, 2},
		{"bytes", Options{MaxErrorReportBytes: 100}, []int{60, 30, 20, 10}, 3},
		{"one larger than the bound alone", Options{MaxErrorReportBytes: 100}, []int{500, 2}, 1},
		{"no bound", Options{MaxErrorReports: -1, MaxErrorReportBytes: -1}, []int{1 << 20, 1 << 20, 1 << 20}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log bytes.Buffer
			var logMu sync.Mutex
			tt.opts.Logger = slog.New(slog.NewTextHandler(lockedWriter{&logMu, &log}, nil))
			em := New(tt.opts)
			release := make(chan struct{})
			started := make(chan string, 16)
			// Two error handlers: a report holds its place until both return.
			em.OnError(func(_ context.Context, err *Error) { started <- err.Event.ID; <-release })
			em.OnError(func(context.Context, *Error) {})
			for i, n := range tt.payloads {
				payload := []byte("{" + strings.Repeat(" ", n-2) + "}")
				em.ReportError(context.Background(), &Error{Event: Event{ID: "d" + string(rune('0'+i)), Name: "push", Payload: payload}, Errors: []error{errors.New("failed")}})
			}
			for range tt.reported {
				select {
				case <-started:
				case <-time.After(10 * time.Second):
					t.Fatal("a report within the bounds did not run")
				}
			}
			select {
			case id := <-started:
				t.Fatalf("report %s ran past the bound", id)
			case <-time.After(50 * time.Millisecond):
			}
			logMu.Lock()
			skipped := strings.Count(log.String(), "error logged instead of reported")
			logMu.Unlock()
			if want := len(tt.payloads) - tt.reported; skipped != want {
				t.Errorf("%d reports logged instead, want %d; log:\n%s", skipped, want, log.String())
			}
			close(release)
			if err := em.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			em.reportMu.Lock()
			n, b := em.reports, em.reportBytes
			em.reportMu.Unlock()
			if n != 0 || b != 0 {
				t.Errorf("after every handler returned: %d reports, %d bytes held", n, b)
			}
		})
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
