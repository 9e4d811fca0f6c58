package manifest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/kustomize/api/krusty"
)

// kustomizationNames are the file names kustomize recognises, in its order.
var kustomizationNames = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

func isKustomizationName(name string) bool {
	for _, k := range kustomizationNames {
		if name == k {
			return true
		}
	}
	return false
}

// findKustomization returns the path of dir's kustomization file, or "".
func findKustomization(dir string) (string, error) {
	for _, name := range kustomizationNames {
		p := filepath.Join(dir, name)
		_, err := os.Lstat(p)
		if err == nil {
			return p, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("looking for %s: %w", name, err)
		}
	}
	return "", nil
}

// kustomizeMu serialises builds: krusty shares package-level state that is not
// safe for concurrent builds (Flux's kustomize-controller serialises them for
// the same reason), and layers are reconciled concurrently.
var kustomizeMu sync.Mutex

// build runs `kustomize build dir` in-process. Kustomize's defaults are kept
// where they are safe: load restrictions root-only (files may not come from
// above the kustomization), plugins and Helm chart inflation disabled (they
// execute binaries), input order kept. On top of that, remote bases and URLs
// are refused before the build, since kustomize would fetch them with `git` and
// HTTP from the operator, and every file access is confined to the artifact root.
func build(dir, root string) ([]sourced, error) {
	if err := checkLocalOnly(dir, root); err != nil {
		return nil, err
	}
	name := displayDir(root, dir)
	fsys, err := newConfinedFS(root)
	if err != nil {
		return nil, err
	}
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	kustomizeMu.Lock()
	resources, err := k.Run(fsys, dir)
	kustomizeMu.Unlock()
	if err != nil {
		return nil, kustomizeError(root, dir, err)
	}
	objs := make([]sourced, 0, resources.Size())
	for i, r := range resources.Resources() {
		obj, err := resourceToUnstructured(r.MarshalJSON)
		if err != nil {
			return nil, fmt.Errorf("kustomize build of %s: object %d (%s): %w", name, i+1, r.CurId(), err)
		}
		objs = append(objs, sourced{obj: obj, origin: fmt.Sprintf("kustomize build of %s: %s", name, r.CurId())})
	}
	return objs, nil
}

// kustomizeError turns a kustomize build error into one a user can act on:
// paths relative to the artifact root (never the operator's own directories),
// the kustomization file named with its line for YAML errors, a missing
// resource said once instead of kustomize's three nested messages, and only
// the first line of errors that dump a whole configuration.
func kustomizeError(root, dir string, err error) error {
	name := displayDir(root, dir)
	msg := err.Error()
	file := name + "/kustomization.yaml"
	if kfile, _ := findKustomization(dir); kfile != "" {
		file = displayDir(root, kfile)
	}
	if m := missingResource.FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("kustomize build of %s: %s lists resource %q, which does not exist", name, file, m[1])
	}
	if strings.HasPrefix(msg, "invalid Kustomization: ") {
		inner := strings.TrimPrefix(msg, "invalid Kustomization: ")
		perr := &ParseError{File: strings.TrimPrefix(file, "./"), Err: errors.New(strings.TrimPrefix(yamlLine.ReplaceAllString(inner, ""), "yaml: "))}
		if m := yamlLine.FindStringSubmatch(inner); m != nil {
			perr.Line, _ = strconv.Atoi(m[1])
		}
		return fmt.Errorf("kustomize build of %s: %w", name, perr)
	}
	msg = configDump.ReplaceAllString(msg, "")
	msg = strings.ReplaceAll(msg, filepath.Clean(root)+string(filepath.Separator), "./")
	msg = strings.Join(strings.Fields(msg), " ")
	return fmt.Errorf("kustomize build of %s: %s", name, msg)
}

// configDump is the YAML of a transformer's configuration that kustomize
// puts in its errors ("with config: `…`"), over many lines.
var configDump = regexp.MustCompile("(?s) with config: `.*?`")

// missingResource matches kustomize's error for a resources entry that is
// not there: "accumulating resources from 'missing.yaml': evalsymlink
// failure on '/…/missing.yaml' : lstat …: no such file or directory…".
var missingResource = regexp.MustCompile(`accumulating resources from '([^']+)': [^\n]*no such file or directory`)

// displayDir names dir in messages the way spec.source.path does: "./apps",
// or "./" for the artifact root.
func displayDir(root, dir string) string {
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel == "." {
		return "./"
	}
	return "./" + filepath.ToSlash(rel)
}

// resourceToUnstructured goes through JSON because kustomize's maps hold Go
// ints, which unstructured objects (and their DeepCopy) do not accept.
func resourceToUnstructured(marshal func() ([]byte, error)) (*unstructured.Unstructured, error) {
	data, err := marshal()
	if err != nil {
		return nil, err
	}
	m := map[string]any{}
	if err := utiljson.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	obj := &unstructured.Unstructured{Object: m}
	return obj, checkTypeMeta(obj)
}
