//go:build linux

package inbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/webhooks"
)

// nobody is the user id another user's files get in these tests.
const nobody = 65534

// TestOpenRefusesUnsafeDir: a directory another user owns, or that group or
// others may write to, is refused before anything is written in it.
func TestOpenRefusesUnsafeDir(t *testing.T) {
	tests := []struct {
		name   string
		mode   os.FileMode
		owner  int // -1: this user
		refuse string
	}{
		{"private", 0o700, -1, ""},
		{"readable by all", 0o755, -1, ""},
		{"world-writable", 0o777, -1, "writable by its group or others"},
		{"sticky, world-writable", 0o1777, -1, "writable by its group or others"},
		{"group-writable", 0o770, -1, "writable by its group or others"},
		{"another user's", 0o700, nobody, "belongs to user 65534"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "inbox")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, tt.mode); err != nil {
				t.Fatal(err)
			}
			if tt.owner >= 0 {
				if os.Geteuid() != 0 {
					t.Skip("needs root to give a directory to another user")
				}
				if err := os.Chown(dir, tt.owner, tt.owner); err != nil {
					t.Fatal(err)
				}
			}
			in, err := Open(context.Background(), Options{Dir: dir, Logger: quiet(t)})
			if tt.refuse == "" {
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				in.Close(context.Background())
				return
			}
			if err == nil {
				in.Close(context.Background())
				t.Fatal("Open took it")
			}
			if !errors.Is(err, ErrUnsafeDir) || !strings.Contains(err.Error(), tt.refuse) {
				t.Errorf("Open: %v; want ErrUnsafeDir saying %q", err, tt.refuse)
			}
			if ents, _ := os.ReadDir(dir); len(ents) > 0 {
				t.Errorf("Open wrote %s in a refused directory", ents[0].Name())
			}
		})
	}
}

// TestAdminSocketPrivateUnderUmask000: with umask 000, the admin socket is
// never reachable by another user, not even in the instant it is made: a
// goroutine with the file-system identity of nobody tries to connect all the
// while, across 40 starts, and every entry seen in the directory is closed
// to others. The directory itself is 0755, which Open accepts.
func TestAdminSocketPrivateUnderUmask000(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to connect as another user")
	}
	root := t.TempDir()
	dir := filepath.Join(root, "inbox")
	// nobody must reach the directory to try the socket at all.
	for _, d := range []string{filepath.Dir(root), root} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	in := openInbox(t, dir, Options{})
	path := filepath.Join(dir, AdminSocket)
	// The control: nobody connects to a socket open to all there, and not
	// to one that is 0600, so the loop below can see a window.
	control := filepath.Join(dir, "control.sock")
	listenAt(t, control)
	os.Chmod(control, 0o666)
	if err := connectAs(nobody, control); err != nil {
		t.Fatalf("nobody cannot connect to a 0666 socket in the directory: %v", err)
	}
	os.Chmod(control, 0o600)
	if err := connectAs(nobody, control); err == nil {
		t.Fatal("nobody connects to a 0600 socket: the check below would prove nothing")
	}
	os.Remove(control)

	var stop atomic.Bool
	var connected, tries, opened atomic.Int64
	var seen sync.Map // name → mode, of entries open to others
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		// This thread is nobody for the file system until it exits (a
		// locked goroutine's thread ends with it).
		runtime.LockOSThread()
		syscall.Setfsgid(nobody)
		syscall.Setfsuid(nobody)
		for !stop.Load() {
			fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
			if err != nil {
				continue
			}
			err = syscall.Connect(fd, &syscall.SockaddrUnix{Name: path})
			syscall.Close(fd)
			tries.Add(1)
			if err == nil {
				connected.Add(1)
			}
		}
	}()
	go func() {
		defer wg.Done()
		for !stop.Load() {
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				fi, err := os.Lstat(filepath.Join(dir, e.Name()))
				if err != nil {
					continue
				}
				if fi.Mode().Type()&(os.ModeSocket|os.ModeDir) != 0 && fi.Mode().Perm()&0o077 != 0 {
					seen.Store(e.Name(), fi.Mode())
				}
			}
		}
	}()
	for i := 0; i < 40; i++ {
		stopAdmin, err := in.ServeAdmin(quiet(t))
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Lstat(path)
		if err != nil || fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o600 {
			t.Errorf("start %d: the socket right after ServeAdmin: %v %v; want a socket, 0600", i, fi.Mode(), err)
		}
		// This user (root) is answered.
		ac, err := DialAdmin(context.Background(), dir)
		if err != nil {
			t.Fatalf("start %d: %v", i, err)
		}
		ac.Close()
		opened.Add(1)
		stopAdmin()
	}
	stop.Store(true)
	wg.Wait()
	if n := connected.Load(); n > 0 {
		t.Errorf("another user connected %d times of %d", n, tries.Load())
	}
	seen.Range(func(k, v any) bool {
		t.Errorf("%s was in the directory with mode %v", k, v)
		return true
	})
	t.Logf("%d starts; another user tried %d connections, %d connected", opened.Load(), tries.Load(), connected.Load())
	if left, _ := filepath.Glob(filepath.Join(dir, adminTempPrefix+"*")); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// connectAs connects to the unix socket at path with the file-system
// identity of uid, on a thread of its own that ends with it.
func connectAs(uid int, path string) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		syscall.Setfsgid(uid)
		syscall.Setfsuid(uid)
		fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			errc <- err
			return
		}
		defer syscall.Close(fd)
		errc <- syscall.Connect(fd, &syscall.SockaddrUnix{Name: path})
	}()
	return <-errc
}

