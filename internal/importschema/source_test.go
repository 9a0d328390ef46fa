package importschema

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestGzipDeterministic(t *testing.T) {
	data := []byte(strings.Repeat(`{"webhooks":{}}`, 100))
	a, err := gzipBytes(data)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := gzipBytes(data)
	if !bytes.Equal(a, b) {
		t.Error("two compressions of the same bytes differ")
	}
	zr, err := gzip.NewReader(bytes.NewReader(a))
	if err != nil {
		t.Fatal(err)
	}
	if zr.Name != "" || !zr.ModTime.IsZero() {
		t.Errorf("header has name %q, time %v; want neither", zr.Name, zr.ModTime)
	}
	// The header's MTIME field itself is zero, not only read back as zero.
	if !bytes.Equal(a[4:8], []byte{0, 0, 0, 0}) {
		t.Errorf("MTIME bytes % x", a[4:8])
	}
}

// writeTgz makes an npm-style package tarball holding files.
func writeTgz(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	tw := tar.NewWriter(zw)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestReadSpec(t *testing.T) {
	dir := t.TempDir()
	js := []byte(`{"webhooks":{}}`)
	gz, _ := gzipBytes(js)
	plain := filepath.Join(dir, "spec.json")
	packed := filepath.Join(dir, "spec.json.gz")
	garbage := filepath.Join(dir, "bad.json.gz")
	for p, b := range map[string][]byte{plain: js, packed: gz, garbage: []byte("not gzip")} {
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	good := &record{Package: "p", Version: "1", SHA256: sha256Hex(js)}
	bad := &record{Package: "p", Version: "1", SHA256: sha256Hex([]byte("other"))}
	tests := []struct {
		name string
		path string
		rec  *record
		err  error
	}{
		{"plain", plain, good, nil},
		{"gzip", packed, good, nil},
		{"no record", packed, nil, nil},
		{"checksum", packed, bad, errChecksum},
		{"missing", filepath.Join(dir, "none.gz"), nil, os.ErrNotExist},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readSpec(tc.path, tc.rec)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("got %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil || !bytes.Equal(got, js) {
				t.Fatalf("got %q, %v", got, err)
			}
		})
	}
	if _, err := readSpec(garbage, nil); err == nil {
		t.Error("a .gz that is not gzip was read")
	}
}

func TestRecord(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, recordName)
	want := &record{Package: specPackage, Version: "1.2.3", File: specFile,
		SHA256: strings.Repeat("a", 64), TarballSHA256: strings.Repeat("b", 64),
		Variants: []variantRecord{{Name: "ghec", File: specDir + "ghec.json", SHA256: strings.Repeat("c", 64)}}}
	data, err := encodeRecord(want)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readRecord(p)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	for name, text := range map[string]string{
		"unknown key": "package: p\nversion: 1\nsha256: " + strings.Repeat("a", 64) + "\ncolour: red\n",
		"short sum":   "package: p\nversion: 1\nsha256: abc\n",
		"no version":  "package: p\nsha256: " + strings.Repeat("a", 64) + "\n",
	} {
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := readRecord(p); err == nil {
			t.Errorf("%s: read without error", name)
		}
	}
}

// TestFetch runs fetch with npm replaced by a function that writes a tarball.
func TestFetch(t *testing.T) {
	specV1 := `{"webhooks":{},"v":1}`
	ghec := `{"webhooks":{},"ghec":1}`
	pkgJSON := func(v string) string { return `{"name":"@octokit/openapi-webhooks","version":"` + v + `"}` }
	tgzV1 := writeTgz(t, map[string]string{"package/package.json": pkgJSON("1.0.0"), specFile: specV1, specDir + "ghec.json": ghec})
	var served []byte
	saved := npmPack
	defer func() { npmPack = saved }()
	npmPack = func(pkg, version, dir string) (string, error) {
		if pkg != specPackage {
			t.Errorf("npm pack of %s", pkg)
		}
		p := filepath.Join(dir, "octokit-openapi-webhooks-"+version+".tgz")
		return p, os.WriteFile(p, served, 0o644)
	}

	served = tgzV1
	f, err := fetch("1.0.0", nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := f.rec
	if rec.SHA256 != sha256Hex([]byte(specV1)) || rec.TarballSHA256 != sha256Hex(tgzV1) || rec.Version != "1.0.0" {
		t.Errorf("record %+v", rec)
	}
	if len(rec.Variants) != 1 || rec.Variants[0].Name != "ghec" || rec.Variants[0].SHA256 != sha256Hex([]byte(ghec)) {
		t.Errorf("variants %+v", rec.Variants)
	}
	if len(f.files) != 2 || f.files["ghec.json.gz"] == nil || f.files[mainVariant+".json.gz"] == nil {
		t.Errorf("files %v", sortedKeys(f.files))
	}
	// A tag resolves to the version the package says it is.
	if f, err := fetch("latest", nil); err != nil || f.rec.Version != "1.0.0" {
		t.Errorf("latest: %+v, %v", f, err)
	}
	// A package that is not the version asked for.
	if _, err := fetch("1.0.1", nil); err == nil || !strings.Contains(err.Error(), "says it is version 1.0.0") {
		t.Errorf("wrong version: %v", err)
	}

	// The same version again, with the same content: fine.
	if _, err := fetch("1.0.0", rec); err != nil {
		t.Fatalf("refetch: %v", err)
	}
	// The same version with other content: the registry changed a published version.
	served = writeTgz(t, map[string]string{"package/package.json": pkgJSON("1.0.0"), specFile: `{"webhooks":{},"v":"changed"}`})
	if _, err := fetch("1.0.0", rec); !errors.Is(err, errChecksum) {
		t.Fatalf("changed content of a pinned version: got %v, want errChecksum", err)
	}
	// A package without the spec file, or with a file that is not JSON.
	served = writeTgz(t, map[string]string{"package/package.json": pkgJSON("3.0.0"), "package/README.md": "hi"})
	if _, err := fetch("3.0.0", rec); err == nil || !strings.Contains(err.Error(), "not in the package") {
		t.Errorf("missing file: %v", err)
	}
	served = writeTgz(t, map[string]string{"package/package.json": pkgJSON("3.0.0"), specFile: "{"})
	if _, err := fetch("3.0.0", rec); !errors.Is(err, errJSON) {
		t.Errorf("bad JSON: %v", err)
	}
	served = writeTgz(t, map[string]string{specFile: specV1})
	if _, err := fetch("3.0.0", rec); err == nil || !strings.Contains(err.Error(), "no version") {
		t.Errorf("no package.json: %v", err)
	}
	// npm failing.
	npmPack = func(string, string, string) (string, error) { return "", errors.New("npm: offline") }
	if _, err := fetch("4.0.0", rec); err == nil || !strings.Contains(err.Error(), "offline") {
		t.Errorf("npm failure: %v", err)
	}
}
