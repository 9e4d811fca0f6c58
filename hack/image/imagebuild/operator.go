package imagebuild

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The OCI annotations the images carry, as image config labels and manifest
// annotations.
const (
	LabelSource   = "org.opencontainers.image.source"
	LabelVersion  = "org.opencontainers.image.version"
	LabelRevision = "org.opencontainers.image.revision"
	LabelCreated  = "org.opencontainers.image.created"
	LabelTitle    = "org.opencontainers.image.title"
)

// BinaryPath is where the operator binary lives in its image, and its
// entrypoint; the operator reads /watches.yaml, whose chart paths
// (helm-charts/...) are relative to the working directory /.
const BinaryPath = "manager"

// Metadata describes a build of the repository.
type Metadata struct {
	// Source is the repository URL.
	Source string
	// Version is the operator's version (VERSION in the Makefile).
	Version string
	// Revision is the Git commit the images are built from.
	Revision string
	// Created is every timestamp in the images: the commit's time, or
	// SOURCE_DATE_EPOCH when set, never the clock, so builds are reproducible.
	Created time.Time
}

// GitMetadata reads the revision and commit time of the checkout at dir. A
// SOURCE_DATE_EPOCH in the environment overrides the commit time, as in
// other reproducible builds.
func GitMetadata(ctx context.Context, dir, source, version string) (Metadata, error) {
	out, err := exec.CommandContext(ctx, "git", "-C", dir, "log", "-1", "--format=%H %ct").Output()
	if err != nil {
		return Metadata{}, fmt.Errorf("reading the Git commit of %s (the images record it; build from a Git checkout): %w", dir, err)
	}
	rev, ct, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	epoch, err := strconv.ParseInt(ct, 10, 64)
	if err != nil {
		return Metadata{}, fmt.Errorf("reading the commit time of %s: %q: %w", dir, ct, err)
	}
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		if epoch, err = strconv.ParseInt(s, 10, 64); err != nil {
			return Metadata{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q is not a number of seconds", s)
		}
	}
	return Metadata{Source: source, Version: version, Revision: rev, Created: time.Unix(epoch, 0).UTC()}, nil
}

// Uncommitted says whether the checkout at dir has changes to tracked files
// that are not committed: `make image` builds the commit, without them.
func Uncommitted(ctx context.Context, dir string) bool {
	out, err := exec.CommandContext(ctx, "git", "-C", dir, "status", "--porcelain", "--untracked-files=no").Output()
	return err == nil && len(bytes.TrimSpace(out)) > 0
}

// Labels are the OCI labels of every image of this build.
func (m Metadata) Labels() map[string]string {
	return map[string]string{
		LabelSource:   m.Source,
		LabelVersion:  m.Version,
		LabelRevision: m.Revision,
		LabelCreated:  m.Created.Format(time.RFC3339),
	}
}

// BuildBinary compiles the operator (./cmd of the module at moduleDir) for
// the platform into out: static (CGO_ENABLED=0), with paths trimmed, no
// symbol table and an empty build ID, so the same commit gives the same bytes;
// the VCS revision is stamped (go version -m shows it).
func BuildBinary(ctx context.Context, moduleDir string, p v1.Platform, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=true",
		"-ldflags=-s -w -buildid=", "-o", out, "./cmd")
	cmd.Dir = moduleDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture, "GOARM=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building the operator for %s/%s: %w: %s", p.OS, p.Architecture, err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// OperatorImage is the operator image for one platform: the base layer, then
// a layer with the binary, watches.yaml and the charts of moduleDir.
func OperatorImage(binary []byte, moduleDir string, p v1.Platform, m Metadata) (v1.Image, error) {
	base, err := BaseLayer(m.Created)
	if err != nil {
		return nil, err
	}
	charts, err := TreeEntries(filepath.Join(moduleDir, "helm-charts"), "helm-charts")
	if err != nil {
		return nil, err
	}
	watches, err := os.ReadFile(filepath.Join(moduleDir, "watches.yaml"))
	if err != nil {
		return nil, err
	}
	charts = append(charts, File(BinaryPath, 0o755, binary), File("watches.yaml", 0o644, watches))
	appLayer, err := NewLayer(charts, m.Created)
	if err != nil {
		return nil, err
	}
	labels := m.Labels()
	labels[LabelTitle] = "kraan-operator"
	return assemble([]v1.Layer{base, appLayer}, p, v1.Config{
		User:       fmt.Sprintf("%d:%d", NonRoot, NonRoot),
		Entrypoint: []string{"/" + BinaryPath},
		WorkingDir: "/",
		Labels:     labels,
	}, m.Created, []string{"base: passwd, group, CA certificates, /tmp", "kraan-operator binary, watches.yaml, helm-charts/"})
}

// assemble makes an OCI image of the layers with the config, every time in it
// set to created.
func assemble(layers []v1.Layer, p v1.Platform, cfg v1.Config, created time.Time, history []string) (v1.Image, error) {
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	for i, l := range layers {
		var err error
		img, err = mutate.Append(img, mutate.Addendum{
			Layer:     l,
			MediaType: types.OCILayer,
			History:   v1.History{Created: v1.Time{Time: created}, CreatedBy: history[i], Comment: "kraan-operator hack/image"},
		})
		if err != nil {
			return nil, err
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Config = cfg
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Created = v1.Time{Time: created}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, err
	}
	return mutate.Annotations(img, cfg.Labels).(v1.Image), nil
}

// Index is the multi-platform image index of the images, annotated like them.
func Index(images map[string]v1.Image, platforms []v1.Platform, annotations map[string]string) v1.ImageIndex {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range platforms {
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        images[p.String()],
			Descriptor: v1.Descriptor{Platform: &p},
		})
	}
	return mutate.Annotations(idx, annotations).(v1.ImageIndex)
}
