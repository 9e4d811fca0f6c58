package main

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

func TestOptions_LoadWatches_InvalidEntryNamed(t *testing.T) {
	g := NewWithT(t)
	path := filepath.Join(t.TempDir(), "watches.yaml")
	g.Expect(os.WriteFile(path, []byte("- {group: a.io, version: v1, kind: Widget}\n"), 0o600)).To(Succeed())
	_, err := (&options{watchesFile: path}).loadWatches()
	g.Expect(err).To(MatchError(ContainSubstring("entry 1 (a.io/v1, Kind=Widget): chart is required")))
}

func TestOptions_LoadWatches_ExplicitMissingFileFails(t *testing.T) {
	g := NewWithT(t)
	_, err := (&options{watchesFile: filepath.Join(t.TempDir(), "nope.yaml")}).loadWatches()
	g.Expect(err).To(MatchError(ContainSubstring("reading watches file")))
}

func TestOptions_LoadWatches_RepositoryFile(t *testing.T) {
	g := NewWithT(t)
	list, err := (&options{watchesFile: filepath.Join("..", "watches.yaml")}).loadWatches()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(list).To(HaveLen(1))
	g.Expect(list[0].Kind).To(Equal("Habitat"))
}

func TestOptions_Namespaces(t *testing.T) {
	tests := []struct {
		name  string
		value string
		want  []string
	}{
		{name: "all", value: "", want: nil},
		{name: "one", value: "shop", want: []string{"shop"}},
		{name: "several", value: "shop, billing,,", want: []string{"shop", "billing"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			o := &options{watchNamespace: tt.value}
			g.Expect(o.namespaces()).To(Equal(tt.want))
			g.Expect(o.cacheOptions().DefaultNamespaces).To(HaveLen(len(tt.want)))
		})
	}
}
