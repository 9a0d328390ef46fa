package proxy

import "testing"

// FuzzEventID: parseEventID accepts an id only when it is exactly the one
// eventID makes for that channel, epoch and seq; every id eventID makes parses
// back to its seq.
func FuzzEventID(f *testing.F) {
	key := []byte("0123456789abcdef0123456789abcdef")
	f.Add("EPOCH-1-AAAAAAAAAAAAA", uint64(1))
	f.Add(eventID(key, "ch", "EPOCH", 7), uint64(7))
	f.Add("EPOCH-07-"+eventID(key, "ch", "EPOCH", 7)[8:], uint64(0))
	f.Add("EPOCH--", uint64(18446744073709551615))
	f.Fuzz(func(t *testing.T, id string, seq uint64) {
		if got, ok := parseEventID(key, "ch", "EPOCH", id); ok && id != eventID(key, "ch", "EPOCH", got) {
			t.Fatalf("%q accepted as seq %d, whose id is %q", id, got, eventID(key, "ch", "EPOCH", got))
		}
		made := eventID(key, "ch", "EPOCH", seq)
		if got, ok := parseEventID(key, "ch", "EPOCH", made); !ok || got != seq {
			t.Fatalf("%q parses as %d, %v; want %d", made, got, ok, seq)
		}
		if _, ok := parseEventID(key, "other", "EPOCH", made); ok {
			t.Fatalf("%q accepted for another channel", made)
		}
		if _, ok := parseEventID(key, "ch", "EPOCH2", made); ok {
			t.Fatalf("%q accepted for another epoch", made)
		}
	})
}

// FuzzIssuedName: issuedName accepts a name only when its tag is the one
// issueName makes for its random part, and says the kind it was made with.
func FuzzIssuedName(f *testing.F) {
	key := []byte("0123456789abcdef0123456789abcdef")
	f.Add(issueName(key, false))
	f.Add(issueName(key, true))
	f.Add("AAAAAAAAAAAAAAAAAAAAAAAA")
	f.Add("my-channel")
	f.Fuzz(func(t *testing.T, name string) {
		issued, withToken := issuedName(key, name)
		if !issued {
			return
		}
		kind := kindOpen
		if withToken {
			kind = kindToken
		}
		if len(name) != nameRandLen+nameTagLen || name[nameRandLen:] != mac(key, nameTagLen, "channel", kind, name[:nameRandLen]) {
			t.Fatalf("%q accepted (token %v) without its tag", name, withToken)
		}
	})
}
