// Package bound applies the module's rule for a bound given in an options
// struct (CONTRIBUTING.md): zero means the documented default, a negative
// value means no bound.
package bound

import "time"

// Value returns def for a zero v, none (the caller's "no bound": the type's
// largest value, or one safe for its arithmetic) for a negative v, and v
// otherwise.
func Value[T int | int64 | time.Duration](v, def, none T) T {
	switch {
	case v == 0:
		return def
	case v < 0:
		return none
	}
	return v
}
