// Package promtext checks text in the Prometheus text exposition format,
// version 0.0.4, strictly, for the tests of the exporters of this module (package
// metrics and 'forgehooks serve --metrics'). It follows the format's
// specification, and is stricter where an exporter has no reason to differ:
// single spaces, no empty lines, every family typed before its samples, a
// family's samples together, no timestamps. It applies the rules of the types:
// a counter is non-negative and named _total; a histogram has, for each label
// set, buckets ascending by le ending with +Inf, cumulative counts, a _sum,
// and a _count equal to the +Inf bucket.
package promtext

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

var (
	reMetricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	reLabelName  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// sample is one parsed sample line.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// Exposition is what a valid text holds.
type Exposition struct {
	// Types maps each family's name to its type ("counter", "histogram", ...).
	Types map[string]string
	// Samples maps each sample's ID to its value.
	Samples map[string]float64
}

// Value returns the value of the sample name with labels given as name and
// value pairs, and whether there is one.
func (e *Exposition) Value(name string, labels ...string) (float64, bool) {
	l := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		l[labels[i]] = labels[i+1]
	}
	v, ok := e.Samples[ID(name, l)]
	return v, ok
}

// ID is a sample's canonical id: name{a="x",b="y"}, labels sorted, values
// quoted as Go quotes strings.
func ID(name string, labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%q", k, labels[k])
	}
	return name + "{" + strings.Join(parts, ",") + "}"
}

// Parse checks text strictly and returns what it holds, or the first
// violation, with its line number.
func Parse(text string) (*Exposition, error) {
	e := &Exposition{Types: map[string]string{}, Samples: map[string]float64{}}
	if text == "" {
		return e, nil
	}
	if !strings.HasSuffix(text, "\n") {
		return nil, errors.New("the last line does not end with a newline")
	}
	if !utf8.ValidString(text) {
		return nil, errors.New("not UTF-8")
	}
	helps := map[string]bool{}
	done := map[string]bool{} // families whose samples have ended
	current := ""             // the family of the previous sample
	var family []sample
	finish := func() error {
		if current == "" {
			return nil
		}
		done[current] = true
		err := checkFamily(current, e.Types[current], family)
		family = nil
		return err
	}
	for n, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		n++
		if line == "" {
			return nil, fmt.Errorf("line %d is empty", n)
		}
		if strings.HasPrefix(line, "#") {
			f := strings.SplitN(line, " ", 4)
			if len(f) < 4 || f[0] != "#" || (f[1] != "HELP" && f[1] != "TYPE") {
				return nil, fmt.Errorf("line %d: comment is not '# HELP name text' or '# TYPE name type': %q", n, line)
			}
			name := f[2]
			if !reMetricName.MatchString(name) {
				return nil, fmt.Errorf("line %d: bad metric name %q", n, name)
			}
			if done[name] || current == name {
				return nil, fmt.Errorf("line %d: %s of %s after its samples", n, f[1], name)
			}
			switch f[1] {
			case "HELP":
				if helps[name] {
					return nil, fmt.Errorf("line %d: second HELP of %s", n, name)
				}
				helps[name] = true
				if err := checkEscapes(f[3], `\n`); err != nil {
					return nil, fmt.Errorf("line %d: HELP text: %v", n, err)
				}
			case "TYPE":
				if e.Types[name] != "" {
					return nil, fmt.Errorf("line %d: second TYPE of %s", n, name)
				}
				switch f[3] {
				case "counter", "gauge", "histogram", "summary", "untyped":
				default:
					return nil, fmt.Errorf("line %d: unknown type %q", n, f[3])
				}
				e.Types[name] = f[3]
			}
			continue
		}
		s, err := parseSample(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v: %q", n, err, line)
		}
		fam := familyOf(s.name, e.Types)
		if fam == "" {
			return nil, fmt.Errorf("line %d: sample of %s before any TYPE of its family", n, s.name)
		}
		if fam != current {
			if err := finish(); err != nil {
				return nil, err
			}
			if done[fam] {
				return nil, fmt.Errorf("line %d: samples of %s are not together", n, fam)
			}
			current = fam
		}
		k := ID(s.name, s.labels)
		if _, dup := e.Samples[k]; dup {
			return nil, fmt.Errorf("line %d: series %s twice", n, k)
		}
		e.Samples[k] = s.value
		family = append(family, s)
	}
	if err := finish(); err != nil {
		return nil, err
	}
	return e, nil
}

// familyOf is the family a sample name belongs to: itself, or for a histogram
// the name without _bucket, _sum or _count.
func familyOf(name string, types map[string]string) string {
	if types[name] != "" && types[name] != "histogram" {
		return name
	}
	for _, suf := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suf); ok && types[base] == "histogram" {
			return base
		}
	}
	return ""
}

