// Package expfmtcheck holds, in a test-only module of its own, the check of
// this module's Prometheus exporters against the Prometheus project's own text
// parser (github.com/prometheus/common/expfmt), which the SDK must not depend
// on: what the exporters write, it parses, with the values that the strict
// checker of package promtext finds; and what promtext accepts, it accepts.
package expfmtcheck
