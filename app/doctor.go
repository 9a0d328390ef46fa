package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"forgehooks.dev/forgehooks/payloads/names"
)

// Finding says whether deliveries of one registered name can reach the app:
// the forge sends an event to an app only when the app is subscribed to it
// and has a permission that lets it see it.
type Finding struct {
	// Name is the name as registered: "issues.opened", "push".
	Name string
	// Event is the event the forge sends it as: "issues", "push".
	Event string
	// Subscribed reports whether the app's events include Event, or the
	// forge sends Event to every app unasked (installation, ping…).
	Subscribed bool
	// Needs lists the permissions any one of which lets the app receive
	// Event ("checks"; "issues" or "pull_requests" for issue_comment), at
	// read level or above; nil when the forge needs none, or when the table
	// does not know the event (Note says so).
	Needs []string
	// Granted is the permission of Needs the app has, with its level
	// ("checks: read"); "" when it has none of them, or none is needed.
	Granted string
	// CanArrive reports whether a delivery of Name can ever reach the app
	// as it is configured: Subscribed, and Granted (or nothing needed).
	CanArrive bool
	// Problem says why it cannot, and what to change; "" when it can.
	Problem string
	// Note says what was not checked, or a quirk of the event.
	Note string
}

// String is the finding as one line: "ok  issues.opened (issues: write)" or
// "NO  check_run.completed: not subscribed to check_run; …".
func (f Finding) String() string {
	var b strings.Builder
	if f.CanArrive {
		b.WriteString("ok  " + f.Name)
		if f.Granted != "" {
			b.WriteString(" (" + f.Granted + ")")
		}
	} else {
		b.WriteString("NO  " + f.Name + ": " + f.Problem)
	}
	if f.Note != "" {
		b.WriteString(" [" + f.Note + "]")
	}
	return b.String()
}

// eventNeeds is the table of what lets an app receive each event: the
// repository or organization permissions, any one of which suffices at read
// level, from the forge's documentation of webhook events and payloads
// ("Availability" and "Webhook permissions required" of each event). An
// event absent from the table is checked for its subscription only.
var eventNeeds = map[string][]string{
	"branch_protection_configuration": {"administration"},
	"branch_protection_rule":          {"administration"},
	"check_run":                       {"checks"},
	"check_suite":                     {"checks"},
	"code_scanning_alert":             {"security_events"},
	"commit_comment":                  {"contents"},
	"create":                          {"contents"},
	"delete":                          {"contents"},
	"dependabot_alert":                {"vulnerability_alerts"},
	// Requests to dismiss a Dependabot alert (self-hosted 3.17+, ghec) come
	// with the alerts' own permission.
	"dismissal_request_dependabot": {"vulnerability_alerts"},
	"deploy_key":                   {"administration"},
	"deployment":                   {"deployments"},
	"deployment_protection_rule":   {"deployments"},
	"deployment_review":            {"actions"},
	"deployment_status":            {"deployments"},
	"discussion":                   {"discussions"},
	"discussion_comment":           {"discussions"},
	"fork":                         {"contents"},
	"gollum":                       {"contents"},
	// Comments on issues and on pull requests are both issue_comment: either
	// permission lets the app receive those on what it can see.
	"issue_comment":                  {"issues", "pull_requests"},
	"issues":                         {"issues"},
	"issue_dependencies":             {"issues"},
	"issue_relates_to":               {"issues"},
	"sub_issues":                     {"issues"},
	"label":                          {"metadata"},
	"member":                         {"members"},
	"membership":                     {"members"},
	"merge_group":                    {"merge_queues"},
	"milestone":                      {"issues", "pull_requests"},
	"org_block":                      {"organization_user_blocking"},
	"organization":                   {"members"},
	"package":                        {"packages"},
	"page_build":                     {"pages"},
	"personal_access_token_request":  {"organization_personal_access_token_requests"},
	"project":                        {"repository_projects", "organization_projects"},
	"project_card":                   {"repository_projects", "organization_projects"},
	"project_column":                 {"repository_projects", "organization_projects"},
	"projects_v2":                    {"organization_projects"},
	"projects_v2_item":               {"organization_projects"},
	"projects_v2_status_update":      {"organization_projects"},
	"public":                         {"metadata"},
	"pull_request":                   {"pull_requests"},
	"pull_request_review":            {"pull_requests"},
	"pull_request_review_comment":    {"pull_requests"},
	"pull_request_review_thread":     {"pull_requests"},
	"push":                           {"contents"},
	"registry_package":               {"packages"},
	"release":                        {"contents"},
	"repository":                     {"metadata"},
	"repository_advisory":            {"repository_advisories"},
	"repository_dispatch":            {"contents"},
	"repository_ruleset":             {"administration"},
	"repository_vulnerability_alert": {"vulnerability_alerts"},
	"secret_scanning_alert":          {"secret_scanning_alerts"},
	"secret_scanning_alert_location": {"secret_scanning_alerts"},
	"secret_scanning_scan":           {"secret_scanning_alerts"},
	"security_and_analysis":          {"administration"},
	"star":                           {"metadata"},
	"status":                         {"statuses"},
	"team":                           {"members"},
	"team_add":                       {"members"},
	"watch":                          {"metadata"},
	"workflow_dispatch":              {"contents"},
	"workflow_job":                   {"actions"},
	"workflow_run":                   {"actions"},
}

