package bench

import (
	"context"

	"forgehooks.dev/forgehooks/payloads"
	"forgehooks.dev/forgehooks/webhooks"
)

// RegisterEveryEvent registers a typed handler for every event through its
// On…Event helper, as a bot that handles many events does, so that a receiver
// built on it pays for dispatch among all of them, not among one: push for
// push deliveries, and for every other event a handler that returns nil. The
// list is written from payloads/register.go; TestRegisterEveryEvent fails
// when the schema has an event it leaves out.
func RegisterEveryEvent(wh *webhooks.Webhooks, push func(context.Context, payloads.Event[*payloads.PushEvent]) error) {
	payloads.OnBranchProtectionConfigurationEvent(wh, ignore)
	payloads.OnBranchProtectionRuleEvent(wh, ignore)
	payloads.OnCheckRunEvent(wh, ignore)
	payloads.OnCheckSuiteEvent(wh, ignore)
	payloads.OnCodeScanningAlertEvent(wh, ignore)
	payloads.OnCommitCommentEvent(wh, ignore)
	payloads.OnCreateEvent(wh, ignore)
	payloads.OnCustomPropertyEvent(wh, ignore)
	payloads.OnCustomPropertyValuesEvent(wh, ignore)
	payloads.OnDeleteEvent(wh, ignore)
	payloads.OnDependabotAlertEvent(wh, ignore)
	payloads.OnDeployKeyEvent(wh, ignore)
	payloads.OnDeploymentEvent(wh, ignore)
	payloads.OnDeploymentProtectionRuleEvent(wh, ignore)
	payloads.OnDeploymentReviewEvent(wh, ignore)
	payloads.OnDeploymentStatusEvent(wh, ignore)
	payloads.OnDiscussionEvent(wh, ignore)
	payloads.OnDiscussionCommentEvent(wh, ignore)
	payloads.OnDismissalRequestDependabotEvent(wh, ignore)
	payloads.OnForkEvent(wh, ignore)
	payloads.OnGithubAppAuthorizationEvent(wh, ignore)
	payloads.OnGollumEvent(wh, ignore)
	payloads.OnInstallationEvent(wh, ignore)
	payloads.OnInstallationRepositoriesEvent(wh, ignore)
	payloads.OnInstallationTargetEvent(wh, ignore)
	payloads.OnIssueCommentEvent(wh, ignore)
	payloads.OnIssueDependenciesEvent(wh, ignore)
	payloads.OnIssueRelatesToEvent(wh, ignore)
	payloads.OnIssuesEvent(wh, ignore)
	payloads.OnLabelEvent(wh, ignore)
	payloads.OnMarketplacePurchaseEvent(wh, ignore)
	payloads.OnMemberEvent(wh, ignore)
	payloads.OnMembershipEvent(wh, ignore)
	payloads.OnMergeGroupEvent(wh, ignore)
	payloads.OnMetaEvent(wh, ignore)
	payloads.OnMilestoneEvent(wh, ignore)
	payloads.OnOrgBlockEvent(wh, ignore)
	payloads.OnOrganizationEvent(wh, ignore)
	payloads.OnPackageEvent(wh, ignore)
	payloads.OnPageBuildEvent(wh, ignore)
	payloads.OnPersonalAccessTokenRequestEvent(wh, ignore)
	payloads.OnPingEvent(wh, ignore)
	payloads.OnProjectEvent(wh, ignore)
	payloads.OnProjectCardEvent(wh, ignore)
	payloads.OnProjectColumnEvent(wh, ignore)
	payloads.OnProjectsV2Event(wh, ignore)
	payloads.OnProjectsV2ItemEvent(wh, ignore)
	payloads.OnProjectsV2StatusUpdateEvent(wh, ignore)
	payloads.OnPublicEvent(wh, ignore)
	payloads.OnPullRequestEvent(wh, ignore)
	payloads.OnPullRequestReviewEvent(wh, ignore)
	payloads.OnPullRequestReviewCommentEvent(wh, ignore)
	payloads.OnPullRequestReviewThreadEvent(wh, ignore)
	payloads.OnPushEvent(wh, push)
	payloads.OnRegistryPackageEvent(wh, ignore)
	payloads.OnReleaseEvent(wh, ignore)
	payloads.OnRepositoryEvent(wh, ignore)
	payloads.OnRepositoryAdvisoryEvent(wh, ignore)
	payloads.OnRepositoryDispatchEvent(wh, ignore)
	payloads.OnRepositoryImportEvent(wh, ignore)
	payloads.OnRepositoryRulesetEvent(wh, ignore)
	payloads.OnRepositoryVulnerabilityAlertEvent(wh, ignore)
	payloads.OnSecretScanningAlertEvent(wh, ignore)
	payloads.OnSecretScanningAlertLocationEvent(wh, ignore)
	payloads.OnSecretScanningScanEvent(wh, ignore)
	payloads.OnSecurityAdvisoryEvent(wh, ignore)
	payloads.OnSecurityAndAnalysisEvent(wh, ignore)
	payloads.OnSponsorshipEvent(wh, ignore)
	payloads.OnStarEvent(wh, ignore)
	payloads.OnStatusEvent(wh, ignore)
	payloads.OnSubIssuesEvent(wh, ignore)
	payloads.OnTeamEvent(wh, ignore)
	payloads.OnTeamAddEvent(wh, ignore)
	payloads.OnWatchEvent(wh, ignore)
	payloads.OnWorkflowDispatchEvent(wh, ignore)
	payloads.OnWorkflowJobEvent(wh, ignore)
	payloads.OnWorkflowRunEvent(wh, ignore)
}

// ignore is the handler of every event but push: it does nothing with the
// value its helper decoded.
func ignore[T any](context.Context, payloads.Event[T]) error { return nil }
