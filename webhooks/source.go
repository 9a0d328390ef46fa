package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"
)

// SourceFilter answers 403 to requests from addresses outside its ranges,
// before their body is read, and passes the others to the handler it wraps:
// for a receiver that accepts deliveries only from the forge's own ranges
// (its API's /meta, "hooks"; see FetchMetaHooks). It is safe for concurrent
// use; its ranges may be replaced while it serves. It has no ranges until
// Set is called, and refuses every request until then.
type SourceFilter struct {
	ranges  atomic.Pointer[[]netip.Prefix]
	trusted []netip.Prefix
	log     *slog.Logger
}

// SourceFilterOptions configures NewSourceFilter.
type SourceFilterOptions struct {
	// TrustedProxies are the peers whose X-Forwarded-For is believed: for a
	// request from one of them, the client is the right-most address of
	// X-Forwarded-For that is not itself a trusted proxy. From any other
	// peer the header is ignored and the peer is the client, so that a
	// sender cannot pick the address it is judged by.
	TrustedProxies []netip.Prefix
	// Logger gets a line for each refusal (info) and for each refresh
	// (Refresh). Nil: slog.Default().
	Logger *slog.Logger
}

// NewSourceFilter returns a SourceFilter with no ranges yet.
func NewSourceFilter(opts SourceFilterOptions) *SourceFilter {
	f := &SourceFilter{trusted: opts.TrustedProxies, log: opts.Logger}
	if f.log == nil {
		f.log = slog.Default()
	}
	empty := []netip.Prefix{}
	f.ranges.Store(&empty)
	return f
}

// Set replaces the allowed ranges.
func (f *SourceFilter) Set(ranges []netip.Prefix) {
	rs := make([]netip.Prefix, len(ranges))
	for i, p := range ranges {
		rs[i] = p.Masked()
	}
	f.ranges.Store(&rs)
}

// Ranges returns the allowed ranges.
func (f *SourceFilter) Ranges() []netip.Prefix {
	return append([]netip.Prefix(nil), *f.ranges.Load()...)
}

// Client returns the address r is judged by: its peer's, or, from a trusted
// proxy, what X-Forwarded-For says (see TrustedProxies). ok is false when
// the peer's address does not parse.
func (f *SourceFilter) Client(r *http.Request) (addr netip.Addr, ok bool) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	addr, err = netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false
	}
	addr = addr.Unmap()
	if !in(f.trusted, addr) {
		return addr, true
	}
	var hops []string
	for _, v := range r.Header.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(v, ",")...)
	}
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			return netip.Addr{}, false // a hop the proxies wrote does not parse: judge no one by it
		}
		addr = a.Unmap()
		if !in(f.trusted, addr) {
			return addr, true
		}
	}
	return addr, true
}

// Allowed reports whether r comes from an allowed address.
func (f *SourceFilter) Allowed(r *http.Request) bool {
	addr, ok := f.Client(r)
	return ok && in(*f.ranges.Load(), addr)
}

func in(ranges []netip.Prefix, a netip.Addr) bool {
	for _, p := range ranges {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// msgForbidden answers a request from an address outside the ranges.
const msgForbidden = "Forbidden: the source address is not one the forge sends from"

// Wrap returns next behind the filter: a request from outside the ranges is
// answered 403, with Connection: close, and its body is not read.
func (f *SourceFilter) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if f.Allowed(r) {
			next.ServeHTTP(rw, r)
			return
		}
		f.log.Info("webhooks: request refused: source address outside the allowed ranges", "remote", r.RemoteAddr, "path", r.URL.Path)
		rw.Header().Set("Connection", "close") // the body stays unread
		writeJSONError(rw, http.StatusForbidden, msgForbidden)
	})
}

// MaxMetaBytes bounds the answer of /meta that FetchMetaHooks reads.
const MaxMetaBytes = 4 << 20

// FetchMetaHooks reads the "hooks" ranges from the forge's API: GET
// apiURL + "/meta" (a self-hosted server's API URL works the same). It
// fails for an answer other than 200, one larger than MaxMetaBytes, or one
// without a valid range in "hooks". A nil client is one with a 30 s timeout.
func FetchMetaHooks(ctx context.Context, client *http.Client, apiURL string) ([]netip.Prefix, error) {
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(apiURL, "/")+"/meta", nil)
	if err != nil {
		return nil, fmt.Errorf("webhooks: meta: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("webhooks: meta: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("webhooks: meta: %s answered %s", req.URL.Redacted(), resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxMetaBytes+1))
	if err != nil {
		return nil, fmt.Errorf("webhooks: meta: %w", err)
	}
	if len(body) > MaxMetaBytes {
		return nil, fmt.Errorf("webhooks: meta: the answer is larger than %d bytes", MaxMetaBytes)
	}
	return ParseMetaHooks(body)
}

// ParseMetaHooks returns the "hooks" ranges of a /meta answer: CIDRs, or
// single addresses. It fails when the JSON does not parse, when a range
// does not, or when there are none (an empty list would refuse everyone).
func ParseMetaHooks(body []byte) ([]netip.Prefix, error) {
	var meta struct {
		Hooks []string `json:"hooks"`
	}
	if err := json.Unmarshal(body, &meta); err != nil {
		return nil, fmt.Errorf("webhooks: meta: %w", err)
	}
	if len(meta.Hooks) == 0 {
		return nil, errors.New(`webhooks: meta: no "hooks" ranges`)
	}
	out := make([]netip.Prefix, 0, len(meta.Hooks))
	for _, s := range meta.Hooks {
		p, err := ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("webhooks: meta: hooks: %w", err)
		}
		out = append(out, p)
	}
	return out, nil
}

// ParsePrefix parses a CIDR ("192.0.2.0/24") or a single address.
func ParsePrefix(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		return p.Masked(), err
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// Refresh sets the ranges from fetch now and then every interval until ctx
// ends. A fetch that fails keeps the ranges set last (and says so in the
// log). It returns the first fetch's error, after which it does not go on;
// otherwise it returns at once and refreshes on its own goroutine.
func (f *SourceFilter) Refresh(ctx context.Context, every time.Duration, fetch func(context.Context) ([]netip.Prefix, error)) error {
	rs, err := fetch(ctx)
	if err != nil {
		return err
	}
	f.Set(rs)
	f.log.Info("webhooks: allowed source ranges", "ranges", len(rs))
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			rs, err := fetch(ctx)
			if err != nil {
				if ctx.Err() == nil {
					f.log.Warn("webhooks: could not refresh the allowed source ranges; the last ones stay", "error", err, "ranges", len(*f.ranges.Load()))
				}
				continue
			}
			f.Set(rs)
			f.log.Info("webhooks: allowed source ranges refreshed", "ranges", len(rs))
		}
	}()
	return nil
}
