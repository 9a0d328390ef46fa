package deliverylog

import (
	"context"
	"encoding/json"
	"testing"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/internal/corpus"
)

// TestNoteLikeEncodingJSON: the repository and sender of a delivery's
// log line, found by jsonscan.Lookup, are what decoding the payload with
// encoding/json into the struct serve used before gives, for every example
// payload and for the odd ones below. (On payloads a forge does not send, the
// two differ where a struct and a map decode differ: keys matched ignoring
// case, and a repeated member merged into the first; jsonscan's tests compare
// Lookup with encoding/json's map decode on any input.)
func TestNoteLikeEncodingJSON(t *testing.T) {
	bodies := [][]byte{
		[]byte(`{}`),
		[]byte(`{"repository":null,"sender":{"login":5}}`),
		[]byte(`{"repository":{"full_name":"a\u00e9\"b"},"sender":{"login":"x","login":"y"}}`),
		[]byte("{\"sender\":{\"login\":\"a\xffb\"}}"),
	}
	for _, ex := range corpus.All() {
		bodies = append(bodies, ex.Body)
	}
	for _, body := range bodies {
		ctx, info := With(context.Background())
		if err := Note(ctx, emitter.Event{ID: "1", Name: "x", Payload: body}); err != nil {
			t.Fatal(err)
		}
		var p struct {
			Repository *struct {
				FullName string `json:"full_name"`
			} `json:"repository"`
			Sender *struct {
				Login string `json:"login"`
			} `json:"sender"`
		}
		_ = json.Unmarshal(body, &p)
		var repo, user string
		if p.Repository != nil {
			repo = p.Repository.FullName
		}
		if p.Sender != nil {
			user = p.Sender.Login
		}
		if _, gotRepo, gotUser := info.Fields(); gotRepo != repo || gotUser != user {
			t.Errorf("%.60q: repository %q, sender %q; encoding/json: %q, %q", body, gotRepo, gotUser, repo, user)
		}
	}
}