// TestDialAdminChecksSocket: the command line does not trust a socket that
// is another user's, open to others, or no socket.
func TestDialAdminChecksSocket(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, path string)
		want  string
	}{
		{"open to others", func(t *testing.T, path string) {
			listenAt(t, path)
			os.Chmod(path, 0o666)
		}, "open to its group or others"},
		{"another user's", func(t *testing.T, path string) {
			if os.Geteuid() != 0 {
				t.Skip("needs root to give a socket to another user")
			}
			listenAt(t, path)
			os.Chown(path, nobody, nobody)
		}, "belongs to user 65534"},
		{"a file", func(t *testing.T, path string) {
			os.WriteFile(path, nil, 0o600)
		}, "not a socket"},
		{"a link", func(t *testing.T, path string) {
			other := filepath.Join(t.TempDir(), "s")
			listenAt(t, other)
			os.Symlink(other, path)
		}, "not a socket"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.setup(t, filepath.Join(dir, AdminSocket))
			ac, err := DialAdmin(context.Background(), dir)
			if err == nil {
				ac.Close()
				t.Fatal("DialAdmin trusted it")
			}
			if !errors.Is(err, ErrUnsafeDir) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("DialAdmin: %v; want ErrUnsafeDir saying %q", err, tt.want)
			}
		})
	}
	// A directory open to others is refused before its socket is looked at.
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	if _, err := DialAdmin(context.Background(), dir); !errors.Is(err, ErrUnsafeDir) {
		t.Errorf("DialAdmin in a world-writable directory: %v", err)
	}
}

// listenAt serves a JSON empty list on a unix socket at path, as a socket
// another process planted would.
func listenAt(t *testing.T, path string) {
	t.Helper()
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "[]") })}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
}

// TestAdminBounds: idle connections and ones that send nothing are closed;
// lists answer a page at a time and the client reads them all; a client
// refuses an answer over its bound; a long id is clipped in the log.
func TestAdminBounds(t *testing.T) {
	oldHeader, oldIdle, oldPage, oldAnswer := adminReadHeaderTimeout, adminIdleTimeout, maxAdminPage, maxAdminAnswer
	adminReadHeaderTimeout, adminIdleTimeout, maxAdminPage = 300*time.Millisecond, 300*time.Millisecond, 7
	t.Cleanup(func() {
		adminReadHeaderTimeout, adminIdleTimeout, maxAdminPage, maxAdminAnswer = oldHeader, oldIdle, oldPage, oldAnswer
	})
	dir := t.TempDir()
	var logs logBuffer
	in := openInbox(t, dir, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	stop, err := in.ServeAdmin(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	ctx := context.Background()
	for i := 0; i < 20; i++ {
		if _, err := in.Enqueue(ctx, webhooks.Delivery{ID: fmt.Sprintf("d%02d", i), Name: "push", Payload: []byte(fmt.Sprintf(`{"i":%d}`, i))}); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, AdminSocket)

	t.Run("silent connection closed", func(t *testing.T) {
		c, err := net.Dial("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("a connection that sent nothing is still open: %v", err)
		}
	})
	t.Run("idle connection closed", func(t *testing.T) {
		c, err := net.Dial("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, "GET /dead HTTP/1.1\r\nHost: inbox\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		// The answer, then the close of an idle keep-alive connection.
		b, err := io.ReadAll(c)
		if errors.Is(err, os.ErrDeadlineExceeded) || !bytes.HasPrefix(b, []byte("HTTP/1.1 200")) {
			t.Errorf("idle connection: %v, read %q", err, b)
		}
	})
	ac, err := DialAdmin(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ac.Close()
	t.Run("paged list", func(t *testing.T) {
		recs, err := ac.List(ctx, delivery.ListOptions{Limit: 100})
		if err != nil || len(recs) != 20 {
			t.Fatalf("List through pages of 7: %d records, %v", len(recs), err)
		}
		for i := 1; i < len(recs); i++ {
			if recs[i].Seq >= recs[i-1].Seq {
				t.Fatalf("not newest first at %d: %d then %d", i, recs[i-1].Seq, recs[i].Seq)
			}
		}
		recs, err = ac.List(ctx, delivery.ListOptions{Limit: 3})
		if err != nil || len(recs) != 3 || recs[0].ID != "d19" {
			t.Errorf("List limit 3: %d records, %v", len(recs), err)
		}
	})
	t.Run("long id clipped in the log", func(t *testing.T) {
		long := strings.Repeat("x", 60<<10)
		ac.Retry(ctx, long)
		for _, line := range strings.Split(logs.String(), "\n") {
			if len(line) > 2048 {
				t.Errorf("a log line of %d bytes: %.200s", len(line), line)
			}
		}
		if !strings.Contains(logs.String(), "truncated; 61440 bytes") {
			t.Errorf("the id is not clipped: %.500s", logs.String())
		}
	})
	t.Run("answer over the bound", func(t *testing.T) {
		maxAdminAnswer = 1 << 10
		_, err := ac.List(ctx, delivery.ListOptions{Limit: 100})
		maxAdminAnswer = oldAnswer
		if err == nil || !strings.Contains(err.Error(), "larger than") {
			t.Errorf("an answer over the bound: %v", err)
		}
	})
}
