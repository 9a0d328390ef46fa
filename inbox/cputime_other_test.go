//go:build !unix

package inbox

import "time"

// cpuTime is not measured here.
func cpuTime() time.Duration { return 0 }
