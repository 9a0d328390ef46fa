package importschema

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"
)

// The published spec this importer reads.
const (
	specPackage = "@octokit/openapi-webhooks"
	specFile    = "package/generated/api.github.com.json" // inside the package tarball
	recordName  = "source.yaml"                           // beside the compressed copy
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
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if r.Package == "" || r.Version == "" || len(r.SHA256) != 64 {
		return nil, fmt.Errorf("%s: package, version and a sha256 are required", path)
	}
	return &r, nil
}

func writeRecord(path string, r *record) error {
	var b bytes.Buffer
	b.WriteString(recordHeader)
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(r); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
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

// extractFile returns one file of a .tgz.
func extractFile(tgz []byte, name string) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil, fmt.Errorf("%s not in the package", name)
		}
		if err != nil {
			return nil, err
		}
		if h.Name == name {
			return io.ReadAll(tr)
		}
	}
}

// npmPack downloads a package version's tarball into dir and returns its path. A
// variable so that tests run without the network.
var npmPack = func(pkg, version, dir string) (string, error) {
	cmd := exec.Command("npm", "pack", "--silent", pkg+"@"+version)
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("npm pack %s@%s: %w", pkg, version, err)
	}
	lines := strings.Fields(strings.TrimSpace(string(out)))
	if len(lines) == 0 {
		return "", fmt.Errorf("npm pack %s@%s printed no file name", pkg, version)
	}
	return filepath.Join(dir, lines[len(lines)-1]), nil
}

// fetch replaces the compressed spec at specPath with the given version's, via npm,
// and rewrites its record. Fetching the version already recorded must give the
// recorded checksums: a registry that changed a published version is an error.
func fetch(version, specPath string) (*record, error) {
	recPath := filepath.Join(filepath.Dir(specPath), recordName)
	old, err := readRecord(recPath)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
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
	js, err := extractFile(tgz, specFile)
	if err != nil {
		return nil, fmt.Errorf("%s@%s: %w", specPackage, version, err)
	}
	if _, err := parseJSON(js); err != nil {
		return nil, fmt.Errorf("%s@%s %s: %w", specPackage, version, specFile, err)
	}
	rec := &record{Package: specPackage, Version: version, File: specFile,
		SHA256: sha256Hex(js), TarballSHA256: sha256Hex(tgz)}
	if old != nil && old.Version == version && (old.SHA256 != rec.SHA256 || old.TarballSHA256 != rec.TarballSHA256) {
		return nil, fmt.Errorf("%s@%s: %w: got json %s, tarball %s; the record says json %s, tarball %s",
			specPackage, version, errChecksum, rec.SHA256, rec.TarballSHA256, old.SHA256, old.TarballSHA256)
	}
	gz, err := gzipBytes(js)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(specPath), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(specPath, gz, 0o644); err != nil {
		return nil, err
	}
	return rec, writeRecord(recPath, rec)
}
