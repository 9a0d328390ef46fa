package catchup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"time"

	"forgehooks.dev/forgehooks/internal/atomicfile"
)

// State is what a run leaves for the next one, per hook.
type State struct {
	// Through is the newest delivery-log time up to which every attempt was
	// decided; the next run reads the log back to here (less a small overlap).
	// Zero: no run finished yet.
	Through time.Time `json:"through,omitzero"`
	// Requested holds each guid whose redelivery was requested, with when:
	// a guid is requested once, however many runs see it failed.
	Requested map[string]time.Time `json:"requested,omitempty"`
}

// Checkpoints stores a [State] per hook key ([Hook.Key]). Implementations must
// be safe for concurrent use; Save must be atomic (a crash leaves the old state
// or the new, never a mix).
type Checkpoints interface {
	// Load returns the state saved for key, or the zero State when none was.
	Load(ctx context.Context, key string) (State, error)
	// Save replaces the state of key.
	Save(ctx context.Context, key string, s State) error
}

// StateFile keeps the states of every hook in one JSON file, written
// atomically (a temporary file in the same directory, synced, then renamed).
// A missing file is an empty store; a file that cannot be read or parsed is an
// error, never silently a fresh start. One process at a time may use a file.
type StateFile struct {
	// Path is the file's name; its directory must exist.
	Path string

	mu sync.Mutex
}

type stateFileData struct {
	Version int              `json:"version"`
	Hooks   map[string]State `json:"hooks"`
}

const stateFileVersion = 1

// Load implements [Checkpoints].
func (f *StateFile) Load(_ context.Context, key string) (State, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, err := f.read()
	if err != nil {
		return State{}, err
	}
	return d.Hooks[key], nil
}

// Save implements [Checkpoints].
func (f *StateFile) Save(_ context.Context, key string, s State) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, err := f.read()
	if err != nil {
		return err
	}
	d.Hooks[key] = s
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return fmt.Errorf("state file %s: %w", f.Path, err)
	}
	if err := atomicfile.Write(f.Path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("state file: %w", err)
	}
	return nil
}

func (f *StateFile) read() (stateFileData, error) {
	d := stateFileData{Version: stateFileVersion, Hooks: map[string]State{}}
	if f.Path == "" {
		return d, errors.New("state file: no path")
	}
	b, err := os.ReadFile(f.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return d, nil
	}
	if err != nil {
		return d, fmt.Errorf("state file: %w", err)
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return d, fmt.Errorf("state file %s: not valid JSON (%v); move it away to start afresh", f.Path, err)
	}
	if d.Version != stateFileVersion {
		return d, fmt.Errorf("state file %s: version %d, want %d", f.Path, d.Version, stateFileVersion)
	}
	if d.Hooks == nil {
		d.Hooks = map[string]State{}
	}
	return d, nil
}

// MemoryCheckpoints keeps states in memory, for one process: a receiver that
// runs catch-up on a ticker without a state file. The zero value is ready.
type MemoryCheckpoints struct {
	mu     sync.Mutex
	states map[string]State
}

// Load implements [Checkpoints].
func (m *MemoryCheckpoints) Load(_ context.Context, key string) (State, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return cloneState(m.states[key]), nil
}

// Save implements [Checkpoints].
func (m *MemoryCheckpoints) Save(_ context.Context, key string, s State) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.states == nil {
		m.states = map[string]State{}
	}
	m.states[key] = cloneState(s)
	return nil
}

func cloneState(s State) State {
	if s.Requested != nil {
		r := make(map[string]time.Time, len(s.Requested))
		for k, v := range s.Requested {
			r[k] = v
		}
		s.Requested = r
	}
	return s
}

// StateStore is a durable store of bytes by key, such as a receiver's inbox
// ((*inbox.Inbox).GetState and PutState). Get returns nil and no error for a
// key never put; Put replaces a key's value atomically.
type StateStore interface {
	GetState(ctx context.Context, key string) ([]byte, error)
	PutState(ctx context.Context, key string, value []byte) error
}

// StoreKeyPrefix prefixes the keys StoreCheckpoints writes: the state of hook
// h is under StoreKeyPrefix + h.Key().
const StoreKeyPrefix = "catchup/"

// StoreCheckpoints keeps each hook's [State] as JSON in a [StateStore], so
// that a receiver with a durable inbox keeps its checkpoints beside its
// deliveries (and shares them with every receiver of the same cluster). It is
// as safe for concurrent use as its Store.
type StoreCheckpoints struct {
	Store StateStore
}

// Load implements [Checkpoints].
func (c StoreCheckpoints) Load(ctx context.Context, key string) (State, error) {
	b, err := c.Store.GetState(ctx, StoreKeyPrefix+key)
	if err != nil || b == nil {
		return State{}, err
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return State{}, fmt.Errorf("checkpoint %s%s: not valid JSON: %v", StoreKeyPrefix, key, err)
	}
	return s, nil
}

// Save implements [Checkpoints].
func (c StoreCheckpoints) Save(ctx context.Context, key string, s State) error {
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("checkpoint %s%s: %w", StoreKeyPrefix, key, err)
	}
	return c.Store.PutState(ctx, StoreKeyPrefix+key, b)
}
