package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// printRecords prints to stderr the messages each stream of the closed
// store in dir holds (the inbox's deliveries, its status and dedupe
// records: how many records the deliveries cost), for -records. bin names
// the receiver that wrote them.
func printRecords(bin, dir string) {
	counts, err := streamCounts(dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "load: counting the records of %s: %v\n", bin, err)
		return
	}
	fmt.Fprintf(os.Stderr, "load: %s stored: %s\n", bin, strings.Join(counts, ", "))
}

// streamCounts starts a server on the store in dir and reads each stream's
// message count.
func streamCounts(dir string) ([]string, error) {
	ns, err := server.NewServer(&server.Options{
		ServerName: "forgehooks-load-records", JetStream: true, StoreDir: dir,
		DontListen: true, NoSigs: true, NoLog: true,
	})
	if err != nil {
		return nil, err
	}
	ns.Start()
	defer func() { ns.Shutdown(); ns.WaitForShutdown() }()
	if !ns.ReadyForConnections(30 * time.Second) {
		return nil, errors.New("the server did not start")
	}
	nc, err := nats.Connect("", nats.InProcessServer(ns))
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out []string
	list := js.ListStreams(ctx)
	for info := range list.Info() {
		out = append(out, fmt.Sprintf("%s %d", info.Config.Name, info.State.Msgs))
	}
	return out, list.Err()
}
