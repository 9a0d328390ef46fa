package inbox

import (
	"testing"
	"time"

	"forgehooks.dev/forgehooks/inbox/internal/embedded"
)

// TestAttemptBound: the embedded server's attempts are bounded by their
// context alone; in a cluster an attempt gets publishAttempt plus the time
// of the bytes under way on the connection at publishRate, so that a large
// body is not cut short and sent again behind itself.
func TestAttemptBound(t *testing.T) {
	for _, tc := range []struct {
		name     string
		embedded bool
		sending  int64
		want     time.Duration
		bounded  bool
	}{
		{"embedded, idle", true, 0, 0, false},
		{"embedded, eight large bodies", true, 8 * 25 << 20, 0, false},
		{"cluster, idle", false, 0, publishAttempt, true},
		{"cluster, one large body", false, 25 << 20, publishAttempt + 25*time.Second/8, true},
		{"cluster, eight large bodies", false, 8 * 25 << 20, publishAttempt + 25*time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := &Inbox{}
			if tc.embedded {
				in.ns = &embedded.Server{}
			}
			in.sending.Store(tc.sending)
			got, bounded := in.attemptBound()
			if got != tc.want || bounded != tc.bounded {
				t.Errorf("attemptBound() = %v, %v; want %v, %v", got, bounded, tc.want, tc.bounded)
			}
		})
	}
}
