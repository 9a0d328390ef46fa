package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"gopkg.in/yaml.v3"

	"forgehooks.dev/forgehooks/webhooks"
)

// Bounds of a tenants file: it is read again on every SIGHUP.
const (
	maxTenantsFileBytes = 4 << 20
	maxTenants          = 100000
	maxTenantSecrets    = 16
	maxSecretFileBytes  = 64 << 10
)

// tenantsFile is the YAML of serve --tenants:
//
//	tenants:
//	  acme:
//	    secrets: ["acme-current-secret", "acme-previous-secret"]
//	    hooks: [12345]
//	  beta:
//	    secrets: ["env:BETA_SECRET"]   # also file:PATH
type tenantsFile struct {
	Tenants map[string]struct {
		Secrets []string `yaml:"secrets"`
		Hooks   []int64  `yaml:"hooks"`
	} `yaml:"tenants"`
}

// parseTenants reads a tenants file's bytes: every tenant with a valid
// name, one to maxTenantSecrets secrets (the first current), each a literal,
// "env:NAME" (the variable, set and not empty) or "file:PATH" (the file's
// contents without a final newline, not empty; a relative PATH is from dir),
// and optional hook ids, each positive and listed by one tenant only.
func parseTenants(data []byte, getenv func(string) string, dir string) (webhooks.StaticTenants, error) {
	if len(data) > maxTenantsFileBytes {
		return nil, fmt.Errorf("larger than %d bytes", maxTenantsFileBytes)
	}
	var f tenantsFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty: want a 'tenants:' mapping")
		}
		return nil, err
	}
	if len(f.Tenants) == 0 {
		return nil, errors.New("no tenants: want a 'tenants:' mapping of names to their secrets")
	}
	if len(f.Tenants) > maxTenants {
		return nil, fmt.Errorf("%d tenants: at most %d", len(f.Tenants), maxTenants)
	}
	names := make([]string, 0, len(f.Tenants))
	for name := range f.Tenants {
		names = append(names, name)
	}
	sort.Strings(names)
	out := make(webhooks.StaticTenants, len(f.Tenants))
	hookOf := map[string]string{}
	for _, name := range names {
		t := f.Tenants[name]
		if name == "" || !webhooks.ValidTenantName(name) {
			return nil, fmt.Errorf("tenant %q: a name is 1 to %d printable ASCII characters, without spaces or slashes", name, webhooks.MaxTenantKeyLen)
		}
		if len(t.Secrets) == 0 || len(t.Secrets) > maxTenantSecrets {
			return nil, fmt.Errorf("tenant %s: %d secrets: want 1 to %d (the first the current one)", name, len(t.Secrets), maxTenantSecrets)
		}
		st := webhooks.StaticTenant{}
		for i, ref := range t.Secrets {
			s, err := secretOf(ref, getenv, dir)
			if err != nil {
				return nil, fmt.Errorf("tenant %s: secret %d: %w", name, i+1, err)
			}
			st.Secrets = append(st.Secrets, s)
		}
		for _, h := range t.Hooks {
			if h <= 0 {
				return nil, fmt.Errorf("tenant %s: hook id %d: want a positive number", name, h)
			}
			id := strconv.FormatInt(h, 10)
			if other, ok := hookOf[id]; ok {
				return nil, fmt.Errorf("hook %s is listed by two tenants, %s and %s", id, other, name)
			}
			hookOf[id] = name
			st.Hooks = append(st.Hooks, id)
		}
		out[name] = st
	}
	return out, nil
}

// secretOf is the secret ref names: "env:NAME", "file:PATH" or the secret
// itself. The error never holds a secret.
func secretOf(ref string, getenv func(string) string, dir string) (string, error) {
	switch {
	case strings.HasPrefix(ref, "env:"):
		name := strings.TrimPrefix(ref, "env:")
		if name == "" {
			return "", errors.New("env: names no variable")
		}
		s := getenv(name)
		if s == "" {
			return "", fmt.Errorf("environment variable %s is unset or empty", name)
		}
		return s, nil
	case strings.HasPrefix(ref, "file:"):
		p := strings.TrimPrefix(ref, "file:")
		if p == "" {
			return "", errors.New("file: names no file")
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		f, err := os.Open(p)
		if err != nil {
			return "", err
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, maxSecretFileBytes+1))
		if err != nil {
			return "", err
		}
		if len(b) > maxSecretFileBytes {
			return "", fmt.Errorf("%s: larger than %d bytes", p, maxSecretFileBytes)
		}
		s := strings.TrimRight(string(b), "\r\n")
		if s == "" {
			return "", fmt.Errorf("%s is empty", p)
		}
		return s, nil
	case ref == "":
		return "", errors.New("empty")
	}
	return ref, nil
}

// loadTenants reads and parses the tenants file at path.
func loadTenants(path string, getenv func(string) string) (webhooks.StaticTenants, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxTenantsFileBytes+1))
	if err != nil {
		return nil, err
	}
	ts, err := parseTenants(data, getenv, filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ts, nil
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
// a file that does not parse leaves the running set, and the log says why.
// It returns once the signal is registered.
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
				log.Error("forgehooks: tenants file not reloaded; the running tenants stay", "error", err, "tenants", len(*src.p.Load()))
				continue
			}
			src.p.Store(&set)
			ts.Forget()
			log.Info("forgehooks: tenants file reloaded", "file", path, "tenants", len(set))
		}
	}()
}
