package imagebuild_test

import (
	"context"
	"encoding/pem"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kraan-io/kraan-operator/hack/image/imagebuild"
)

// registry is the in-process OCI registry (go-containerregistry's
// pkg/registry) every test of the package pushes to, served over TLS on
// 127.0.0.1: opm pulls from it as from any registry, over HTTPS, trusting
// its certificate through SSL_CERT_FILE.
var registry *httptest.Server

func TestMain(m *testing.M) {
	registry = httptest.NewTLSServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	code := m.Run()
	registry.Close()
	if sharedDir != "" {
		_ = os.RemoveAll(sharedDir)
	}
	os.Exit(code)
}

// registryHost is host:port of the registry.
func registryHost() string { return strings.TrimPrefix(registry.URL, "https://") }

// tlsTransport makes Push trust the registry's certificate.
func tlsTransport() remote.Option { return remote.WithTransport(registry.Client().Transport) }

// The images' names on the test registry: the bundle and catalog pin the
// images by digest in these repositories.
func operatorRef() string { return registryHost() + "/kraan-io/kraan-operator:v0.1.0" }
func bundleRef() string   { return registryHost() + "/kraan-io/kraan-operator-bundle:v0.1.0" }
func catalogRef() string  { return registryHost() + "/kraan-io/kraan-operator-catalog:v0.1.0" }

// testPlatforms is what the tests build: linux/amd64 only. `make image`
// builds linux/arm64 too; a second architecture would double the cost of the
// package (a full cold compile of the operator with -trimpath) for the same
// code path.
var testPlatforms = []v1.Platform{{OS: "linux", Architecture: "amd64"}}

// moduleRoot is the repository's root, where the images are built from.
func moduleRoot(t testing.TB) string {
	t.Helper()
	out, err := exec.CommandContext(context.Background(), "go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

// built is one build of the three images into a directory.
type built struct {
	dir                       string
	meta                      imagebuild.Metadata
	operator, bundle, catalog imagebuild.Result
	operatorPin, bundlePin    imagebuild.Pin
}

// build builds the three images as `make image bundle-image catalog-image`
// does, named on the test registry, into dir.
func build(t testing.TB, dir string) built {
	t.Helper()
	root := moduleRoot(t)
	ctx := context.Background()
	b := built{dir: dir}
	var err error
	if b.meta, err = imagebuild.GitMetadata(ctx, root, "https://github.com/kraan-io/kraan-operator", "0.1.0"); err != nil {
		t.Fatal(err)
	}
	b.operator, err = imagebuild.BuildOperator(ctx, imagebuild.OperatorOptions{
		ModuleDir: root, Out: filepath.Join(dir, "operator"), Ref: operatorRef(), Platforms: testPlatforms, Meta: b.meta,
	})
	if err != nil {
		t.Fatal(err)
	}
	opFrom, err := imagebuild.OperatorImageRef(filepath.Join(root, "bundle"))
	if err != nil {
		t.Fatal(err)
	}
	if b.operatorPin, err = imagebuild.NewPin(opFrom, operatorRef(), b.operator.Digest); err != nil {
		t.Fatal(err)
	}
	if b.bundle, err = imagebuild.BuildBundle(filepath.Join(root, "bundle"), b.operatorPin, filepath.Join(dir, "bundle"), bundleRef(), b.meta); err != nil {
		t.Fatal(err)
	}
	bundleName, err := imagebuild.BundleName(filepath.Join(root, "bundle"))
	if err != nil {
		t.Fatal(err)
	}
	bundleFrom, err := imagebuild.CatalogBundleImage(filepath.Join(root, "catalog"), bundleName)
	if err != nil {
		t.Fatal(err)
	}
	if b.bundlePin, err = imagebuild.NewPin(bundleFrom, bundleRef(), b.bundle.Digest); err != nil {
		t.Fatal(err)
	}
	if b.catalog, err = imagebuild.BuildCatalog(filepath.Join(root, "catalog"), b.bundlePin, b.operatorPin,
		filepath.Join(dir, "catalog"), catalogRef(), b.meta); err != nil {
		t.Fatal(err)
	}
	return b
}

var (
	sharedOnce  sync.Once
	sharedBuild built
	sharedDir   string
	sharedOK    bool
)

// images is the package's one build of the images (the operator binary
// compiles once), made by the first test that needs it.
func images(t *testing.T) built {
	t.Helper()
	sharedOnce.Do(func() {
		dir, err := os.MkdirTemp("", "kraan-images-")
		if err != nil {
			t.Fatal(err)
		}
		sharedDir = dir
		sharedBuild = build(t, dir)
		sharedOK = true
	})
	if !sharedOK {
		t.Fatal("building the images failed in an earlier test")
	}
	return sharedBuild
}

// tool is the path of a tool the Makefile exports.
func tool(t *testing.T, env string) string {
	t.Helper()
	path := os.Getenv(env)
	if path == "" {
		t.Fatalf("%s is not set: run the tests with `make test`, which builds opm (`make olm-runtime`)", env)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s=%s: %v; run `make olm-runtime`", env, path, err)
	}
	return path
}

// toolEnv is the environment of opm: a home of its own
// with a containers signature policy that accepts any image (opm's image
// library refuses to pull without one), trusting the registry's certificate.
func toolEnv(t *testing.T) []string {
	t.Helper()
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".config", "containers"), 0o755); err != nil {
		t.Fatal(err)
	}
	policy := `{"default":[{"type":"insecureAcceptAnything"}]}`
	if err := os.WriteFile(filepath.Join(home, ".config", "containers", "policy.json"), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(home, "registry-ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: registry.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	return append(os.Environ(), "HOME="+home, "SSL_CERT_FILE="+ca, "XDG_RUNTIME_DIR="+home)
}
