package goname

import (
	"slices"
	"testing"
)

func TestWords(t *testing.T) {
	tests := []struct {
		in          string
		words, tile []string
	}{
		{"node_id", []string{"node", "id"}, []string{"node", "id"}},
		{"pullRequest", []string{"pull", "Request"}, []string{"pull", "Request"}},
		{"HTMLParser", []string{"HTMLParser"}, []string{"HTML", "Parser"}},
		{"projects_v2_item", []string{"projects", "v2", "item"}, []string{"projects", "v2", "item"}},
		{"Webhook Issue-2.x", []string{"Webhook", "Issue", "2", "x"}, []string{"Webhook", "Issue", "2", "x"}},
		{"+1", []string{"1"}, []string{"1"}},
		{"", nil, nil},
	}
	for _, tt := range tests {
		if got := Words(tt.in); !slices.Equal(got, tt.words) {
			t.Errorf("Words(%q) = %q, want %q", tt.in, got, tt.words)
		}
		if got := TitleWords(tt.in); !slices.Equal(got, tt.tile) {
			t.Errorf("TitleWords(%q) = %q, want %q", tt.in, got, tt.tile)
		}
	}
}

func TestWord(t *testing.T) {
	for in, want := range map[string]string{"url": "URL", "ids": "IDs", "URLS": "URLs", "state": "State", "STATE": "State", "sha256": "SHA256", "": ""} {
		if got := Word(in); got != want {
			t.Errorf("Word(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Join(Words("html_url")); got != "HTMLURL" {
		t.Errorf("Join(Words(html_url)) = %q", got)
	}
}
