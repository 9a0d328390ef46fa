package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"forgehooks.dev/forgehooks/tenantsfile"
	"forgehooks.dev/forgehooks/webhooks"
)

// loadTenants reads the tenants file at path (package tenantsfile: the
// format, its end marker and its bounds), without ever blocking on it.
func loadTenants(path string, getenv func(string) string) (webhooks.StaticTenants, error) {
	return tenantsfile.Loader{Getenv: getenv}.Load(path)
}

// reloadable is the tenants of a file, replaced whole when it is read again.
type reloadable struct {
	p atomic.Pointer[webhooks.StaticTenants]
}

// Lookup implements webhooks.SecretSource over the current set.
func (r *reloadable) Lookup(ctx context.Context, key webhooks.TenantKey) (webhooks.Tenant, error) {
	return (*r.p.Load()).Lookup(ctx, key)
}

// watchHangup reads the tenants file again on each SIGHUP until ctx ends:
// a file that cannot be read whole and checked (not a regular file, not
// ending with "end: true", not valid) leaves the running set, and the log
// says why; the next SIGHUP reads it again. It returns once the signal is
// registered.
func watchHangup(ctx context.Context, log *slog.Logger, path string, getenv func(string) string, src *reloadable, ts *webhooks.Tenants) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	go func() {
		defer signal.Stop(ch)
		for {
			select {
			case <-ctx.Done():
				return
			case <-ch:
			}
			set, err := loadTenants(path, getenv)
			if err != nil {
				log.Error("forgehooks: tenants file not reloaded; the running tenants stay", "file", path, "error", err, "tenants", len(*src.p.Load()))
				continue
			}
			src.p.Store(&set)
			ts.Forget()
			log.Info("forgehooks: tenants file reloaded", "file", path, "tenants", len(set))
		}
	}()
}
