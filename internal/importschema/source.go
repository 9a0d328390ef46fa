package importschema

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// The published spec this importer reads.
const (
	specPackage = "@octokit/openapi-webhooks"
	specDir     = "package/generated/"            // inside the package tarball: one file per variant
	mainVariant = "api.github.com"                // the variant schema/ is imported from
	specFile    = specDir + mainVariant + ".json" // the main variant's file
	recordName  = "source.yaml"                   // beside the compressed copies
)

// errChecksum reports content that does not match its record.
var errChecksum = errors.New("checksum mismatch")

// record says which published spec the compressed copy in schema/source is.
type record struct {
	Package       string `yaml:"package"`
	Version       string `yaml:"version"`
	File          string `yaml:"file"`
	SHA256        string `yaml:"sha256"`         // of the JSON file
	TarballSHA256 string `yaml:"tarball_sha256"` // of the npm package tarball
	// Variants are the package's other spec files (the forge's server variants),
	// each compressed beside the main one as NAME.json.gz.
	Variants []variantRecord `yaml:"variants,omitempty"`
	// Rest is the second source, the forge's REST description, whose webhooks
	// the first lacks join the import (withRest); nil: none.
	Rest *restRecord `yaml:"rest,omitempty"`
}

// variantRecord is one server variant's spec file.
type variantRecord struct {
	Name   string `yaml:"name"` // as the package names the file: "ghec", "ghes-3.19"
	File   string `yaml:"file"`
	SHA256 string `yaml:"sha256"` // of the JSON file
}

const recordHeader = "# The published webhook spec that schema/ is imported from. Written by\n" +
	"# `make schema VERSION=x` (cmd/importschema -fetch); do not edit by hand.\n"

func readRecord(path string) (*record, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r record
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&r); err != nil {
		return nil, yamlError(path, data, err)
	}
	if r.Package == "" || r.Version == "" || len(r.SHA256) != 64 {
		return nil, fmt.Errorf("%s: package, version and a sha256 are required", path)
	}
	return &r, nil
}

func encodeRecord(r *record) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(recordHeader)
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// readSpec reads the spec, gunzipping a ".gz" file, and checks it against the
// record when one is given.
func readSpec(path string, rec *record) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if data, err = io.ReadAll(zr); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	if rec != nil {
		if got := sha256Hex(data); got != rec.SHA256 {
			return nil, fmt.Errorf("%s: %w: sha256 %s, the record says %s", path, errChecksum, got, rec.SHA256)
		}
	}
	return data, nil
}

// gzipBytes compresses deterministically: no file name, no time, so the same JSON
// always gives the same bytes (with one Go version's compressor).
func gzipBytes(data []byte) ([]byte, error) {
	var b bytes.Buffer
	zw, err := gzip.NewWriterLevel(&b, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(data); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// extractFiles returns the files of a .tgz whose names satisfy keep.
func extractFiles(tgz []byte, keep func(string) bool) (map[string][]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(zr)
	out := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if keep(h.Name) {
			if out[h.Name], err = io.ReadAll(tr); err != nil {
				return nil, err
			}
		}
	}
}

// npmPack downloads a package version's tarball into dir and returns its path. A
// variable so that tests run without the network. npm's own message (such as
// "No matching version found") is part of the error.
var npmPack = func(pkg, version, dir string) (string, error) {
	cmd := exec.Command("npm", "pack", "--loglevel=error", pkg+"@"+version)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		var keep []string
		for _, l := range strings.Split(msg, "\n") {
			if !strings.Contains(l, "A complete log of this run") {
				keep = append(keep, strings.TrimSpace(l))
			}
		}
		if len(keep) > 0 && keep[0] != "" {
			return "", fmt.Errorf("npm pack %s@%s: %w: %s", pkg, version, err, strings.Join(keep, "; "))
		}
		return "", fmt.Errorf("npm pack %s@%s: %w", pkg, version, err)
	}
	lines := strings.Fields(strings.TrimSpace(string(out)))
	if len(lines) == 0 {
		return "", fmt.Errorf("npm pack %s@%s printed no file name", pkg, version)
	}
	return filepath.Join(dir, lines[len(lines)-1]), nil
}

// fetched is a downloaded package version, not yet written anywhere: its record
// and the compressed copies of its spec files by file name in schema/source.
type fetched struct {
	rec   *record
	files map[string][]byte // "api.github.com.json.gz" → gzip'd JSON
	specs map[string][]byte // variant name → JSON
}

// fetch downloads the given version (a number, or a tag such as "latest", resolved
// to the number the package says it is) via npm and checks it. Nothing is written:
// the caller writes the files once the import succeeded. Fetching the version old
// records must give its checksums: a registry that changed a published version is
// an error.
func fetch(version string, old *record) (*fetched, error) {
	tmp, err := os.MkdirTemp("", "importschema-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	tgzPath, err := npmPack(specPackage, version, tmp)
	if err != nil {
		return nil, err
	}
	tgz, err := os.ReadFile(tgzPath)
	if err != nil {
		return nil, err
	}
	files, err := extractFiles(tgz, func(name string) bool {
		return name == "package/package.json" || (strings.HasPrefix(name, specDir) && strings.HasSuffix(name, ".json") && !strings.Contains(name[len(specDir):], "/"))
	})
	if err != nil {
		return nil, fmt.Errorf("%s@%s: %w", specPackage, version, err)
	}
	var pkg struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(files["package/package.json"], &pkg); err != nil || pkg.Version == "" {
		return nil, fmt.Errorf("%s@%s: package/package.json has no version", specPackage, version)
	}
	if pkg.Version != version && isVersion(version) {
		return nil, fmt.Errorf("%s@%s: the package says it is version %s", specPackage, version, pkg.Version)
	}
	js, ok := files[specFile]
	if !ok {
		return nil, fmt.Errorf("%s@%s: %s not in the package", specPackage, version, specFile)
	}
	f := &fetched{files: map[string][]byte{}, specs: map[string][]byte{}}
	f.rec = &record{Package: specPackage, Version: pkg.Version, File: specFile,
		SHA256: sha256Hex(js), TarballSHA256: sha256Hex(tgz)}
	var names []string
	for name := range files {
		if strings.HasPrefix(name, specDir) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		data := files[name]
		if _, err := parseJSON(data); err != nil {
			return nil, fmt.Errorf("%s@%s %s: %w", specPackage, pkg.Version, name, err)
		}
		variant := strings.TrimSuffix(name[len(specDir):], ".json")
		if variant != mainVariant {
			f.rec.Variants = append(f.rec.Variants, variantRecord{Name: variant, File: name, SHA256: sha256Hex(data)})
		}
		gz, err := gzipBytes(data)
		if err != nil {
			return nil, err
		}
		f.files[variant+".json.gz"] = gz
		f.specs[variant] = data
	}
	if old != nil && old.Version == f.rec.Version && (old.SHA256 != f.rec.SHA256 || old.TarballSHA256 != f.rec.TarballSHA256) {
		return nil, fmt.Errorf("%s@%s: %w: got json %s, tarball %s; the record says json %s, tarball %s",
			specPackage, f.rec.Version, errChecksum, f.rec.SHA256, f.rec.TarballSHA256, old.SHA256, old.TarballSHA256)
	}
	return f, nil
}

// isVersion reports whether v is a version number rather than a tag.
func isVersion(v string) bool {
	return v != "" && v[0] >= '0' && v[0] <= '9'
}
