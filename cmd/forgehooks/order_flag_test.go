package main

import (
	"strings"
	"testing"

	"forgehooks.dev/forgehooks/webhooks"
)

// TestOrderByFlag: serve's --order-by names a built-in order of the inbox;
// anything else, or no inbox, is a usage error.
func TestOrderByFlag(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		value   string
		inbox   bool
		wantErr string
		key     string // the key of a pull_request delivery
	}{
		{"repository", true, "", "repository:42"},
		{"installation", true, "", "installation:9"},
		{"subject", true, "", "issue:42#3"},
		{"", true, "", ""},
		{"sender", true, "use repository, installation or subject", ""},
		{"subject", false, "needs --inbox or --nats", ""},
	} {
		f := &inboxFlags{orderBy: tt.value}
		if tt.inbox {
			f.dir = t.TempDir()
		}
		o, err := f.options()
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("--order-by %q (inbox %v): error %v, want %q", tt.value, tt.inbox, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("--order-by %q: %v", tt.value, err)
			continue
		}
		d := webhooks.Delivery{Payload: []byte(`{"pull_request":{"id":7,"number":3},"repository":{"id":42},"installation":{"id":9}}`)}
		switch {
		case tt.key == "" && o.OrderBy != nil:
			t.Errorf("--order-by %q: an order", tt.value)
		case tt.key != "" && (o.OrderBy == nil || o.OrderBy(d) != tt.key):
			t.Errorf("--order-by %q: not the order of %s", tt.value, tt.key)
		}
	}
	if code, _, errOut := runCmd(t, "", nil, "serve", "--secret", testSecret, "--inbox", t.TempDir(), "--order-by", "sender"); code != exitUsage || !strings.Contains(errOut, "--order-by") {
		t.Errorf("serve --order-by sender: %d %s", code, errOut)
	}
}
