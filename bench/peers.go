package bench

import (
	"bytes"
	"net/http"

	playground "github.com/go-playground/webhooks/v6/github"
	gogithub "github.com/google/go-github/v75/github"
)

// PlaygroundEvents is every event go-playground/webhooks' github package parses:
// its Parse needs the list of events the caller accepts.
var PlaygroundEvents = []playground.Event{
	playground.CheckRunEvent, playground.CheckSuiteEvent, playground.CommitCommentEvent,
	playground.CreateEvent, playground.DeleteEvent, playground.DependabotAlertEvent,
	playground.DeployKeyEvent, playground.DeploymentEvent, playground.DeploymentStatusEvent,
	playground.ForkEvent, playground.GollumEvent, playground.InstallationEvent,
	playground.InstallationRepositoriesEvent, playground.IntegrationInstallationEvent,
	playground.IntegrationInstallationRepositoriesEvent, playground.IssueCommentEvent,
	playground.IssuesEvent, playground.LabelEvent, playground.MemberEvent,
	playground.MembershipEvent, playground.MilestoneEvent, playground.MetaEvent,
	playground.OrganizationEvent, playground.OrgBlockEvent, playground.PageBuildEvent,
	playground.PingEvent, playground.ProjectCardEvent, playground.ProjectColumnEvent,
	playground.ProjectEvent, playground.PublicEvent, playground.PullRequestEvent,
	playground.PullRequestReviewEvent, playground.PullRequestReviewCommentEvent,
	playground.PushEvent, playground.ReleaseEvent, playground.RepositoryEvent,
	playground.RepositoryVulnerabilityAlertEvent, playground.SecurityAdvisoryEvent,
	playground.StatusEvent, playground.TeamEvent, playground.TeamAddEvent,
	playground.WatchEvent, playground.WorkflowDispatchEvent, playground.WorkflowJobEvent,
	playground.WorkflowRunEvent, playground.GitHubAppAuthorizationEvent,
	playground.CodeScanningAlertEvent,
}

// GoGitHub verifies and parses d as go-github documents it.
func GoGitHub(d *Delivery, rd *bytes.Reader) (any, error) {
	rd.Reset(d.Body)
	body, err := gogithub.ValidatePayloadFromBody("application/json", rd, d.Signature, []byte(Secret))
	if err != nil {
		return nil, err
	}
	return gogithub.ParseWebHook(d.Event, body)
}

// Playground is a reusable request for go-playground/webhooks' Parse, which reads
// the delivery from an *http.Request.
type Playground struct {
	hook playground.Webhook
	req  *http.Request
	body resettable
}

// NewPlayground returns a Playground with Secret.
func NewPlayground() (*Playground, error) {
	hook, err := playground.New(playground.Options.Secret(Secret))
	if err != nil {
		return nil, err
	}
	p := &Playground{hook: *hook}
	p.req, _ = http.NewRequest(http.MethodPost, "/", &p.body)
	p.req.Header.Set("Content-Type", "application/json")
	return p, nil
}

// Parse verifies and parses d with go-playground/webhooks, its headers named
// as that library reads them.
func (p *Playground) Parse(d *Delivery) (any, error) {
	p.body.Reset(d.Body)
	p.req.Body = &p.body
	p.req.Header["X-Github-Event"] = []string{d.Event}
	p.req.Header["X-Hub-Signature-256"] = []string{d.Signature}
	return p.hook.Parse(p.req, PlaygroundEvents...)
}

// resettable is a request body that can be reset, so that a benchmark does not
// allocate a reader per delivery.
type resettable struct{ bytes.Reader }

func (*resettable) Close() error { return nil }

// Common returns the deliveries that both peers accept (known event, body that
// decodes into their structs), and the paths of the others.
func Common(all []Delivery) (common []Delivery, rejected []string, err error) {
	pg, err := NewPlayground()
	if err != nil {
		return nil, nil, err
	}
	rd := bytes.NewReader(nil)
	for i := range all {
		d := &all[i]
		_, e1 := GoGitHub(d, rd)
		_, e2 := pg.Parse(d)
		if e1 != nil || e2 != nil {
			rejected = append(rejected, d.Path)
			continue
		}
		common = append(common, *d)
	}
	return common, rejected, nil
}
