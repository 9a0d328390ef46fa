// Package bench compares forgehooks with other Go webhook libraries and with
// the floors no receiver can go below (an HMAC over the body, a JSON scan), on
// the forge's public example payloads.
//
// It is its own module so that forgehooks never depends on a peer library. Its
// benchmarks are in bench_test.go; `make bench-peers` in the repository root runs
// them and writes the table of README.md. The load tool is cmd/load.
package bench
