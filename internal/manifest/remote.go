package manifest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/yaml"
)

// localChecker walks a kustomization and the local bases it refers to, looking
// for references kustomize would fetch from the network: remote bases (which it
// clones by running `git`) and http(s) URLs (which it downloads). The operator
// builds only what is in the layer's source artifact, whose revision the
// dependency checks and the inventory are keyed on; a remote base would make the
// layer's content change without a new revision.
type localChecker struct {
	root string
	seen map[string]bool
}

func checkLocalOnly(dir, root string) error {
	return (&localChecker{root: root, seen: map[string]bool{}}).check(dir)
}

func (c *localChecker) check(dir string) error {
	if c.seen[dir] {
		return nil
	}
	c.seen[dir] = true
	kfile, err := findKustomization(dir)
	if err != nil || kfile == "" {
		return err
	}
	k, ok := c.load(kfile)
	if !ok {
		return nil // kustomize reports the file's own problems better than we would
	}
	name := c.rel(kfile)
	for _, f := range baseRefs(k) {
		for _, ref := range f.refs {
			if err := c.checkBase(dir, name, f.name, ref); err != nil {
				return err
			}
		}
	}
	for _, f := range fileRefs(k) {
		for _, p := range f.refs {
			if strings.Contains(p, "://") && !strings.Contains(p, "\n") {
				return remoteError(name, f.name, p)
			}
		}
	}
	return nil
}

// load reads a kustomization file that resolves inside the artifact root.
func (c *localChecker) load(kfile string) (*types.Kustomization, bool) {
	real, err := realPath(kfile)
	if err != nil || !within(c.root, real) {
		return nil, false // the build's confined file system refuses it with a clear error
	}
	data, err := os.ReadFile(real)
	if err != nil {
		return nil, false
	}
	k := &types.Kustomization{}
	if err := yaml.Unmarshal(data, k); err != nil {
		return nil, false
	}
	return k, true
}

// checkBase follows a local directory base, and refuses an entry that is not a
// local file or directory but looks like something kustomize would clone.
func (c *localChecker) checkBase(dir, kfile, field, ref string) error {
	if strings.Contains(ref, "\n") {
		return nil // an inline generator or transformer configuration
	}
	info, err := os.Stat(filepath.Join(dir, ref))
	if err == nil {
		if !info.IsDir() {
			return nil
		}
		// A base outside the root is refused by the confined file system during
		// the build, with a message naming it.
		if real, err := realPath(filepath.Join(dir, ref)); err == nil && within(c.root, real) {
			return c.check(real)
		}
		return nil
	}
	if looksRemote(ref) {
		return remoteError(kfile, field, ref)
	}
	return nil
}

func (c *localChecker) rel(p string) string {
	if rel, err := filepath.Rel(c.root, p); err == nil {
		return filepath.ToSlash(rel)
	}
	return p
}

func remoteError(kfile, field, ref string) error {
	return fmt.Errorf("%s: %s entry %q is remote: the operator builds only what is in the layer's source; "+
		"copy it into the repository", kfile, field, ref)
}

// scpUser matches the `git@` of an scp-style Git address (git@github.com:org/repo).
var scpUser = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9-]*@`)

// looksRemote mirrors what kustomize accepts as a Git repository (its
// internal/git.NewRepoSpecFromURL): a URL scheme, an scp-style user, or a
// github.com address, optionally after the legacy `git::` prefix.
func looksRemote(ref string) bool {
	s := strings.ToLower(strings.TrimSpace(ref))
	s = strings.TrimPrefix(s, "git::")
	return strings.Contains(s, "://") || scpUser.MatchString(s) ||
		strings.HasPrefix(s, "github.com/") || strings.HasPrefix(s, "github.com:")
}

// field is a kustomization field's name and its path-like entries. Fields are
// kept in a slice, not a map, so the first error reported is always the same.
type field struct {
	name string
	refs []string
}

// baseRefs are the kustomization fields whose entries may be directories
// (kustomize bases), and therefore remote Git repositories.
func baseRefs(k *types.Kustomization) []field {
	bases, _, _ := deprecatedRefs(k)
	return []field{
		{"resources", k.Resources}, {"components", k.Components}, {"bases", bases},
		{"generators", k.Generators}, {"transformers", k.Transformers}, {"validators", k.Validators},
	}
}

// fileRefs are the kustomization fields whose entries kustomize loads as files,
// and downloads when they are http(s) URLs.
func fileRefs(k *types.Kustomization) []field {
	_, json6902, strategic := deprecatedRefs(k)
	patches := field{name: "patches"}
	for _, p := range k.Patches {
		patches.refs = append(patches.refs, p.Path)
	}
	replacements := field{name: "replacements"}
	for _, r := range k.Replacements {
		replacements.refs = append(replacements.refs, r.Path)
	}
	return []field{
		{"crds", k.Crds}, {"configurations", k.Configurations}, {"openapi", []string{k.OpenAPI["path"]}},
		patches, {"patchesJson6902", json6902}, {"patchesStrategicMerge", strategic}, replacements,
		generatorFiles(k),
	}
}

// deprecatedRefs returns the entries of deprecated fields, which kustomize
// still honours and so must be checked too.
//
//nolint:staticcheck // reading deprecated fields is the point: kustomize still loads them
func deprecatedRefs(k *types.Kustomization) (bases, json6902, strategic []string) {
	for _, p := range k.PatchesJson6902 {
		json6902 = append(json6902, p.Path)
	}
	for _, p := range k.PatchesStrategicMerge {
		strategic = append(strategic, string(p))
	}
	return k.Bases, json6902, strategic
}

// generatorFiles are the files and env files of ConfigMap and Secret generators.
func generatorFiles(k *types.Kustomization) field {
	f := field{name: "configMapGenerator/secretGenerator"}
	kvs := make([]types.KvPairSources, 0, len(k.ConfigMapGenerator)+len(k.SecretGenerator))
	for _, g := range k.ConfigMapGenerator {
		kvs = append(kvs, g.KvPairSources)
	}
	for _, g := range k.SecretGenerator {
		kvs = append(kvs, g.KvPairSources)
	}
	for _, kv := range kvs {
		f.refs = append(f.refs, kv.EnvSource)
		f.refs = append(f.refs, kv.EnvSources...)
		f.refs = append(f.refs, kv.FileSources...)
	}
	return f
}
