package helm

import (
	"bytes"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kraan-io/kraan-operator/test/testenv"
)

// pathCounter counts the GETs of discovery and OpenAPI documents a client
// makes.
type pathCounter struct {
	next http.RoundTripper
	mu   sync.Mutex
	gets map[string]int
}

func (c *pathCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	if p := req.URL.Path; req.Method == http.MethodGet && (strings.HasPrefix(p, "/openapi/") || p == "/api" || p == "/apis" || p == "/version") {
		c.mu.Lock()
		c.gets[p]++
		c.mu.Unlock()
	}
	return c.next.RoundTrip(req)
}

func (c *pathCounter) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.gets))
	for k, v := range c.gets {
		out[k] = v
	}
	return out
}

// startCountingEngine starts an API server and an engine on it whose
// discovery and OpenAPI reads are counted.
func startCountingEngine(t *testing.T) (*testenv.Env, *Engine, *pathCounter) {
	t.Helper()
	g := NewWithT(t)
	env, err := testenv.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })
	counter := &pathCounter{gets: map[string]int{}}
	config := rest.CopyConfig(env.Config)
	config.Wrap(func(rt http.RoundTripper) http.RoundTripper { counter.next = rt; return counter })
	engine, err := NewEngine(config)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(engine.Close)
	return env, engine, counter
}

// TestWarm: after Warm, a release's first action finds discovery and the
// OpenAPI documents of core and apps/v1 kinds already read and parsed: its
// Build requests none of them. Warm itself creates nothing.
func TestWarm(t *testing.T) {
	g := NewWithT(t)
	env, engine, counter := startCountingEngine(t)

	g.Expect(engine.Warm(t.Context())).To(Succeed())
	warmed := counter.snapshot()
	g.Expect(warmed).To(HaveKey("/openapi/v3/api/v1"), "Warm parses the core group's document")
	g.Expect(warmed).To(HaveKey("/openapi/v3/apis/apps/v1"), "and apps/v1's")

	target := Target{ReleaseName: "first", Namespace: "default", StorageNamespace: "default"}
	cfg, err := engine.configFor(target, slog.DiscardHandler, nil)
	g.Expect(err).NotTo(HaveOccurred())
	manifest := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec:\n  selector:\n    matchLabels: {a: b}\n" +
		"  template:\n    metadata:\n      labels: {a: b}\n    spec:\n      containers:\n      - {name: c, image: c}\n" +
		"---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"
	_, err = cfg.KubeClient.Build(bytes.NewBufferString(manifest), true)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(counter.snapshot()).To(Equal(warmed), "the first action reads no discovery or OpenAPI document again")

	var cms corev1.ConfigMapList
	g.Expect(env.Client.List(t.Context(), &cms, client.InNamespace("default"))).To(Succeed())
	for _, cm := range cms.Items {
		g.Expect(cm.Name).NotTo(Equal("kraan-warm-up"), "Warm writes nothing")
	}
}

// TestSharedValidators_KeepAnswersNotDocuments: a kept validator remembers
// per kind whether the API server validates its fields, without keeping the
// OpenAPI documents it read that from: a kind validated before costs no
// request, a new kind of the same group reads the group's document again.
func TestSharedValidators_KeepAnswersNotDocuments(t *testing.T) {
	g := NewWithT(t)
	_, engine, counter := startCountingEngine(t)
	build := func(manifest string) int {
		cfg, err := engine.configFor(Target{ReleaseName: "r", Namespace: "default", StorageNamespace: "default"},
			slog.DiscardHandler, nil)
		g.Expect(err).NotTo(HaveOccurred())
		_, err = cfg.KubeClient.Build(bytes.NewBufferString(manifest), true)
		g.Expect(err).NotTo(HaveOccurred())
		return counter.snapshot()["/openapi/v3/api/v1"]
	}
	configMap := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"
	g.Expect(build(configMap)).To(Equal(1), "the core group's document is read for the first kind")
	g.Expect(build(configMap)).To(Equal(1), "the answer for a kind is kept")
	g.Expect(build("apiVersion: v1\nkind: Service\nmetadata:\n  name: s\nspec:\n  ports: [{port: 80}]\n")).To(
		Equal(2), "the document is not: a new kind reads it again")
}
