package samplegen

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	genmodel "forgehooks.dev/forgehooks/gen/model"
)

// small is a schema with one event of each shape the generator handles.
const smallEvents = `source: {package: p, version: "1", file: f, sha256: "00"}
events:
  - name: loop
    type: LoopEvent
  - name: ping
    type: PingEvent
  - name: thing
    actions:
      - name: made
        type: ThingMadeEvent
`

const smallTypes = `types:
  - name: Color
    kind: enum
    values: [{value: red}, {value: green}]
  - name: Level
    kind: enum
    base: int64
    values: [{value: "1"}, {value: "2"}]
  - name: LoopEvent
    kind: struct
    fields:
      - {json: next, type: LoopEvent, required: true}
  - name: Owner
    kind: union
    variants:
      - {type: User, match: {json: object, has: [login]}}
      - {type: Team, match: {json: object, equals: {type: team}}}
  - name: PingEvent
    kind: struct
    fields:
      - {json: zen, type: string, required: true}
      - {json: hook_url, type: string, required: true}
      - {json: optional, type: string}
  - name: Team
    kind: struct
    fields:
      - {json: type, type: string}
      - {json: slug, type: string, required: true}
  - name: ThingMadeEvent
    kind: struct
    fields:
      - {json: action, type: string, required: true}
      - {json: color, type: Color, required: true}
      - {json: level, type: Level, required: true}
      - {json: at, type: timestamp, required: true}
      - {json: tags, type: "map[string][]int64", required: true}
      - {json: owner, type: Owner, required: true}
      - {json: count, type: float64, required: true, nullable: true}
      - {json: extra, type: raw, required: true}
      - {json: flag, type: bool}
  - name: User
    kind: struct
    fields:
      - {json: login, type: string}
      - {json: id, type: int64, required: true}
`

func smallSchema(t *testing.T) *genmodel.Schema {
	t.Helper()
	s, err := genmodel.Parse("small", []byte(smallEvents), []byte(smallTypes), nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestPayload(t *testing.T) {
	s := smallSchema(t)
	for _, tc := range []struct {
		name    string
		check   func(t *testing.T, v map[string]any)
		wantErr string
	}{
		{name: "thing.made", check: func(t *testing.T, v map[string]any) {
			if v["action"] != "made" {
				t.Errorf("action %v", v["action"])
			}
			if c := v["color"]; c != "red" && c != "green" {
				t.Errorf("color %v", c)
			}
			if l, ok := v["level"].(float64); !ok || l != 1 && l != 2 {
				t.Errorf("level %v, want the number 1 or 2", v["level"])
			}
			if at, _ := v["at"].(string); len(at) != len("2026-01-01T12:00:00Z") || !strings.HasSuffix(at, "Z") {
				t.Errorf("at %v", v["at"])
			}
			if tags, _ := v["tags"].(map[string]any); len(tags) != 1 {
				t.Errorf("tags %v", v["tags"])
			}
			owner, _ := v["owner"].(map[string]any)
			_, user := owner["login"]
			team := owner["type"] == "team" && owner["slug"] != nil
			if user == team {
				t.Errorf("owner %v matches neither variant, or both", owner)
			}
			if _, ok := v["flag"]; ok {
				t.Error("an optional member was written")
			}
		}},
		{name: "ping", check: func(t *testing.T, v map[string]any) {
			if !strings.HasPrefix(v["hook_url"].(string), "https://forge.example/hook/") {
				t.Errorf("hook_url %v", v["hook_url"])
			}
			if _, ok := v["action"]; ok {
				t.Error("an event without actions got one")
			}
		}},
		{name: "thing", wantErr: "has actions"},
		{name: "thing.gone", wantErr: "no such event"},
		{name: "nope", wantErr: "no such event"},
		{name: "loop", wantErr: "nested more than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Payload(s, tc.name, 7)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var v map[string]any
			if err := json.Unmarshal(b, &v); err != nil {
				t.Fatalf("%v: %s", err, b)
			}
			tc.check(t, v)
		})
	}
	if _, err := Payload(s, "nope", 1); !errors.Is(err, ErrUnknownName) {
		t.Errorf("unknown name: %v, want ErrUnknownName", err)
	}
}

// TestSeeded: the same seed gives the same bytes; the seeds together reach
// every enum value and union variant.
func TestSeeded(t *testing.T) {
	s := smallSchema(t)
	a, _ := Payload(s, "thing.made", 1)
	b, _ := Payload(s, "thing.made", 1)
	if !bytes.Equal(a, b) {
		t.Fatalf("seed 1 twice:\n%s\n%s", a, b)
	}
	seen := map[string]bool{}
	for seed := uint64(0); seed < 64; seed++ {
		p, err := Payload(s, "thing.made", seed)
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			Color string         `json:"color"`
			Owner map[string]any `json:"owner"`
		}
		if err := json.Unmarshal(p, &v); err != nil {
			t.Fatal(err)
		}
		seen[v.Color] = true
		if _, ok := v.Owner["login"]; ok {
			seen["user"] = true
		} else {
			seen["team"] = true
		}
	}
	for _, want := range []string{"red", "green", "user", "team"} {
		if !seen[want] {
			t.Errorf("64 seeds never gave %s", want)
		}
	}
}

// TestCommittedSchema: every name of the committed schema has a sample.
func TestCommittedSchema(t *testing.T) {
	s, err := genmodel.Load(filepath.Join("..", "..", "schema"))
	if err != nil {
		t.Fatal(err)
	}
	names := Names(s)
	if len(names) == 0 {
		t.Fatal("no names")
	}
	for _, name := range names {
		b, err := Payload(s, name, 44)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !json.Valid(b) {
			t.Errorf("%s: invalid JSON", name)
		}
	}
	if got := Names(smallSchema(t)); !reflect.DeepEqual(got, []string{"loop", "ping", "thing.made"}) {
		t.Errorf("Names %v", got)
	}
}
