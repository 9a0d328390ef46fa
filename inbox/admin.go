package inbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/internal/clip"
)

// AdminSocket is the name of the socket, in an embedded inbox's directory,
// on which ServeAdmin answers.
const AdminSocket = "admin.sock"

// ErrUnsafeDir is returned by Open and DialAdmin when the inbox directory,
// or the admin socket in it, belongs to another user or is open to others.
var ErrUnsafeDir = errors.New("inbox: directory or socket open to other users")

// The admin socket's bounds. A connection is closed when it sends no
// request headers within adminReadHeaderTimeout or stays idle for
// adminIdleTimeout; at most maxAdminConns are open at once; a list answers
// at most maxAdminPage records (the client pages); a client reads no answer
// larger than maxAdminAnswer (a delivery of the largest size with its
// headers fits).
var (
	adminReadHeaderTimeout = 10 * time.Second
	adminIdleTimeout       = 30 * time.Second
	maxAdminPage           = 1000
	maxAdminAnswer         = int64(64 << 20)
)

const maxAdminConns = 64

// ServeAdmin answers the queries and actions of the inbox (list, dead, get,
// retry, replay) on a unix socket in its directory, so that another process
// (the command line: 'forgehooks inbox') can operate the inbox while this one
// holds the directory. Only the directory's owner reaches it: the socket is
// made 0600 in a 0700 directory of its own, then moved into place, so that
// it is never open to others, whatever the umask. Idle connections are
// closed; lists answer a page at a time. It returns a func that stops
// answering; the inbox's Close does not. An inbox in a cluster needs none:
// every process connects to the cluster.
func (in *Inbox) ServeAdmin(log *slog.Logger) (stop func(), err error) {
	if in.opts.Dir == "" {
		return nil, errors.New("inbox: the admin socket is for an embedded inbox (Options.Dir)")
	}
	if log == nil {
		log = in.log
	}
	path := filepath.Join(in.opts.Dir, AdminSocket)
	ln, err := listenPrivate(in.opts.Dir, path)
	if err != nil {
		return nil, fmt.Errorf("inbox: admin socket: %w", err)
	}
	srv := &http.Server{Handler: in.adminHandler(log), ReadHeaderTimeout: adminReadHeaderTimeout,
		IdleTimeout: adminIdleTimeout, WriteTimeout: 5 * time.Minute}
	go srv.Serve(&limitListener{Listener: ln, slots: make(chan struct{}, maxAdminConns)})
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		_ = os.Remove(path)
	}, nil
}

// adminTempPrefix starts the name of the private directory a socket is made
// in before it moves to its place.
const adminTempPrefix = ".admin-"

