package inbox

import (
	"errors"
	"fmt"
	"net/url"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// maxDefaultReplicas caps the replicas Open chooses in a cluster: three
// hold a delivery through the loss of one server; more only cost writes.
const maxDefaultReplicas = 3

// clusterReplicas is the replicas Open chooses for a connection to NATS
// servers: 1 for a server in no cluster, else the cluster's servers that
// the connection knows of (those given and those the cluster told it of),
// at most maxDefaultReplicas.
func clusterReplicas(nc *nats.Conn) int {
	if nc.ConnectedClusterName() == "" {
		return 1
	}
	return min(max(clusterSize(nc), 1), maxDefaultReplicas)
}

// clusterSize counts the distinct servers of the connection's pool.
func clusterSize(nc *nats.Conn) int {
	seen := map[string]bool{}
	for _, s := range nc.Servers() {
		if u, err := url.Parse(s); err == nil {
			seen[u.Host] = true
		}
	}
	return len(seen)
}

// ReplicasError is Open's error when the NATS servers cannot hold the
// inbox's streams with Replicas replicas: a server that is not in a cluster
// holds one, a cluster at most as many as it has servers, and a stream
// made before keeps its own.
type ReplicasError struct {
	// Replicas is the number asked for; Chosen says that Open chose it
	// (Options.Replicas was zero).
	Replicas int
	Chosen   bool
	// Clustered says whether the server reached is in a cluster.
	Clustered bool
	// Err is the servers' refusal.
	Err error
}

// Error says how many replicas were asked for, where they came from, and
// what the servers said.
func (e *ReplicasError) Error() string {
	from := "Options.Replicas"
	if e.Chosen {
		from = "chosen for the cluster"
	}
	where := "the NATS server is not in a cluster: it holds 1 replica"
	if e.Clustered {
		where = "the NATS cluster cannot place that many (fewer servers with JetStream, or streams made before with other replicas)"
	}
	return fmt.Sprintf("inbox: streams of %d replicas (%s): %s: %v", e.Replicas, from, where, e.Err)
}

// Unwrap returns the servers' refusal.
func (e *ReplicasError) Unwrap() error { return e.Err }

// replicaRefusals are the JetStream API errors that say the servers cannot
// hold streams of the replicas asked for.
var replicaRefusals = map[jetstream.ErrorCode]bool{
	10074: true, // replicas > 1 not supported in non-clustered mode
	10023: true, // insufficient resources
	10005: true, // no suitable peers for placement
	10061: true, // replicas configuration can not be updated
}

// replicasError returns err as a *ReplicasError when the servers refused
// the replicas asked for, else err.
func replicasError(err error, replicas int, chosen bool, nc *nats.Conn) error {
	var api *jetstream.APIError
	if !errors.As(err, &api) || !replicaRefusals[api.ErrorCode] {
		return err
	}
	return &ReplicasError{Replicas: replicas, Chosen: chosen, Clustered: nc != nil && nc.ConnectedClusterName() != "", Err: err}
}
