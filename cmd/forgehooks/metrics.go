package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"forgehooks.dev/forgehooks/metrics"
)

// metricsServer serves serve's Prometheus metrics on an address of their own,
// so that the webhook address does not expose them.
type metricsServer struct {
	*metrics.Metrics
	srv *http.Server
}

// errMetricsAddr is a --metrics value that is not HOST:PORT: a usage error.
var errMetricsAddr = errors.New("bad --metrics address")

// startMetrics listens on addr and serves GET /metrics there until close.
func startMetrics(addr string, log *slog.Logger) (*metricsServer, error) {
	_, port, err := net.SplitHostPort(addr)
	if err == nil {
		_, err = strconv.ParseUint(port, 10, 16)
	}
	if err != nil {
		return nil, fmt.Errorf("%w %q: want HOST:PORT, such as 127.0.0.1:9090", errMetricsAddr, addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %s for --metrics: %v (choose another address)", addr, err)
	}
	ms := &metricsServer{Metrics: metrics.New(metrics.Options{})}
	mux := http.NewServeMux()
	mux.Handle("/metrics", ms.Metrics)
	ms.srv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		WriteTimeout:      30 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	go ms.srv.Serve(ln)
	log.Info("forgehooks serve: serving metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	return ms, nil
}

// close stops the server, letting a scrape in progress finish.
func (ms *metricsServer) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ms.srv.Shutdown(ctx)
}
