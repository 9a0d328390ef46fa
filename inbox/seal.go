package inbox

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/nats-io/nats.go"

	"forgehooks.dev/forgehooks/inbox/internal/recstore"
	"forgehooks.dev/forgehooks/inbox/internal/runner"
	"forgehooks.dev/forgehooks/inbox/internal/stored"
	"forgehooks.dev/forgehooks/internal/jsonscan"
)

// MinKeyLen is the shortest Options.Key accepted, in bytes.
const MinKeyLen = stored.MinKeyLen

// KeyFile is the name, in an embedded inbox's Dir, of the key made for it
// when Options.Key is empty.
const KeyFile = "inbox.key"

// ErrNoKey is returned by Open with URLs and neither Options.Key nor
// Options.InsecureUnsealed.
var ErrNoKey = errors.New("inbox: with Options.URLs, set Options.Key (the inbox key shared by every receiver and worker, at least 32 bytes) or Options.InsecureUnsealed")

// checkKeyOptions checks Options.Key before anything is opened.
func checkKeyOptions(o Options) error {
	switch {
	case len(o.Key) > 0 && len(o.Key) < MinKeyLen:
		return fmt.Errorf("inbox: Options.Key has %d bytes, at least %d needed", len(o.Key), MinKeyLen)
	case len(o.Key) == 0 && len(o.URLs) > 0 && !o.InsecureUnsealed:
		return ErrNoKey
	}
	return nil
}

// loadKey sets the inbox key: Options.Key, or in the embedded mode the key
// kept in Dir (made at the first Open), or none (InsecureUnsealed). It runs
// under Dir's lock, so that two processes cannot make two keys.
func (in *Inbox) loadKey() error {
	switch {
	case len(in.opts.Key) > 0:
		in.key = append([]byte(nil), in.opts.Key...)
	case in.opts.Dir != "":
		k, err := dirKey(filepath.Join(in.opts.Dir, KeyFile))
		if err != nil {
			return err
		}
		in.key = k
	default:
		in.log.Warn("inbox: Options.InsecureUnsealed: messages are neither sealed nor checked; whoever may publish on the inbox's subjects can make the workers run anything",
			"subjects", in.inSubj+">")
	}
	return nil
}

// maxKeyFile bounds the key file read.
const maxKeyFile = 4096

// dirKey reads the key file at path (ReadKeyFile), or makes it when there
// is none. A key file that is not a regular file or that its group or
// others may read is refused: the key is what makes a stored message
// runnable.
func dirKey(path string) ([]byte, error) {
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return makeKey(path)
	}
	return ReadKeyFile(path)
}

// makeKey writes a new random key at path, in hex as ReadKeyFile reads
// it, failing if a file is there.
func makeKey(path string) ([]byte, error) {
	k := make([]byte, MinKeyLen)
	if _, err := rand.Read(k); err != nil {
		return nil, fmt.Errorf("inbox: making a key: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("inbox: making the key file: %w", err)
	}
	_, err = f.Write([]byte(hex.EncodeToString(k) + "\n"))
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("inbox: writing the key file: %w", err)
	}
	return k, nil
}

// seal seals msg, whose headers are final, with the inbox key; without a
// key it only drops a seal copied from another message.
func (in *Inbox) seal(msg *nats.Msg) {
	if in.key == nil {
		msg.Header.Del(stored.HeaderSeal)
		return
	}
	stored.SetSeal(in.key, msg)
}

// checkSource says why a stored copy (a dead letter, a delivery in the
// inbox) must not be stored again by Retry or Replay: a missing or bad
// seal, in a cluster. The embedded server takes messages from this process
// only, so there everything in the store was written by the inbox (or by a
// version before seals) and is sealed anew: the way to run again the
// deliveries that such a version left.
func (in *Inbox) checkSource(h nats.Header, data []byte) error {
	if in.key == nil || in.ns != nil {
		return nil
	}
	if err := stored.CheckSeal(in.key, h, data); err != nil {
		return fmt.Errorf("not stored again, since no receiver holding the inbox key stored it: %w", err)
	}
	return nil
}

// check says why a stored message must not run: a missing or bad seal
// (with a key), a body that is not a JSON object (without one: nothing
// vouches for the body then), or headers that are not a delivery's. Each
// refusal is counted. Of a message that may run it tells the payload's
// action when known without another scan (runner.Checked): scanned here
// without a key, with one found by the intake (the seal vouches for it).
func (in *Inbox) check(h nats.Header, data []byte) (runner.Checked, error) {
	var chk runner.Checked
	if in.key != nil {
		if err := stored.CheckSeal(in.key, h, data); err != nil {
			if errors.Is(err, stored.ErrUnsealed) {
				in.count.unsealed.Add(1)
			} else {
				in.count.badSeals.Add(1)
			}
			return chk, fmt.Errorf("inbox: %w", err)
		}
		chk.Action, chk.Validated = stored.IngestAction(h, data)
	} else {
		res, err := jsonscan.Scan(data)
		if err != nil {
			in.count.notDeliveries.Add(1)
			return chk, errors.New("inbox: not a delivery: the payload is not a JSON object: " + err.Error())
		}
		chk.Action, chk.Validated = res.String(data), true
	}
	if reason := stored.NotADelivery(h, data); reason != "" {
		in.count.notDeliveries.Add(1)
		return runner.Checked{}, errors.New("inbox: not a delivery: " + reason)
	}
	return chk, nil
}

// ParseKey decodes an inbox key written as hex (what `openssl rand -hex 32`
// prints), blanks around it ignored: at least MinKeyLen bytes. Its errors
// never quote the key.
func ParseKey(s string) ([]byte, error) {
	k, err := hex.DecodeString(strings.TrimSpace(s))
	switch {
	case err != nil:
		return nil, errors.New("inbox: the key is not hex")
	case len(k) < MinKeyLen:
		return nil, fmt.Errorf("inbox: the key has %d bytes, at least %d needed (%d hex digits)", len(k), MinKeyLen, 2*MinKeyLen)
	}
	return k, nil
}

// ReadKeyFile reads an inbox key written as hex (see ParseKey) from path.
// It refuses, without blocking on it, anything but a regular file, and a
// file that its group or others may read.
func ReadKeyFile(path string) ([]byte, error) {
	f, st, err := recstore.OpenRegular(path, maxKeyFile)
	if err != nil {
		return nil, fmt.Errorf("inbox: the key file: %w", err)
	}
	defer f.Close()
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("%w: the key file %s is open to its group or others (mode %04o); make it private: chmod 600 %s", ErrUnsafeDir, path, perm, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFile))
	if err != nil {
		return nil, fmt.Errorf("inbox: the key file: %w", err)
	}
	k, err := ParseKey(string(b))
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	return k, nil
}