// listenPrivate listens on a unix socket at path (in dir) that only this
// user can connect to from its first instant: it is bound in a new 0700
// directory (no umask widens a Mkdir's 0700), made 0600 there, and renamed
// to path, which replaces a socket left by a process that died (this one
// holds the directory's lock).
func listenPrivate(dir, path string) (net.Listener, error) {
	// Directories left by a process killed between its Mkdir and Remove.
	if old, _ := filepath.Glob(filepath.Join(dir, adminTempPrefix+"*")); len(old) > 0 {
		for _, o := range old {
			_ = os.RemoveAll(o)
		}
	}
	tmp, err := os.MkdirTemp(dir, adminTempPrefix)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	bound := filepath.Join(tmp, "s")
	ln, err := net.Listen("unix", bound)
	if err != nil {
		return nil, err
	}
	// Closing must not remove a path the socket no longer has.
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	if err := os.Chmod(bound, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	if err := os.Rename(bound, path); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// limitListener accepts at most cap(slots) connections at a time.
type limitListener struct {
	net.Listener
	slots chan struct{}
}

func (l *limitListener) Accept() (net.Conn, error) {
	l.slots <- struct{}{}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &slotConn{Conn: c, free: func() { <-l.slots }}, nil
}

// slotConn gives its slot back once, when closed.
type slotConn struct {
	net.Conn
	once sync.Once
	free func()
}

func (c *slotConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.free)
	return err
}

// adminError is an error as the admin socket answers it.
type adminError struct {
	Error string `json:"error"`
	Kind  string `json:"kind,omitempty"` // "not_found", "not_dead", "not_waiting", "unsupported"
}

func (in *Inbox) adminHandler(log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	reply := func(w http.ResponseWriter, v any, err error) {
		w.Header().Set("Content-Type", "application/json")
		if err != nil {
			e := adminError{Error: err.Error()}
			code := http.StatusInternalServerError
			switch {
			case errors.Is(err, delivery.ErrNotFound):
				e.Kind, code = "not_found", http.StatusNotFound
			case errors.Is(err, delivery.ErrNotDead):
				e.Kind, code = "not_dead", http.StatusConflict
			case errors.Is(err, ErrNotWaiting):
				e.Kind, code = "not_waiting", http.StatusConflict
			case errors.Is(err, delivery.ErrUnsupported):
				e.Kind, code = "unsupported", http.StatusConflict
			}
			w.WriteHeader(code)
			json.NewEncoder(w).Encode(e)
			return
		}
		json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("GET /list", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		before, _ := strconv.ParseUint(q.Get("before"), 10, 64)
		limit, _ := strconv.Atoi(q.Get("limit"))
		switch {
		case limit <= 0:
			limit = delivery.DefaultListLimit
		case limit > maxAdminPage:
			limit = maxAdminPage
		}
		recs, err := in.List(r.Context(), delivery.ListOptions{Status: delivery.Status(q.Get("status")), Name: q.Get("event"), Tenant: q.Get("tenant"), Before: before, Limit: limit})
		reply(w, recs, err)
	})
	mux.HandleFunc("GET /dead", func(w http.ResponseWriter, r *http.Request) {
		recs, err := in.Dead(r.Context())
		reply(w, recs, err)
	})
	mux.HandleFunc("GET /get", func(w http.ResponseWriter, r *http.Request) {
		rec, err := in.Get(r.Context(), r.URL.Query().Get("id"))
		reply(w, rec, err)
	})
	for name, f := range map[string]func(context.Context, string) error{"retry": in.Retry, "replay": in.Replay, "skip": in.Skip} {
		mux.HandleFunc("POST /"+name, func(w http.ResponseWriter, r *http.Request) {
			id := r.URL.Query().Get("id")
			err := f(context.WithoutCancel(r.Context()), id)
			if err != nil {
				// Its message quotes the id.
				log.Info("inbox: "+name+" asked on the admin socket", "id", clip.String(id), "error", clip.String(err.Error()))
			} else {
				log.Info("inbox: "+name+" asked on the admin socket", "id", clip.String(id))
			}
			reply(w, struct{}{}, err)
		})
	}
	return mux
}

// AdminClient operates an inbox through the admin socket of the process
// that holds its directory (see Inbox.ServeAdmin): a delivery.Store (whose
// Watch never calls back: the socket streams no changes), with Dead. Its
// errors wrap delivery's as the inbox's do. It is safe for concurrent use.
type AdminClient struct {
	hc *http.Client
}

// DialAdmin returns a client of the admin socket in dir, after checking
// that dir and the socket belong to this process's user and are closed to
// others (else the error wraps ErrUnsafeDir) and that a process answers
// there.
func DialAdmin(ctx context.Context, dir string) (*AdminClient, error) {
	path := filepath.Join(dir, AdminSocket)
	if err := checkDir(dir); err != nil {
		return nil, err
	}
	if err := checkSocket(path); err != nil {
		return nil, fmt.Errorf("inbox: admin socket: %w", err)
	}
	c := &AdminClient{hc: &http.Client{Timeout: time.Minute, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
	}}}
	if _, err := c.Dead(ctx); err != nil {
		return nil, fmt.Errorf("inbox: no answer on the admin socket %s: %w", path, err)
	}
	return c, nil
}

