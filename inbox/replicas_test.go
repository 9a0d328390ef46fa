package inbox

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// TestDefaultReplicas: without Options.Replicas, an inbox on a NATS server
// in no cluster makes its streams with 1 replica, and one on a 3-node
// cluster, given the URL of one node only, with 3; 3 asked of the server in
// no cluster is a *ReplicasError that says so.
func TestDefaultReplicas(t *testing.T) {
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	defer ns.Shutdown()
	if !ns.ReadyForConnections(30 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	ctx := context.Background()
	in, err := Open(ctx, Options{URLs: []string{ns.ClientURL()}, Key: testKey, Name: "PLAIN", Logger: quiet(t)})
	if err != nil {
		t.Fatalf("Open on a server in no cluster, no Replicas: %v", err)
	}
	st, err := in.js.Stream(ctx, "PLAIN_INBOX")
	if err != nil || in.Replicas() != 1 || st.CachedInfo().Config.Replicas != 1 {
		t.Errorf("replicas %d, stream %v (%v); want 1", in.Replicas(), st, err)
	}
	in.Close(ctx)

	_, err = Open(ctx, Options{URLs: []string{ns.ClientURL()}, Key: testKey, Name: "PLAIN3", Replicas: 3, Logger: quiet(t)})
	var re *ReplicasError
	if !errors.As(err, &re) || re.Replicas != 3 || re.Chosen || re.Clustered {
		t.Errorf("Open with 3 replicas on a server in no cluster: %v (%+v)", err, re)
	}

	if testing.Short() {
		return
	}
	cl := sharedCluster(t)
	cin := openClusterInbox(t, cl.urls()[:1], Options{Name: "REPLICAS"})
	if cin.Replicas() != 3 {
		t.Errorf("on a 3-node cluster: replicas %d, want 3", cin.Replicas())
	}
}