// unasked are the events the forge sends every app without a subscription
// or a permission: about the app's own installations and hook.
var unasked = map[string]bool{
	"github_app_authorization":  true,
	"installation":              true,
	"installation_repositories": true,
	"installation_target":       true,
	"meta":                      true,
	"ping":                      true,
}

// neverToApps are events the forge does not send to apps at all, whatever
// they are subscribed to: they go to repository, organization or
// sponsored-account hooks only.
var neverToApps = map[string]string{
	"marketplace_purchase": "sent to the app's Marketplace listing hook, not its app hook",
	"sponsorship":          "sent to a sponsored account's hooks only, never to an app",
}

// appInfo is what CheckSubscriptions reads of GET /app.
type appInfo struct {
	Slug        string            `json:"slug"`
	Events      []string          `json:"events"`
	Permissions map[string]string `json:"permissions"`
}

// CheckSubscriptions reads the app's subscriptions and permissions (GET
// /app, as the app) and returns one Finding per name, in the order given:
// whether the forge will ever send the app deliveries of that name. Names
// are "event" or "event.action", as (*webhooks.Webhooks).Names lists them;
// a name the forge's schema does not know cannot arrive. The error is for a
// failed request (the app's credentials, the network), never for a name
// that cannot arrive.
func (a *App) CheckSubscriptions(ctx context.Context, registered []string) ([]Finding, error) {
	info, err := a.getApp(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Finding, 0, len(registered))
	for _, name := range registered {
		out = append(out, check(info, name))
	}
	return out, nil
}

// check makes the Finding of name for an app described by info.
func check(info appInfo, name string) Finding {
	event, _, _ := strings.Cut(name, ".")
	f := Finding{Name: name, Event: event}
	switch why, never := neverToApps[event]; {
	case !names.IsKnown(name):
		f.Problem = fmt.Sprintf("%q is not an event or event.action the forge sends ('forgehooks events' lists them)", name)
		return f
	case never:
		f.Problem = why
		return f
	case unasked[event]:
		f.Subscribed, f.CanArrive = true, true
		f.Note = "sent to every app unasked"
		return f
	}
	f.Subscribed = slices.Contains(info.Events, event)
	needs, known := eventNeeds[event]
	f.Needs = slices.Clone(needs)
	for _, p := range needs {
		if level := info.Permissions[p]; level != "" && level != "none" {
			f.Granted = p + ": " + level
			break
		}
	}
	permitted := len(needs) == 0 || f.Granted != ""
	f.CanArrive = f.Subscribed && permitted
	var problems []string
	if !permitted {
		problems = append(problems, fmt.Sprintf("the app lacks the %s permission the forge requires to send %s", strings.Join(needs, " or "), event))
	}
	if !f.Subscribed {
		problems = append(problems, fmt.Sprintf("the app is not subscribed to the %s event", event))
	}
	if len(problems) > 0 {
		f.Problem = strings.Join(problems, "; ") + " (the app's settings: Permissions & events)"
	}
	if !known {
		f.Note = "no permission table entry for " + event + ": only the subscription was checked"
	}
	return f
}

// maxAppBody bounds the answer of GET /app read.
const maxAppBody = 1 << 20

// getApp reads GET /app as the app.
func (a *App) getApp(ctx context.Context) (appInfo, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.api.String()+"/app", nil)
	if err != nil {
		return appInfo{}, fmt.Errorf("app %s: %w", a.id, err)
	}
	res, err := (&http.Client{Transport: a.Transport()}).Do(req)
	if err != nil {
		return appInfo{}, fmt.Errorf("app %s: reading its settings (GET /app): %w", a.id, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxAppBody))
	if err != nil {
		return appInfo{}, fmt.Errorf("app %s: reading its settings (GET /app): %w", a.id, err)
	}
	if res.StatusCode != http.StatusOK {
		return appInfo{}, fmt.Errorf("app %s: reading its settings (GET /app): %s: %s", a.id, res.Status, errorMessage(body))
	}
	var info appInfo
	if err := json.Unmarshal(body, &info); err != nil {
		return appInfo{}, fmt.Errorf("app %s: reading its settings (GET /app): %w", a.id, err)
	}
	return info, nil
}