// Close releases the client's connections.
func (c *AdminClient) Close() { c.hc.CloseIdleConnections() }

func (c *AdminClient) call(ctx context.Context, method, path string, q url.Values, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, "http://inbox"+path+"?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	res, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		var e adminError
		b, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
		if json.Unmarshal(b, &e) != nil || e.Error == "" {
			return fmt.Errorf("admin socket answered %s", res.Status)
		}
		return &remoteError{msg: e.Error, kind: e.Kind}
	}
	// One byte past the bound tells a larger answer from one that fits.
	lr := &io.LimitedReader{R: res.Body, N: maxAdminAnswer + 1}
	err = json.NewDecoder(lr).Decode(out)
	if lr.N <= 0 {
		return fmt.Errorf("inbox: the admin socket's answer is larger than %d bytes", maxAdminAnswer)
	}
	return err
}

// remoteError is an error of the inbox behind the socket: its message, and
// the delivery error it wraps.
type remoteError struct{ msg, kind string }

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error {
	switch e.kind {
	case "not_found":
		return delivery.ErrNotFound
	case "not_dead":
		return delivery.ErrNotDead
	case "not_waiting":
		return ErrNotWaiting
	case "unsupported":
		return delivery.ErrUnsupported
	}
	return nil
}

// List implements delivery.Store. The socket answers a page of at most
// maxAdminPage records at a time; a larger Limit is read a page after the
// other (a caller that prints as it goes asks for a page at a time).
func (c *AdminClient) List(ctx context.Context, o delivery.ListOptions) ([]delivery.Record, error) {
	if o.Limit <= 0 {
		o.Limit = delivery.DefaultListLimit
	}
	var out []delivery.Record
	for len(out) < o.Limit {
		n := min(o.Limit-len(out), maxAdminPage)
		q := url.Values{"status": {string(o.Status)}, "event": {o.Name}, "tenant": {o.Tenant}, "before": {strconv.FormatUint(o.Before, 10)}, "limit": {strconv.Itoa(n)}}
		var page []delivery.Record
		if err := c.call(ctx, http.MethodGet, "/list", q, &page); err != nil {
			return out, err
		}
		out = append(out, page...)
		if len(page) < n || page[len(page)-1].Seq == 0 {
			break
		}
		o.Before = page[len(page)-1].Seq
	}
	return out, nil
}

// Dead returns the dead letters, as Inbox.Dead.
func (c *AdminClient) Dead(ctx context.Context) ([]delivery.Record, error) {
	var out []delivery.Record
	err := c.call(ctx, http.MethodGet, "/dead", nil, &out)
	return out, err
}

// Get implements delivery.Store.
func (c *AdminClient) Get(ctx context.Context, id string) (delivery.Record, error) {
	var out delivery.Record
	err := c.call(ctx, http.MethodGet, "/get", url.Values{"id": {id}}, &out)
	return out, err
}

// Retry implements delivery.Store: the running inbox stores the dead letter
// again and its workers run it.
func (c *AdminClient) Retry(ctx context.Context, id string) error {
	return c.call(ctx, http.MethodPost, "/retry", url.Values{"id": {id}}, &struct{}{})
}

// Replay implements delivery.Store.
func (c *AdminClient) Replay(ctx context.Context, id string) error {
	return c.call(ctx, http.MethodPost, "/replay", url.Values{"id": {id}}, &struct{}{})
}

// Skip sets a waiting delivery aside as a dead letter in the running
// inbox, as Inbox.Skip.
func (c *AdminClient) Skip(ctx context.Context, id string) error {
	return c.call(ctx, http.MethodPost, "/skip", url.Values{"id": {id}}, &struct{}{})
}

// Watch implements delivery.Store; the socket streams no changes, so fn is
// never called.
func (c *AdminClient) Watch(func(delivery.Record)) (stop func()) { return func() {} }

var _ delivery.Store = (*AdminClient)(nil)
