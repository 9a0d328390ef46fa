package sourceip

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"time"
)

// MaxMetaBytes bounds the answer of /meta that Meta.Fetch reads.
const MaxMetaBytes = 4 << 20

// The widest ranges a /meta answer may publish: MinMetaBits4 bits for IPv4
// (a /8), MinMetaBits6 for IPv6 (a /24). A wider one (0.0.0.0/0, ::/0) would
// allow senders far beyond any one forge's network, and is refused. The IPv6
// bound leaves room for the forge's own hook range, an IPv6 /29.
const (
	MinMetaBits4 = 8
	MinMetaBits6 = 24
)

// Meta reads the ranges the forge sends webhooks from: the "hooks" member
// of its API's /meta (a self-hosted server's API works the same).
type Meta struct {
	// APIURL is the forge's API root; Fetch asks APIURL + "/meta".
	APIURL string
	// Client makes the request. Nil: a client with a 30 s timeout.
	Client *http.Client
	// Logger gets a warning for each answer with ranges refused as too
	// wide (see ParseMetaHooks). Nil: slog.Default().
	Logger *slog.Logger
}

// Fetch returns the "hooks" ranges of GET APIURL/meta, as ParseMetaHooks
// reads them, and logs those it refused. It fails for an answer other than
// 200, one larger than MaxMetaBytes, or one ParseMetaHooks fails for. It
// suits Filter.Refresh.
func (m *Meta) Fetch(ctx context.Context) ([]netip.Prefix, error) {
	client := m.Client
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(m.APIURL, "/")+"/meta", nil)
	if err != nil {
		return nil, fmt.Errorf("sourceip: meta: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("sourceip: meta: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("sourceip: meta: %s answered %s", req.URL.Redacted(), resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxMetaBytes+1))
	if err != nil {
		return nil, fmt.Errorf("sourceip: meta: %w", err)
	}
	if len(body) > MaxMetaBytes {
		return nil, fmt.Errorf("sourceip: meta: the answer is larger than %d bytes", MaxMetaBytes)
	}
	rs, refused, err := ParseMetaHooks(body)
	if len(refused) > 0 {
		log := m.Logger
		if log == nil {
			log = slog.Default()
		}
		// One line per answer, however many ranges it refuses.
		show := make([]string, 0, min(len(refused), 10))
		for _, p := range refused[:cap(show)] {
			show = append(show, p.String())
		}
		log.Warn(fmt.Sprintf("sourceip: /meta ranges refused: wider than /%d (IPv4) or /%d (IPv6)", MinMetaBits4, MinMetaBits6),
			"url", req.URL.Redacted(), "refused", len(refused), "first", strings.Join(show, ","), "kept", len(rs))
	}
	return rs, err
}

// ParseMetaHooks returns the "hooks" ranges of a /meta answer (CIDRs, or
// single addresses, as ParsePrefix reads them), and apart those it refuses:
// ranges wider than MinMetaBits4 (IPv4) or MinMetaBits6 (IPv6) bits, and
// IPv6 ranges that hold every IPv4-mapped address (::/64 would allow every
// IPv4 sender). It fails when the JSON does not parse, when a range does
// not, or when no range is left (an empty list would refuse everyone); the
// refused ranges are returned then too.
func ParseMetaHooks(body []byte) (ranges, refused []netip.Prefix, err error) {
	var meta struct {
		Hooks []string `json:"hooks"`
	}
	if err := json.Unmarshal(body, &meta); err != nil {
		return nil, nil, fmt.Errorf("sourceip: meta: %w", err)
	}
	if len(meta.Hooks) == 0 {
		return nil, nil, errors.New(`sourceip: meta: no "hooks" ranges`)
	}
	ranges = make([]netip.Prefix, 0, len(meta.Hooks))
	for _, s := range meta.Hooks {
		p, err := ParsePrefix(s)
		if err != nil {
			return nil, nil, fmt.Errorf("sourceip: meta: hooks: %w", err)
		}
		if tooWide(p) {
			refused = append(refused, p)
			continue
		}
		ranges = append(ranges, p)
	}
	if len(ranges) == 0 {
		return nil, refused, fmt.Errorf(`sourceip: meta: every "hooks" range is wider than /%d (IPv4) or /%d (IPv6)`, MinMetaBits4, MinMetaBits6)
	}
	return ranges, refused, nil
}

// mappedSpace is the first IPv4-mapped address; an IPv6 prefix shorter than
// /96 that holds it holds them all.
var mappedSpace = netip.AddrFrom16([16]byte{10: 0xff, 11: 0xff})

// tooWide reports whether p, as ParsePrefix returns it, is wider than a
// /meta range may be.
func tooWide(p netip.Prefix) bool {
	if p.Addr().Is4() {
		return p.Bits() < MinMetaBits4
	}
	return p.Bits() < MinMetaBits6 || p.Contains(mappedSpace)
}

// ParsePrefix parses a CIDR ("192.0.2.0/24") or a single address, and
// returns it masked; an IPv4-mapped prefix of /96 or longer, or a mapped
// address, is returned as the IPv4 one it is ("::ffff:192.0.2.0/120" is
// 192.0.2.0/24). A zone is refused.
func ParsePrefix(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, err
		}
		return unmapPrefix(p.Masked()), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	if a.Zone() != "" {
		return netip.Prefix{}, fmt.Errorf("ParsePrefix(%q): an address with a zone is no range", s)
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}
