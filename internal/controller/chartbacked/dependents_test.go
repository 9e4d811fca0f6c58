package chartbacked

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/controller/kit"
	"github.com/kraan-io/kraan-operator/internal/helm"
	"github.com/kraan-io/kraan-operator/internal/watches"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

// collectionReads records the LISTs and WATCHes the operator's clients
// send, with whether they asked for metadata only.
type collectionReads struct {
	mu    sync.Mutex
	reads []collectionRead
}

type collectionRead struct {
	path         string
	metadataOnly bool
}

func (c *collectionReads) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		if req.Method == http.MethodGet {
			c.mu.Lock()
			c.reads = append(c.reads, collectionRead{path: req.URL.Path,
				metadataOnly: strings.Contains(req.Header.Get("Accept"), "as=PartialObjectMetadata")})
			c.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

// of returns the reads of the collection whose path ends in resource.
func (c *collectionReads) of(resource string) []collectionRead {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []collectionRead
	for _, r := range c.reads {
		if strings.HasSuffix(r.path, "/"+resource) {
			out = append(out, r)
		}
	}
	return out
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// A chart that renders a ConfigMap makes the operator watch every ConfigMap
// of the watched namespaces, a tenant's megabytes among them. That watch
// asks for metadata only and keeps the controller reference and little else:
// no ConfigMap is listed, watched or cached whole.
func TestDependentsCache_MetadataOnly(t *testing.T) {
	g := NewWithT(t)
	list, err := watches.Load(filepath.Join("testdata", "watches.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	env, err := testenv.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })
	_, err = envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{
		Paths: []string{filepath.Join("testdata", "crds")}, ErrorIfPathMissing: true,
	})
	g.Expect(err).NotTo(HaveOccurred())
	reads := &collectionReads{}
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(reads.wrap)
	mgr := testenv.NewManager(t, cfg)
	engine, err := helm.NewEngine(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(engine.Close)
	dependents, err := NewDependentsCache(mgr, nil)
	g.Expect(err).NotTo(HaveOccurred())
	for _, w := range list {
		g.Expect(Setup(mgr, engine, w, Options{ControllerOptions: kit.ControllerOptions{MaxConcurrentReconciles: 2},
			Dependents: dependents})).To(Succeed())
	}
	testenv.RunManager(t, mgr)
	c := env.Client
	ctx := context.Background()
	testenv.CreateNamespace(t, c, "tenant")
	payload := strings.Repeat("x", 100<<10)
	for i := range 20 {
		g.Expect(c.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: fmt.Sprintf("blob-%02d", i),
				Annotations: map[string]string{"note": payload[:1000]}},
			Data: map[string]string{"blob": payload},
		})).To(Succeed())
	}
	gadget := newGadget("tenant", "one", map[string]any{"message": "hello", "replicas": int64(1)}, nil)
	g.Expect(c.Create(ctx, gadget)).To(Succeed())
	g.Eventually(conditionOf(c, gadget, kraanv1.ReadyCondition), 30*time.Second).Should(Equal("True/ReleaseSucceeded"))

	g.Eventually(func(g Gomega) {
		cms := &metav1.PartialObjectMetadataList{}
		cms.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
		g.Expect(dependents.List(ctx, cms, client.InNamespace("tenant"))).To(Succeed())
		names := map[string]metav1.PartialObjectMetadata{}
		for _, cm := range cms.Items {
			names[cm.Name] = cm
			g.Expect(cm.Annotations).To(BeEmpty(), cm.Name)
		}
		g.Expect(names).To(HaveKey("blob-00"))
		g.Expect(names).To(HaveKey("one-config"))
		g.Expect(names["one-config"].OwnerReferences).To(ConsistOf(HaveField("Name", "one")))
	}, 30*time.Second).Should(Succeed())
	configMapReads := reads.of("configmaps")
	g.Expect(configMapReads).NotTo(BeEmpty(), "the ConfigMaps the chart renders are watched")
	for _, r := range configMapReads {
		g.Expect(r.metadataOnly).To(BeTrue(), "%s was read whole", r.path)
	}
}
