package addonslayer

import (
	"context"
	"os"
	"testing"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/controller/kit"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

// A layer asking to be looked at every millisecond is looked at every
// --min-reconcile-interval (issue #42); one asking for longer keeps its
// interval.
func TestReconciler_Interval_RaisedToTheFloor(t *testing.T) {
	g := NewWithT(t)
	crds := os.Getenv("KRAAN_SOURCE_CRDS")
	g.Expect(crds).NotTo(BeEmpty(), "KRAAN_SOURCE_CRDS is not set: run the tests with `make test`")
	utilruntime.Must(sourcev1.AddToScheme(testenv.Scheme))
	env, err := testenv.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })
	_, err = envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: []string{crds}, ErrorIfPathMissing: true})
	g.Expect(err).NotTo(HaveOccurred())
	mgr := testenv.NewManager(t, env.Config)
	r, err := newReconciler(mgr, Options{ControllerOptions: kit.ControllerOptions{MinReconcileInterval: 30 * time.Second},
		DataPath: t.TempDir(), DefaultSourceNamespace: "default"})
	g.Expect(err).NotTo(HaveOccurred())
	// Not started: the reconciler reads and writes through the API server.
	r.Client, r.APIReader = env.Client, env.Client
	ctx := context.Background()
	for asked, want := range map[time.Duration]time.Duration{time.Millisecond: 30 * time.Second, time.Hour: time.Hour} {
		layer := &kraanv1.AddonsLayer{
			ObjectMeta: metav1.ObjectMeta{Name: "eager-" + asked.String()},
			Spec: kraanv1.AddonsLayerSpec{Version: "1", Interval: metav1.Duration{Duration: asked},
				Timeout: metav1.Duration{Duration: time.Minute},
				// A source that does not exist: the layer waits for it, an interval at a time.
				Source: kraanv1.SourceSpec{Name: "missing", Path: "./addons"}},
		}
		g.Expect(env.Client.Create(ctx, layer)).To(Succeed())
		res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(layer)})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.RequeueAfter).To(Equal(want), "spec.interval %s", asked)
	}
}
