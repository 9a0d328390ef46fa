package lambda

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"forgehooks.dev/forgehooks/catchup"
)

// The environment variables CatchupFromEnv reads.
const (
	// EnvCatchupHook names the hook whose log catch-up reads: "app",
	// "repos/OWNER/REPO/hooks/ID" or "orgs/ORG/hooks/ID".
	EnvCatchupHook = "FORGE_CATCHUP_HOOK"
	// EnvToken is the token that reads a repository or organization hook's
	// log and asks for redeliveries.
	EnvToken = "FORGE_TOKEN"
	// EnvAppID is the app's id (or client id), for the app hook.
	EnvAppID = "FORGE_APP_ID"
	// EnvAppPrivateKey is the app's PEM private key itself (not a file
	// name: a function has no files of its own), for the app hook.
	EnvAppPrivateKey = "FORGE_APP_PRIVATE_KEY"
	// EnvAPIURL is the forge's REST API root; unset: catchup.DefaultAPIURL.
	EnvAPIURL = "FORGE_API_URL"
)

// CatchupFromEnv returns the catch-up options that getenv (os.Getenv, say)
// describes, for Options.Catchup: nil, and no error, when EnvCatchupHook is
// unset. The app hook authorizes with the app's JWT (EnvAppID and
// EnvAppPrivateKey), a repository or organization hook with EnvToken; a
// missing one is an error naming the variable. The options keep no
// checkpoints, as a function keeps no state.
func CatchupFromEnv(getenv func(string) string) (*catchup.Options, error) {
	spec := getenv(EnvCatchupHook)
	if spec == "" {
		return nil, nil
	}
	hook, err := parseHook(spec)
	if err != nil {
		return nil, err
	}
	co := &catchup.Options{APIURL: getenv(EnvAPIURL), Hook: hook}
	if spec == "app" {
		id, pem := getenv(EnvAppID), getenv(EnvAppPrivateKey)
		if id == "" || pem == "" {
			return nil, fmt.Errorf("lambda: %s=app needs %s and %s", EnvCatchupHook, EnvAppID, EnvAppPrivateKey)
		}
		key, err := catchup.ParsePrivateKey([]byte(pem))
		if err != nil {
			return nil, fmt.Errorf("lambda: %s: %w", EnvAppPrivateKey, err)
		}
		if co.Credentials, err = catchup.NewAppJWT(id, key); err != nil {
			return nil, fmt.Errorf("lambda: %w", err)
		}
		return co, nil
	}
	tok := getenv(EnvToken)
	if tok == "" {
		return nil, fmt.Errorf("lambda: %s=%s needs %s", EnvCatchupHook, spec, EnvToken)
	}
	co.Credentials = catchup.Token(tok)
	return co, nil
}

// parseHook reads "app", "repos/OWNER/REPO/hooks/ID" or "orgs/ORG/hooks/ID".
func parseHook(s string) (catchup.Hook, error) {
	p := strings.Split(s, "/")
	switch {
	case s == "app":
		return catchup.AppHook(), nil
	case len(p) == 5 && p[0] == "repos" && p[1] != "" && p[2] != "" && p[3] == "hooks":
		if id, err := strconv.ParseInt(p[4], 10, 64); err == nil && id > 0 {
			return catchup.RepoHook(p[1], p[2], id), nil
		}
	case len(p) == 4 && p[0] == "orgs" && p[1] != "" && p[2] == "hooks":
		if id, err := strconv.ParseInt(p[3], 10, 64); err == nil && id > 0 {
			return catchup.OrgHook(p[1], id), nil
		}
	}
	return catchup.Hook{}, fmt.Errorf("lambda: %s %q: %w", EnvCatchupHook, s, errors.New(`want "app", "repos/OWNER/REPO/hooks/ID" or "orgs/ORG/hooks/ID"`))
}
