package manifest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Options tune Read.
type Options struct {
	// Root is the root of the source artifact that holds the layer's directory.
	// Nothing outside it is read, whether through `../`, a symlink or a
	// kustomize base. Empty means the layer's directory itself.
	Root string
	// Layer, when set, labels every object as owned by this AddonsLayer (see LabelOwner).
	Layer string
	// Version, when set, is the layer's spec.version, injected into HelmReleases
	// annotated `kraan.updateVersion: "true"` (see InjectVersion).
	Version string
	// Shard is the layer's ShardLabel value ("" for none), which its
	// HelmReleases take (see SetShard).
	Shard string
}

// Result is what a layer's directory holds.
type Result struct {
	// Objects in a deterministic order: kustomize's output order, or file path
	// then document order. Use SortForApply for the order to apply them in.
	Objects []*unstructured.Unstructured
	// Kustomized is true when the directory was built with kustomize.
	Kustomized bool
}

// Read reads the layer in dir. An empty directory is valid and gives no objects:
// the layer then owns nothing and everything it applied before is pruned (Kraan
// #168 failed such a layer instead). A missing directory is an error that says so.
func Read(dir string, opts Options) (*Result, error) {
	dir, root, err := resolveDirs(dir, opts.Root)
	if err != nil {
		return nil, err
	}
	var src []sourced
	kfile, err := findKustomization(dir)
	switch {
	case err != nil:
		return nil, err
	case kfile != "":
		src, err = build(dir, root)
	default:
		src, err = readTree(dir, root)
	}
	if err != nil {
		return nil, err
	}
	return finish(src, opts, kfile != "")
}

// sourced is an object and where it came from, for error messages.
type sourced struct {
	obj    *unstructured.Unstructured
	origin string // "apps/podinfo.yaml: document 2"
}

// resolveDirs makes dir and root absolute and symlink-free, and checks that
// dir is a directory inside root.
func resolveDirs(dir, root string) (string, string, error) {
	absDir, err := realPath(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", "", fmt.Errorf("layer directory %s does not exist in the source artifact: check spec.source.path", dir)
		}
		return "", "", fmt.Errorf("reading layer directory %s: %w", dir, err)
	}
	if info, err := os.Stat(absDir); err != nil || !info.IsDir() {
		return "", "", fmt.Errorf("layer path %s is not a directory: check spec.source.path", dir)
	}
	if root == "" {
		return absDir, absDir, nil
	}
	absRoot, err := realPath(root)
	if err != nil {
		return "", "", fmt.Errorf("reading artifact root %s: %w", root, err)
	}
	if !within(absRoot, absDir) {
		return "", "", fmt.Errorf("layer directory %s is outside the artifact root %s", dir, root)
	}
	return absDir, absRoot, nil
}

func realPath(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// within reports whether path is root or below it; both must be clean and absolute.
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// finish converts Flux HelmReleases, rejects duplicates, then labels and
// injects the version, in that order so the label lands on converted objects.
func finish(src []sourced, opts Options, kustomized bool) (*Result, error) {
	res := &Result{Kustomized: kustomized, Objects: make([]*unstructured.Unstructured, 0, len(src))}
	for i := range src {
		if !IsFluxHelmRelease(src[i].obj) {
			continue
		}
		converted, err := ConvertHelmRelease(src[i].obj)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", src[i].origin, err)
		}
		src[i].obj = converted
	}
	if err := checkDuplicates(src); err != nil {
		return nil, err
	}
	for _, s := range src {
		if err := decorate(s.obj, opts); err != nil {
			return nil, fmt.Errorf("%s: %w", s.origin, err)
		}
		res.Objects = append(res.Objects, s.obj)
	}
	return res, nil
}

func decorate(obj *unstructured.Unstructured, opts Options) error {
	if opts.Version != "" {
		if err := InjectVersion(obj, opts.Version); err != nil {
			return err
		}
	}
	if opts.Layer == "" {
		return nil
	}
	SetShard(obj, opts.Shard)
	return LabelOwner(obj, opts.Layer)
}

// checkDuplicates rejects two documents defining the same object: applied one
// after the other, the second would silently win (kubectl apply -R did that).
func checkDuplicates(src []sourced) error {
	seen := make(map[string]string, len(src))
	for _, s := range src {
		gvk := s.obj.GroupVersionKind()
		key := gvk.Group + "/" + gvk.Kind + "/" + s.obj.GetNamespace() + "/" + s.obj.GetName()
		if first, dup := seen[key]; dup {
			return fmt.Errorf("%s is defined twice: in %s and in %s", describe(s.obj), first, s.origin)
		}
		seen[key] = s.origin
	}
	return nil
}

// describe names an object in messages: "HelmRelease apps/podinfo".
func describe(obj *unstructured.Unstructured) string {
	if ns := obj.GetNamespace(); ns != "" {
		return obj.GetKind() + " " + ns + "/" + obj.GetName()
	}
	return obj.GetKind() + " " + obj.GetName()
}
