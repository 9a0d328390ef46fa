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
	"time"

	"forgehooks.dev/forgehooks/delivery"
)

// AdminSocket is the name of the socket, in an embedded inbox's directory,
// on which ServeAdmin answers.
const AdminSocket = "admin.sock"

// ServeAdmin answers the queries and actions of the inbox (list, dead, get,
// retry, replay) on a unix socket in its directory, so that another process
// (the command line: 'forgehooks inbox') can operate the inbox while this one
// holds the directory. Only the directory's owner reaches it (the directory
// is 0700, the socket 0600). It returns a func that stops answering; the
// inbox's Close does not. An inbox in a cluster needs none: every process
// connects to the cluster.
func (in *Inbox) ServeAdmin(log *slog.Logger) (stop func(), err error) {
	if in.opts.Dir == "" {
		return nil, errors.New("inbox: the admin socket is for an embedded inbox (Options.Dir)")
	}
	if log == nil {
		log = in.log
	}
	path := filepath.Join(in.opts.Dir, AdminSocket)
	// A socket left by a process that died: this one holds the lock now.
	_ = os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("inbox: admin socket: %w", err)
	}
	_ = os.Chmod(path, 0o600)
	srv := &http.Server{Handler: in.adminHandler(log), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		_ = os.Remove(path)
	}, nil
}

// adminError is an error as the admin socket answers it.
type adminError struct {
	Error string `json:"error"`
	Kind  string `json:"kind,omitempty"` // "not_found", "not_dead", "unsupported"
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
		recs, err := in.List(r.Context(), delivery.ListOptions{Status: delivery.Status(q.Get("status")), Event: q.Get("event"), Tenant: q.Get("tenant"), Before: before, Limit: limit})
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
	for name, f := range map[string]func(context.Context, string) error{"retry": in.Retry, "replay": in.Replay} {
		mux.HandleFunc("POST /"+name, func(w http.ResponseWriter, r *http.Request) {
			id := r.URL.Query().Get("id")
			err := f(context.WithoutCancel(r.Context()), id)
			log.Info("inbox: "+name+" asked on the admin socket", "id", id, "error", err)
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

// DialAdmin returns a client of the admin socket in dir, after checking that
// a process answers there.
func DialAdmin(ctx context.Context, dir string) (*AdminClient, error) {
	path := filepath.Join(dir, AdminSocket)
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
	return json.NewDecoder(res.Body).Decode(out)
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
	case "unsupported":
		return delivery.ErrUnsupported
	}
	return nil
}

// List implements delivery.Store.
func (c *AdminClient) List(ctx context.Context, o delivery.ListOptions) ([]delivery.Record, error) {
	q := url.Values{"status": {string(o.Status)}, "event": {o.Event}, "tenant": {o.Tenant}, "before": {strconv.FormatUint(o.Before, 10)}, "limit": {strconv.Itoa(o.Limit)}}
	var out []delivery.Record
	err := c.call(ctx, http.MethodGet, "/list", q, &out)
	return out, err
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

// Watch implements delivery.Store; the socket streams no changes, so fn is
// never called.
func (c *AdminClient) Watch(func(delivery.Record)) (stop func()) { return func() {} }

var _ delivery.Store = (*AdminClient)(nil)
