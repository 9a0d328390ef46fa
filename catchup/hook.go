package catchup

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// Hook names the hook whose delivery log is read: the app's hook, a
// repository's or an organization's. The zero Hook is invalid; make one with
// [AppHook], [RepoHook] or [OrgHook].
type Hook struct {
	kind  hookKind
	owner string // repository owner, or organization
	repo  string
	id    int64
}

type hookKind int

const (
	noHook hookKind = iota
	appHook
	repoHook
	orgHook
)

// AppHook is the app's hook, authorized with an app JWT ([AppJWT]).
func AppHook() Hook { return Hook{kind: appHook} }

// RepoHook is hook hookID of repository owner/repo, authorized with a token.
func RepoHook(owner, repo string, hookID int64) Hook {
	return Hook{kind: repoHook, owner: owner, repo: repo, id: hookID}
}

// OrgHook is hook hookID of organization org, authorized with a token.
func OrgHook(org string, hookID int64) Hook { return Hook{kind: orgHook, owner: org, id: hookID} }

// ParseRepo splits "OWNER/REPO".
func ParseRepo(s string) (owner, repo string, err error) {
	owner, repo, ok := strings.Cut(s, "/")
	if !ok || owner == "" || repo == "" || strings.Contains(repo, "/") {
		return "", "", fmt.Errorf("repository %q: want OWNER/REPO", s)
	}
	return owner, repo, nil
}

// String describes the hook for messages: "app hook", "repository hook
// octo/site #7", "organization hook octo #9".
func (h Hook) String() string {
	switch h.kind {
	case appHook:
		return "app hook"
	case repoHook:
		return fmt.Sprintf("repository hook %s/%s #%d", h.owner, h.repo, h.id)
	case orgHook:
		return fmt.Sprintf("organization hook %s #%d", h.owner, h.id)
	}
	return "no hook"
}

// Key is the hook's name in a checkpoint store: "app", "repos/OWNER/REPO/hooks/ID"
// or "orgs/ORG/hooks/ID".
func (h Hook) Key() string { return strings.TrimPrefix(h.path(), "/") }

// path is the hook's REST path, with its segments escaped.
func (h Hook) path() string {
	id := strconv.FormatInt(h.id, 10)
	switch h.kind {
	case appHook:
		return "/app/hook"
	case repoHook:
		return "/repos/" + url.PathEscape(h.owner) + "/" + url.PathEscape(h.repo) + "/hooks/" + id
	case orgHook:
		return "/orgs/" + url.PathEscape(h.owner) + "/hooks/" + id
	}
	return ""
}

func (h Hook) validate() error {
	switch h.kind {
	case appHook:
		return nil
	case repoHook:
		if h.owner == "" || h.repo == "" {
			return errors.New("repository hook: owner and repository are required")
		}
	case orgHook:
		if h.owner == "" {
			return errors.New("organization hook: organization is required")
		}
	default:
		return errors.New("no hook: use AppHook, RepoHook or OrgHook")
	}
	if h.id <= 0 {
		return fmt.Errorf("%s: hook id must be positive", h)
	}
	return nil
}
