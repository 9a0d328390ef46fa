package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// byteSize is a flag value of bytes: a number, or one with a unit (KiB, MiB,
// GiB, TiB; KB, MB, GB, TB in powers of ten; B), such as 200MiB or 1GiB.
type byteSize int64

func (b *byteSize) String() string {
	n := int64(*b)
	for _, u := range []struct {
		name  string
		shift uint
	}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}} {
		if n != 0 && n%(1<<u.shift) == 0 {
			return strconv.FormatInt(n>>u.shift, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

func (b *byteSize) Set(s string) error {
	n, err := parseBytes(s)
	if err != nil {
		return err
	}
	*b = byteSize(n)
	return nil
}

// parseBytes parses a byteSize; a negative number is allowed (no bound).
func parseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}} {
		if strings.HasSuffix(strings.ToUpper(t), strings.ToUpper(u.suffix)) {
			t, mult = strings.TrimSpace(t[:len(t)-len(u.suffix)]), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n > 0 && n > (1<<62)/mult {
		return 0, fmt.Errorf("%q is not a size such as 200MiB or 1GiB", s)
	}
	return n * mult, nil
}

// days is a flag value of a duration that also takes days: 7d, 1d12h, 72h.
type days time.Duration

func (d *days) String() string {
	v := time.Duration(*d)
	if v != 0 && v%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(v/(24*time.Hour)), 10) + "d"
	}
	return v.String()
}

func (d *days) Set(s string) error {
	v, err := parseDays(s)
	if err != nil {
		return err
	}
	*d = days(v)
	return nil
}

// parseDays parses a time.Duration with an optional leading count of days.
func parseDays(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	var total time.Duration
	if i := strings.IndexByte(t, 'd'); i >= 0 {
		n, err := strconv.ParseInt(t[:i], 10, 32)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%q is not a duration such as 7d, 36h or 1d12h", s)
		}
		total, t = time.Duration(n)*24*time.Hour, t[i+1:]
	}
	if t != "" {
		v, err := time.ParseDuration(t)
		if err != nil || v < 0 {
			return 0, fmt.Errorf("%q is not a duration such as 7d, 36h or 1d12h", s)
		}
		total += v
	}
	return total, nil
}
