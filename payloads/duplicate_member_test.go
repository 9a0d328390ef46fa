package payloads_test

import (
	"testing"

	"forgehooks.dev/forgehooks/payloads"
)

// TestDuplicateStructMemberReplaces: when a struct-valued member comes twice,
// the last occurrence replaces the first whole (nothing of the first is
// merged in), nested or at the top, as the last of duplicate keys counts
// everywhere else; and UnmarshalJSON into a value that holds an earlier
// decode keeps nothing of it.
func TestDuplicateStructMemberReplaces(t *testing.T) {
	body := `{"ref":"refs/heads/main","repository":{"id":1,"name":"first","owner":{"login":"a"},"topics":["x"]},` +
		`"pusher":{"name":"p","email":"e"},"repository":{"id":2,"full_name":"o/second"},"pusher":{"name":"q"}}`
	p, err := payloads.Parse("push", []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	push := p.(*payloads.PushEvent)
	r := push.Repository
	if r.ID != 2 || r.FullName != "o/second" || r.Name != "" || r.Owner != nil || r.Topics != nil {
		t.Errorf("repository = id %d, full_name %q, name %q, owner %v, topics %v; want only the second's", r.ID, r.FullName, r.Name, r.Owner, r.Topics)
	}
	if push.Pusher.Name != "q" || push.Pusher.Email != nil {
		t.Errorf("pusher = %q, %v; want only the second's", push.Pusher.Name, push.Pusher.Email)
	}
	out, err := push.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var again payloads.PushEvent
	if err := again.UnmarshalJSON(out); err != nil {
		t.Fatal(err)
	}
	if got, _ := again.MarshalJSON(); string(got) != string(out) {
		t.Errorf("round trip: %s, want %s", got, out)
	}

	// UnmarshalJSON into the value decoded above: nothing of it stays.
	if err := push.UnmarshalJSON([]byte(`{"ref":"refs/tags/v1"}`)); err != nil {
		t.Fatal(err)
	}
	if push.Ref != "refs/tags/v1" || push.Repository.ID != 0 || push.Repository.FullName != "" || push.Pusher.Name != "" {
		t.Errorf("after a second UnmarshalJSON: %+v", push)
	}
	if got, _ := push.MarshalJSON(); string(got) != `{"ref":"refs/tags/v1"}` {
		t.Errorf("after a second UnmarshalJSON, MarshalJSON = %s", got)
	}
}
