package catchup_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/catchup"
	"forgehooks.dev/forgehooks/forgetest"
)

// RedeliverGUID finds a guid's latest attempt, pages back to it, redelivers
// it (even one that succeeded: the request is explicit), and stops reading
// the log there.
func TestRedeliverGUID(t *testing.T) {
	t.Parallel()
	e := newEnv(t, forgetest.Options{})
	key := forgetest.AppHook
	old := e.record(key, 1, 0)[0]
	// a second, later attempt of the same guid, then 150 newer deliveries
	// (two pages of 100) before it
	e.clock.Advance(time.Minute)
	latest := e.forge.Record(key, forgetest.Attempt{GUID: old.GUID, Status: "Invalid HTTP Response: 503", StatusCode: 503, Event: "issues", Action: "opened", Redelivery: true}, nil)
	e.clock.Advance(200 * time.Minute)
	e.record(key, 150, 200)
	ok := e.record(key, 1, 200)[0]

	for _, tc := range []struct {
		guid string
		want int64
	}{{old.GUID, latest.ID}, {ok.GUID, ok.ID}} {
		a, err := catchup.RedeliverGUID(context.Background(), e.options(), tc.guid)
		if err != nil || a.ID != tc.want || a.GUID != tc.guid {
			t.Fatalf("%s: attempt %d, %v; want attempt %d", tc.guid, a.ID, err, tc.want)
		}
		p := posts(e.forge)
		if last := p[len(p)-1]; !strings.HasSuffix(last.Path, fmt.Sprintf("/deliveries/%d/attempts", tc.want)) {
			t.Errorf("%s: posted %s", tc.guid, last.Path)
		}
	}
	if n := len(posts(e.forge)); n != 2 {
		t.Errorf("%d redelivery requests, want 2", n)
	}
	gets := 0
	for _, r := range e.forge.Requests() {
		if r.Method == "GET" {
			gets++
		}
	}
	// 2 pages for the old guid, 1 for the newest
	if gets != 3 {
		t.Errorf("%d log pages read, want 3 (reading stops at the guid)", gets)
	}

	_, err := catchup.RedeliverGUID(context.Background(), e.options(), "no-such-guid")
	if !errors.Is(err, catchup.ErrNotInLog) {
		t.Errorf("unknown guid: %v, want ErrNotInLog", err)
	}
	if _, err := catchup.RedeliverGUID(context.Background(), e.options(), ""); err == nil {
		t.Error("empty guid: no error")
	}
	if n := len(posts(e.forge)); n != 2 {
		t.Errorf("%d redelivery requests after the failures, want 2", n)
	}
}

// mapStore is a StateStore in memory, as the inbox's GetState/PutState are
// one in JetStream.
type mapStore struct {
	mu  sync.Mutex
	m   map[string][]byte
	err error
}

func (s *mapStore) GetState(_ context.Context, key string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[key], s.err
}

func (s *mapStore) PutState(_ context.Context, key string, v []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	if s.m == nil {
		s.m = map[string][]byte{}
	}
	s.m[key] = v
	return nil
}

// StoreCheckpoints keeps a run's checkpoint under catchup/KEY, and the next
// run requests nothing; a corrupt value or a store error stops the run.
func TestStoreCheckpoints(t *testing.T) {
	t.Parallel()
	e := newEnv(t, forgetest.Options{})
	missed := e.record(forgetest.AppHook, 3, 0)
	store := &mapStore{}
	o := e.options()
	o.Checkpoints = catchup.StoreCheckpoints{Store: store}
	rep, err := e.run(o)
	if err != nil || rep.Requested != 3 {
		t.Fatalf("first run: %d requested, %v", rep.Requested, err)
	}
	s, err := o.Checkpoints.Load(context.Background(), catchup.AppHook().Key())
	if err != nil || !s.Through.Equal(missed[2].DeliveredAt) || len(s.Requested) != 3 {
		t.Fatalf("state %+v, %v", s, err)
	}
	if store.m[catchup.StoreKeyPrefix+"app/hook"] == nil {
		t.Errorf("keys %v", store.m)
	}
	rep, err = e.run(o)
	if err != nil || rep.Requested != 0 || rep.Count(catchup.SkipRequested) != 3 {
		t.Errorf("second run: %d requested, %d skipped as requested, %v", rep.Requested, rep.Count(catchup.SkipRequested), err)
	}
	store.m[catchup.StoreKeyPrefix+"app/hook"] = []byte("{not json")
	if _, err := e.run(o); err == nil || !strings.Contains(err.Error(), "not valid JSON") {
		t.Errorf("corrupt checkpoint: %v", err)
	}
	store.err = errors.New("store down")
	if _, err := e.run(o); !errors.Is(err, store.err) {
		t.Errorf("store error: %v", err)
	}
	if n := len(posts(e.forge)); n != 3 {
		t.Errorf("%d redelivery requests, want 3", n)
	}
}