// parseSample parses `name{labels} value`, with no timestamp.
func parseSample(line string) (sample, error) {
	s := sample{labels: map[string]string{}}
	i := strings.IndexAny(line, "{ ")
	if i < 0 {
		return s, errors.New("no value")
	}
	s.name = line[:i]
	if !reMetricName.MatchString(s.name) {
		return s, fmt.Errorf("bad metric name %q", s.name)
	}
	rest := line[i:]
	if rest[0] == '{' {
		rest = rest[1:]
		for rest != "" && rest[0] != '}' {
			eq := strings.IndexByte(rest, '=')
			if eq < 0 {
				return s, errors.New("label without =")
			}
			name := rest[:eq]
			if !reLabelName.MatchString(name) || strings.HasPrefix(name, "__") {
				return s, fmt.Errorf("bad label name %q", name)
			}
			if _, dup := s.labels[name]; dup {
				return s, fmt.Errorf("label %s twice", name)
			}
			rest = rest[eq+1:]
			if rest == "" || rest[0] != '"' {
				return s, fmt.Errorf("value of label %s is not quoted", name)
			}
			var v strings.Builder
			j := 1
			for ; j < len(rest) && rest[j] != '"'; j++ {
				if rest[j] != '\\' {
					v.WriteByte(rest[j])
					continue
				}
				j++
				if j == len(rest) {
					return s, errors.New("escape at the end")
				}
				switch rest[j] {
				case '\\':
					v.WriteByte('\\')
				case '"':
					v.WriteByte('"')
				case 'n':
					v.WriteByte('\n')
				default:
					return s, fmt.Errorf(`bad escape \%c`, rest[j])
				}
			}
			if j == len(rest) {
				return s, errors.New("unterminated label value")
			}
			s.labels[name] = v.String()
			rest = rest[j+1:]
			if strings.HasPrefix(rest, ",") {
				rest = rest[1:]
			} else if !strings.HasPrefix(rest, "}") {
				return s, errors.New("labels not separated by ,")
			}
		}
		if rest == "" {
			return s, errors.New("unterminated label set")
		}
		rest = rest[1:]
	}
	value, ok := strings.CutPrefix(rest, " ")
	if !ok || value == "" || strings.ContainsAny(value, " \t") {
		return s, errors.New("not one space and a value (timestamps are not written)")
	}
	switch value {
	case "+Inf":
		s.value = math.Inf(1)
	case "-Inf":
		s.value = math.Inf(-1)
	case "NaN":
		s.value = math.NaN()
	default:
		f, err := strconv.ParseFloat(value, 64)
		if err != nil || strings.ContainsAny(value, "_xXpP") || strings.EqualFold(value, "inf") || strings.EqualFold(value, "nan") {
			return s, fmt.Errorf("bad value %q", value)
		}
		s.value = f
	}
	return s, nil
}

// checkEscapes checks that every backslash of text starts one of allowed or \\.
func checkEscapes(text, allowed string) error {
	for i := 0; i < len(text); i++ {
		if text[i] != '\\' {
			continue
		}
		if i+1 == len(text) || (text[i+1] != '\\' && !strings.Contains(allowed, text[i:i+2])) {
			return fmt.Errorf("bad escape at %d", i)
		}
		i++
	}
	return nil
}

// checkFamily applies the rules of the family's type to its samples.
func checkFamily(name, typ string, samples []sample) error {
	switch typ {
	case "counter":
		if !strings.HasSuffix(name, "_total") {
			return fmt.Errorf("counter %s is not named _total", name)
		}
		for _, s := range samples {
			if s.value < 0 || math.IsNaN(s.value) {
				return fmt.Errorf("counter %s has value %v", ID(s.name, s.labels), s.value)
			}
		}
	case "histogram":
		type hist struct {
			les     []float64
			counts  []float64
			sum     *float64
			count   *float64
			ordered bool
		}
		byLabels := map[string]*hist{}
		var order []string
		for _, s := range samples {
			labels := maps.Clone(s.labels)
			le, hasLE := labels["le"]
			delete(labels, "le")
			k := ID("", labels)
			h := byLabels[k]
			if h == nil {
				h = &hist{}
				byLabels[k] = h
				order = append(order, k)
			}
			switch {
			case s.name == name+"_bucket":
				if !hasLE {
					return fmt.Errorf("%s without le", ID(s.name, s.labels))
				}
				if h.sum != nil || h.count != nil {
					return fmt.Errorf("%s: bucket after _sum or _count", ID(s.name, s.labels))
				}
				v, err := strconv.ParseFloat(le, 64)
				if le == "+Inf" {
					v, err = math.Inf(1), nil
				}
				if err != nil || math.IsNaN(v) {
					return fmt.Errorf("%s: bad le %q", ID(s.name, s.labels), le)
				}
				if n := len(h.les); n > 0 && v <= h.les[n-1] {
					return fmt.Errorf("%s: le not ascending", ID(s.name, s.labels))
				}
				if n := len(h.counts); n > 0 && s.value < h.counts[n-1] {
					return fmt.Errorf("%s: bucket counts are not cumulative", ID(s.name, s.labels))
				}
				h.les = append(h.les, v)
				h.counts = append(h.counts, s.value)
			case hasLE:
				return fmt.Errorf("%s has le", ID(s.name, s.labels))
			case s.name == name+"_sum":
				h.sum = &s.value
			case s.name == name+"_count":
				h.count = &s.value
			}
		}
		for _, k := range order {
			h := byLabels[k]
			n := len(h.les)
			switch {
			case n == 0 || !math.IsInf(h.les[n-1], 1):
				return fmt.Errorf("%s%s: no +Inf bucket", name, k)
			case h.sum == nil || h.count == nil:
				return fmt.Errorf("%s%s: no _sum or no _count", name, k)
			case *h.count != h.counts[n-1]:
				return fmt.Errorf("%s%s: _count %v is not the +Inf bucket's %v", name, k, *h.count, h.counts[n-1])
			case *h.sum < 0:
				return fmt.Errorf("%s%s: negative _sum", name, k)
			}
		}
	}
	return nil
}
