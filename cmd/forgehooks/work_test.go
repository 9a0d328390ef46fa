package main

import (
	"strings"
	"testing"
)

// TestWorkAndWorkersUsage: the usage errors of work, and of serve's
// --workers and --replicas, name what is missing or wrong.
func TestWorkAndWorkersUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"work", "--forward", "http://127.0.0.1:9/x"}, "--nats URL (or --inbox DIR) is required"},
		{[]string{"work", "--nats", "nats://127.0.0.1:4222"}, "--forward URL is required"},
		{[]string{"work", "--nats", "nats://127.0.0.1:4222", "--forward", "http://127.0.0.1:9/x", "--workers", "0"}, "--workers 0 would run nothing"},
		{[]string{"work", "--nats", "nats://127.0.0.1:4222", "--forward", "notaurl"}, "--forward"},
		{[]string{"work", "--nats", "nats://127.0.0.1:4222", "--forward", "http://127.0.0.1:9/x", "--metrics", "9090"}, "--metrics"},
		{[]string{"work", "--nats", "nats://127.0.0.1:4222", "--forward", "http://127.0.0.1:9/x", "extra"}, `unexpected argument "extra"`},
		{[]string{"serve", "--secret", testSecret, "--workers", "0"}, "--workers needs --inbox or --nats"},
		{[]string{"serve", "--secret", testSecret, "--inbox", dir, "--workers", "0"}, "--workers 0 needs --nats"},
		{[]string{"serve", "--secret", testSecret, "--inbox", dir, "--workers", "-1"}, "must not be negative"},
		{[]string{"serve", "--secret", testSecret, "--inbox", dir, "--workers", "many"}, "not a whole number"},
		{[]string{"serve", "--secret", testSecret, "--inbox", dir, "--replicas", "1"}, "--replicas needs --nats"},
	} {
		code, _, errOut := runCmd(t, "", nil, tt.args...)
		if code != exitUsage || !strings.Contains(errOut, tt.want) {
			t.Errorf("%v: exit %d, %q; want %d and %q", tt.args, code, errOut, exitUsage, tt.want)
		}
	}
}
