package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"
)

// writeBundle writes a bundle directory holding only a CSV.
func writeBundle(t *testing.T, version, replaces, skipRange string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), version)
	csv := fmt.Sprintf("apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: kraan-operator.v%s\n", version)
	if skipRange != "" {
		csv += fmt.Sprintf("  annotations:\n    olm.skipRange: '%s'\n", skipRange)
	}
	csv += fmt.Sprintf("spec:\n  version: %s\n", version)
	if replaces != "" {
		csv += "  replaces: " + replaces + "\n"
	}
	NewWithT(t).Expect(os.MkdirAll(filepath.Join(dir, "manifests"), 0o755)).To(Succeed())
	NewWithT(t).Expect(os.WriteFile(filepath.Join(dir, "manifests", "kraan-operator.clusterserviceversion.yaml"), []byte(csv), 0o600)).To(Succeed())
	return dir
}

func TestRun_ChannelsSayWhatTheCSVsSay(t *testing.T) {
	g := NewWithT(t)
	v1 := writeBundle(t, "0.1.0", "", "")
	v2 := writeBundle(t, "0.2.0", "kraan-operator.v0.1.0", "<0.2.0")
	var out bytes.Buffer
	g.Expect(run([]string{"--package", "kraan-operator", "--channel", "alpha", "--channel", "stable",
		"--deprecated-channel", "stable=use alpha", v1, v2}, &out)).To(Succeed())
	docs := bytes.Split(out.Bytes(), []byte("---\n"))[1:]
	g.Expect(docs).To(HaveLen(3))
	var alpha, deprecations map[string]any
	g.Expect(yaml.Unmarshal(docs[0], &alpha)).To(Succeed())
	g.Expect(alpha).To(Equal(map[string]any{
		"schema": "olm.channel", "package": "kraan-operator", "name": "alpha",
		"entries": []any{
			map[string]any{"name": "kraan-operator.v0.1.0"},
			map[string]any{"name": "kraan-operator.v0.2.0", "replaces": "kraan-operator.v0.1.0", "skipRange": "<0.2.0"},
		},
	}))
	g.Expect(string(docs[1])).To(ContainSubstring("name: stable"))
	g.Expect(yaml.Unmarshal(docs[2], &deprecations)).To(Succeed())
	g.Expect(deprecations["entries"]).To(Equal([]any{map[string]any{
		"reference": map[string]any{"schema": "olm.channel", "name": "stable"}, "message": "use alpha",
	}}))
}

// A release that forgot spec.replaces, or whose skipRange covers itself,
// leaves the channel without an upgrade path: make catalog fails.
func TestRun_RefusesABrokenUpgradePath(t *testing.T) {
	v1 := writeBundle(t, "0.1.0", "", "")
	for name, tc := range map[string]struct {
		next string
		want string
	}{
		"no replaces":           {writeBundle(t, "0.2.0", "", "<0.2.0"), `replaces "", want kraan-operator.v0.1.0`},
		"replaces another":      {writeBundle(t, "0.2.0", "kraan-operator.v0.0.9", ""), `replaces "kraan-operator.v0.0.9"`},
		"version not above":     {writeBundle(t, "0.1.0-rc.1", "kraan-operator.v0.1.0", ""), "is not above"},
		"skipRange covers self": {writeBundle(t, "0.2.0", "kraan-operator.v0.1.0", "<0.3.0"), "includes its own version"},
	} {
		t.Run(name, func(t *testing.T) {
			err := run([]string{"--package", "kraan-operator", "--channel", "alpha", v1, tc.next}, &bytes.Buffer{})
			NewWithT(t).Expect(err).To(MatchError(ContainSubstring(tc.want)))
		})
	}
}

// The repository's own bundles form the channel make catalog writes.
func TestRun_RepositoryBundles(t *testing.T) {
	root, err := filepath.Abs("../..")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	// bundle-history/<version> directories; <version>.sha256 beside each.
	history, err := filepath.Glob(filepath.Join(root, "bundle-history", "*", "manifests"))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	for i, m := range history {
		history[i] = filepath.Dir(m)
	}
	NewWithT(t).Expect(history).NotTo(BeEmpty())
	args := append(append([]string{"--package", "kraan-operator", "--channel", "alpha"}, history...), filepath.Join(root, "bundle"))
	NewWithT(t).Expect(run(args, &bytes.Buffer{})).To(Succeed())
}
