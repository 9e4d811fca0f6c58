package imagebuild

import (
	"context"
	"debug/buildinfo"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Result is what a build wrote.
type Result struct {
	// Layout is the OCI layout directory.
	Layout string
	// Ref is the image reference (repository and tag) it is named as.
	Ref string
	// Digest is the digest of its image or image index.
	Digest v1.Hash
	// SBOMs are the SPDX documents written beside the layout, one per platform.
	SBOMs []string
}

// OperatorOptions say what to build the operator image from and where.
type OperatorOptions struct {
	// ModuleDir is the repository's root.
	ModuleDir string
	// Out is the OCI layout directory to write; the SBOMs go beside it.
	Out string
	// Ref is the image's name, e.g. ghcr.io/kraan-io/kraan-operator:v0.1.0.
	Ref       string
	Platforms []v1.Platform
	Meta      Metadata
}

// ParsePlatforms reads "linux/amd64,linux/arm64".
func ParsePlatforms(s string) ([]v1.Platform, error) {
	var ps []v1.Platform
	for _, f := range strings.Split(s, ",") {
		p, err := v1.ParsePlatform(strings.TrimSpace(f))
		if err != nil || p.OS == "" || p.Architecture == "" {
			return nil, fmt.Errorf("platform %q: want os/arch, e.g. linux/amd64", f)
		}
		ps = append(ps, *p)
	}
	return ps, nil
}

// BuildOperator compiles the operator for every platform, writes the
// multi-platform image index as an OCI layout at o.Out and an SPDX SBOM per
// platform beside it (<Out>.<os>-<arch>.spdx.json).
//
// Everything in the image — binary, watches.yaml, charts — comes from a
// clean checkout of the commit o.Meta.Revision, not from the working tree:
// the image's revision label and the binary's VCS stamp then describe exactly
// what is in it, and Go stamps the revision only in a checkout whose .git is
// a directory (never in a `git worktree`). Uncommitted changes are not built.
func BuildOperator(ctx context.Context, o OperatorOptions) (Result, error) {
	tmp, err := os.MkdirTemp("", "kraan-image-")
	if err != nil {
		return Result{}, err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	if err := os.MkdirAll(filepath.Dir(filepath.Clean(o.Out)), 0o755); err != nil {
		return Result{}, err
	}
	src := filepath.Join(tmp, "src")
	if err := checkout(ctx, o.ModuleDir, o.Meta.Revision, src); err != nil {
		return Result{}, err
	}
	res := Result{Layout: o.Out, Ref: o.Ref}
	images := map[string]v1.Image{}
	for _, p := range o.Platforms {
		plat := p.OS + "-" + p.Architecture
		bin := filepath.Join(tmp, "manager-"+plat)
		if err := BuildBinary(ctx, src, p, bin); err != nil {
			return Result{}, err
		}
		data, err := os.ReadFile(bin)
		if err != nil {
			return Result{}, err
		}
		if err := checkStamp(bin, o.Meta.Revision); err != nil {
			return Result{}, err
		}
		if images[p.String()], err = OperatorImage(data, src, p, o.Meta); err != nil {
			return Result{}, fmt.Errorf("assembling the operator image for %s: %w", p, err)
		}
		sbom, err := SBOM(bin, "kraan-operator-"+plat, o.Meta)
		if err != nil {
			return Result{}, err
		}
		path := filepath.Clean(o.Out) + "." + plat + ".spdx.json"
		if err := os.WriteFile(path, sbom, 0o644); err != nil {
			return Result{}, err
		}
		res.SBOMs = append(res.SBOMs, path)
	}
	idx := Index(images, o.Platforms, o.Meta.Labels())
	if res.Digest, err = idx.Digest(); err != nil {
		return Result{}, err
	}
	return res, WriteLayout(o.Out, idx, o.Ref)
}

// checkout makes dst a clone of the repository at dir, checked out at the
// commit rev. The clone borrows dir's objects (--shared): it takes well under
// a second.
func checkout(ctx context.Context, dir, rev, dst string) error {
	for _, args := range [][]string{
		{"clone", "--quiet", "--shared", "--no-checkout", dir, dst},
		{"-C", dst, "checkout", "--quiet", "--detach", rev},
	} {
		if out, err := exec.CommandContext(ctx, "git", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("checking out commit %s of %s to build it: %w: %s", rev, dir, err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// checkStamp fails unless the binary records the commit it was built from,
// as `go version -m` shows it.
func checkStamp(bin, rev string) error {
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return fmt.Errorf("reading the build information of %s: %w", bin, err)
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && s.Value == rev {
			return nil
		}
	}
	return fmt.Errorf("the operator binary does not record commit %s as its vcs.revision; is git on PATH?", rev)
}

// BuildBundle writes the bundle image of bundleDir, with the operator image
// pinned to operator (the reference by tag in the CSV becomes operator.To),
// as an OCI layout at out named ref.
func BuildBundle(bundleDir string, operator Pin, out, ref string, m Metadata) (Result, error) {
	img, err := BundleImage(bundleDir, operator, m)
	if err != nil {
		return Result{}, err
	}
	return writeImage(img, out, ref)
}

// BuildCatalog writes the catalog image of catalogDir with the images pinned
// as an OCI layout at out named ref.
func BuildCatalog(catalogDir string, bundle, operator Pin, out, ref string, m Metadata) (Result, error) {
	img, err := CatalogImage(catalogDir, bundle, operator, m)
	if err != nil {
		return Result{}, err
	}
	return writeImage(img, out, ref)
}

func writeImage(img v1.Image, out, ref string) (Result, error) {
	d, err := img.Digest()
	if err != nil {
		return Result{}, err
	}
	return Result{Layout: out, Ref: ref, Digest: d}, WriteLayout(out, img, ref)
}

// LayoutDigest is the digest of the image or index in the OCI layout dir.
func LayoutDigest(dir string) (v1.Hash, error) {
	a, err := ReadLayout(dir)
	return a.Descriptor.Digest, err
}
