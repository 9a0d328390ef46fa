package inbox

import (
	"bytes"
	"testing"

	"forgehooks.dev/forgehooks/webhooks"
	"forgehooks.dev/forgehooks/webhookstest"
)

// TestBySubjectPullRequestConversation: with real sample payloads, a pull
// request's events, its reviews, review comments and threads, and a comment
// in its conversation get one BySubject key; an issue and its comments get
// another. The samples are the forge's (repository 186853002, issue #1,
// pull request #2); the forge's sample set has no comment on a pull
// request, so one is made from its issue comment the way the forge sends
// it: the issue is the pull request (number 2) and carries a pull_request
// member.
func TestBySubjectPullRequestConversation(t *testing.T) {
	comment := webhookstest.Payload("issue_comment.created")
	onPR := bytes.Replace(comment, []byte(`"number":1,`), []byte(`"number":2,"pull_request":{"url":"https://api.github.com/repos/Codertocat/Hello-World/pulls/2","html_url":"https://github.com/Codertocat/Hello-World/pull/2","diff_url":"https://github.com/Codertocat/Hello-World/pull/2.diff","patch_url":"https://github.com/Codertocat/Hello-World/pull/2.patch","merged_at":null},`), 1)
	if bytes.Equal(onPR, comment) {
		t.Fatal("the issue comment sample no longer has issue number 1: the test needs a new way to make the comment on the pull request")
	}
	key := func(name string, body []byte) string {
		t.Helper()
		d := webhooks.Delivery{Name: name, Payload: body}
		k := BySubject(d)
		// Enqueue finds the key in its own pass over the body: the same.
		in := &Inbox{opts: Options{OrderBy: BySubject}}
		g, err := in.scanBody(d)
		if err != nil || g.key != k {
			t.Errorf("%s: scanBody's key %q (%v), BySubject's %q", name, g.key, err, k)
		}
		return k
	}
	const pr, issue = "issue:186853002#2", "issue:186853002#1"
	tests := []struct {
		name string
		body []byte
		want string
	}{
		{"pull_request.synchronize", webhookstest.Payload("pull_request.synchronize"), pr},
		{"issue_comment.created on the pull request", onPR, pr},
		{"pull_request_review.submitted", webhookstest.Payload("pull_request_review.submitted"), pr},
		{"pull_request_review_comment.created", webhookstest.Payload("pull_request_review_comment.created"), pr},
		{"pull_request_review_thread.resolved", webhookstest.Payloads("pull_request_review_thread.resolved")[0], pr},
		{"issues.opened", webhookstest.Payload("issues.opened"), issue},
		{"issue_comment.created on the issue", comment, issue},
		{"push", webhookstest.Payload("push"), "repository:186853002"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := key(tt.name, tt.body); got != tt.want {
				t.Errorf("key %q, want %q", got, tt.want)
			}
		})
	}
}
