// Package sourceip refuses webhook requests from source addresses outside
// an allow-list, before their body is read: for a receiver that accepts
// deliveries only from the forge's own ranges, which its API publishes at
// /meta ("hooks"; see Meta). A Filter wraps any http.Handler, such as a
// webhooks middleware; it needs nothing of package webhooks.
//
// An IPv4 address and its IPv4-mapped IPv6 form (::ffff:192.0.2.1) are the
// same address everywhere here: in ranges, in a request's peer and in
// X-Forwarded-For. A lookup is a binary search over sorted ranges, so a list
// of hundreds of thousands of ranges costs each request microseconds.
//
// It depends on the standard library alone.
package sourceip

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Filter answers 403 to requests from addresses outside its ranges, before
// their body is read, and passes the others to the handler it wraps. It is
// safe for concurrent use; its ranges may be replaced while it serves. It
// has no ranges until Set (or Refresh) is called, and refuses every request
// until then.
type Filter struct {
	ranges  atomic.Pointer[ranges]
	trusted set
	log     *slog.Logger
}

// ranges are a Filter's allowed ranges, as given and as a set.
type ranges struct {
	list []netip.Prefix
	set  set
}

// Options configures New.
type Options struct {
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

// New returns a Filter with no ranges yet.
func New(opts Options) *Filter {
	f := &Filter{trusted: newSet(normalize(opts.TrustedProxies)), log: opts.Logger}
	if f.log == nil {
		f.log = slog.Default()
	}
	f.ranges.Store(&ranges{list: []netip.Prefix{}})
	return f
}

// Set replaces the allowed ranges. It takes them as they are: Meta.Fetch is
// what refuses a published range too wide to be meant.
func (f *Filter) Set(rs []netip.Prefix) {
	list := normalize(rs)
	f.ranges.Store(&ranges{list: list, set: newSet(list)})
}

// normalize returns ps masked, with IPv4-mapped prefixes as IPv4 ones
// (::ffff:192.0.2.0/120 is 192.0.2.0/24), and without invalid prefixes.
func normalize(ps []netip.Prefix) []netip.Prefix {
	out := make([]netip.Prefix, 0, len(ps))
	for _, p := range ps {
		if p.IsValid() {
			out = append(out, unmapPrefix(p.Masked()))
		}
	}
	return out
}

// unmapPrefix returns an IPv4-mapped prefix of at least 96 bits as the
// IPv4 prefix it is, and any other prefix as it is.
func unmapPrefix(p netip.Prefix) netip.Prefix {
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		return netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p
}

// Ranges returns the allowed ranges, masked, IPv4-mapped ones as IPv4.
func (f *Filter) Ranges() []netip.Prefix {
	return append([]netip.Prefix(nil), f.ranges.Load().list...)
}

// Client returns the address r is judged by: its peer's, or, from a trusted
// proxy, what X-Forwarded-For says (see Options.TrustedProxies). An
// IPv4-mapped address is returned as IPv4. ok is false when the peer's
// address does not parse, or a hop the trusted proxies wrote does not.
func (f *Filter) Client(r *http.Request) (addr netip.Addr, ok bool) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	addr, err = netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false
	}
	addr = addr.Unmap()
	if !f.trusted.contains(addr) {
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
		if !f.trusted.contains(addr) {
			return addr, true
		}
	}
	return addr, true
}

// Allowed reports whether r comes from an allowed address.
func (f *Filter) Allowed(r *http.Request) bool {
	addr, ok := f.Client(r)
	return ok && f.ranges.Load().set.contains(addr)
}

// msgForbidden answers a request from an address outside the ranges.
const msgForbidden = "Forbidden: the source address is not one the forge sends from"

// Wrap returns next behind the filter: a request from outside the ranges is
// answered 403 with a JSON error, with Connection: close, and its body is
// not read.
func (f *Filter) Wrap(next http.Handler) http.Handler {
	body, _ := json.Marshal(struct {
		Error string `json:"error"`
	}{msgForbidden})
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if f.Allowed(r) {
			next.ServeHTTP(rw, r)
			return
		}
		f.log.Info("sourceip: request refused: source address outside the allowed ranges", "remote", r.RemoteAddr, "path", r.URL.Path)
		h := rw.Header()
		h.Set("Connection", "close") // the body stays unread
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", strconv.Itoa(len(body)))
		rw.WriteHeader(http.StatusForbidden)
		rw.Write(body)
	})
}

// Refresh sets the ranges from fetch (such as Meta.Fetch) now and then
// every interval until ctx ends. A fetch that fails keeps the ranges set
// last (and says so in the log). It returns the first fetch's error, after
// which it does not go on; otherwise it returns at once and refreshes on its
// own goroutine.
func (f *Filter) Refresh(ctx context.Context, every time.Duration, fetch func(context.Context) ([]netip.Prefix, error)) error {
	rs, err := fetch(ctx)
	if err != nil {
		return err
	}
	f.Set(rs)
	f.log.Info("sourceip: allowed source ranges", "ranges", len(rs))
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
					f.log.Warn("sourceip: could not refresh the allowed source ranges; the last ones stay", "error", err, "ranges", len(f.ranges.Load().list))
				}
				continue
			}
			f.Set(rs)
			f.log.Info("sourceip: allowed source ranges refreshed", "ranges", len(rs))
		}
	}()
	return nil
}
