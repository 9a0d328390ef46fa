package main

import (
	"testing"
	"time"
)

func TestParseBytes(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"200MiB", 200 << 20, true}, {"1GiB", 1 << 30, true}, {"1gib", 1 << 30, true}, {"512", 512, true},
		{"10 KiB", 10 << 10, true}, {"2MB", 2e6, true}, {"-1", -1, true}, {"0", 0, true}, {"7B", 7, true},
		{"", 0, false}, {"MiB", 0, false}, {"1.5GiB", 0, false}, {"10XB", 0, false}, {"99999999999TiB", 0, false},
	} {
		got, err := parseBytes(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
	b := byteSize(200 << 20)
	if b.String() != "200MiB" {
		t.Errorf("String() = %q", b.String())
	}
}

func TestParseDays(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"7d", 7 * 24 * time.Hour, true}, {"72h", 72 * time.Hour, true}, {"1d12h", 36 * time.Hour, true},
		{"2s", 2 * time.Second, true}, {"0", 0, true},
		{"", 0, true}, {"d", 0, false}, {"-1d", 0, false}, {"7days", 0, false}, {"1.5d", 0, false}, {"-5s", 0, false},
	} {
		got, err := parseDays(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseDays(%q) = %v, %v; want %v, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
	d := days(7 * 24 * time.Hour)
	if d.String() != "7d" {
		t.Errorf("String() = %q", d.String())
	}
}

// TestInboxFlagsBounds: --duplicate-window, --handled-retention,
// --max-store-bytes and --replay-guard reach inbox.Options; a window past
// the default MaxAge extends it.
func TestInboxFlagsBounds(t *testing.T) {
	t.Parallel()
	f := &inboxFlags{dir: "x", duplicateWindow: days(7 * 24 * time.Hour), handled: days(time.Hour), maxStore: byteSize(200 << 20), replayGuard: false}
	o, err := f.options()
	if err != nil {
		t.Fatal(err)
	}
	if o.DuplicateWindow != 7*24*time.Hour || o.HandledRetention != time.Hour || o.MaxStoreBytes != 200<<20 || !o.AllowRepeatedBodies {
		t.Errorf("options %+v", o)
	}
	f.duplicateWindow = days(10 * 24 * time.Hour)
	if o, _ := f.options(); o.MaxAge != 10*24*time.Hour {
		t.Errorf("a 10-day window keeps deliveries %v, want 10 days", o.MaxAge)
	}
}
