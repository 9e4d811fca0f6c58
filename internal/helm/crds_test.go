package helm

import (
	"context"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

// TestEngine_applyCRDs_policies runs the upgrade CRD policies against a real
// API server: Skip leaves CRDs alone, Create adds missing ones only,
// CreateReplace also updates existing ones.
func TestEngine_applyCRDs_policies(t *testing.T) {
	g := NewWithT(t)
	env, engine := startEngine(t)
	root, err := testenv.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	ch, err := loader.LoadDir(filepath.Join(root, "testdata", "charts", "realistic"))
	g.Expect(err).NotTo(HaveOccurred())
	ctx, target := context.Background(), Target{Namespace: "default"}
	key := client.ObjectKey{Name: "widgets.test.kraan.io"}
	crd := &apiextensionsv1.CustomResourceDefinition{}

	g.Expect(engine.applyCRDs(ctx, target, ch, kraanv1.CRDsSkip)).To(Succeed())
	g.Expect(env.Client.Get(ctx, key, crd)).NotTo(Succeed(), "Skip created the CRD")

	g.Expect(engine.applyCRDs(ctx, target, ch, kraanv1.CRDsCreate)).To(Succeed())
	g.Expect(env.Client.Get(ctx, key, crd)).To(Succeed())
	g.Expect(crd.Spec.Names.ShortNames).To(BeEmpty())

	// A new chart version adds a short name to its CRD.
	crdFile := ch.CRDObjects()[0].File
	crdFile.Data = withShortName(t, crdFile.Data)
	g.Expect(engine.applyCRDs(ctx, target, ch, kraanv1.CRDsCreate)).To(Succeed())
	g.Expect(env.Client.Get(ctx, key, crd)).To(Succeed())
	g.Expect(crd.Spec.Names.ShortNames).To(BeEmpty(), "Create replaced an existing CRD")

	g.Expect(engine.applyCRDs(ctx, target, ch, kraanv1.CRDsCreateReplace)).To(Succeed())
	g.Expect(env.Client.Get(ctx, key, crd)).To(Succeed())
	g.Expect(crd.Spec.Names.ShortNames).To(ConsistOf("wdg"))
}

func withShortName(t *testing.T, data []byte) []byte {
	t.Helper()
	objs, err := decodeObjects(data)
	if err != nil || len(objs) != 1 {
		t.Fatalf("decoding the test CRD: %v", err)
	}
	if err := unstructured.SetNestedStringSlice(objs[0].Object, []string{"wdg"}, "spec", "names", "shortNames"); err != nil {
		t.Fatal(err)
	}
	out, err := objs[0].MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestInstallCRDsPolicy: which part of the install CRDs policy the engine
// applies before an install (Helm's install only creates missing CRDs, so
// CreateReplace is the engine's). releasespec tests Flux's reading of
// install.crds and install.skipCRDs.
func TestInstallCRDsPolicy(t *testing.T) {
	for _, tt := range []struct {
		name       string
		policy     string
		wantEngine string
		helmSkips  bool
	}{
		{"default", "", kraanv1.CRDsSkip, false},
		{"Create", kraanv1.CRDsCreate, kraanv1.CRDsSkip, false},
		{"Skip", kraanv1.CRDsSkip, kraanv1.CRDsSkip, true},
		{"CreateReplace is applied by the engine", kraanv1.CRDsCreateReplace, kraanv1.CRDsCreateReplace, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			acts := Actions{Install: InstallOptions{CRDs: tt.policy}}
			g.Expect(installCRDsByEngine(acts)).To(Equal(tt.wantEngine))
			g.Expect(newInstall(&action.Configuration{}, Target{}, acts, ApplyMethods{}, nil).SkipCRDs).To(Equal(tt.helmSkips))
		})
	}
}
