package helm

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/chart/common"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kraan-io/kraan-operator/internal/helm/sandbox"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

// Issue #42, item 3: with the sandbox, an install and an upgrade deploy
// exactly what Helm renders in process, the records keep the chart as it
// came, and a chart whose templates never end or fill memory fails its
// release naming the bound, with nothing applied, while the next release
// installs.
func TestEngine_RenderInSandbox(t *testing.T) {
	env, engine := startEngine(t)
	engine.SignRecordsWith(testenv.RecordKey)
	g := NewWithT(t)
	g.Expect(engine.RenderInSandbox(sandbox.Limits{Timeout: 5 * time.Second, Memory: 192 << 20})).To(Succeed())
	ctx := context.Background()
	g.Expect(env.Client.Create(ctx, namespaceObject("sandboxed"))).To(Succeed())
	g.Expect(env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "sandboxed", Name: "looked-up"},
		Data: map[string]string{"k": "from the cluster"}})).To(Succeed())

	req := interruptibleRequest(g, "sandboxed")
	lookup := &common.File{Name: "templates/lookup.yaml", Data: []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: copied
data:
  k: {{ (lookup "v1" "ConfigMap" .Release.Namespace "looked-up").data.k | quote }}
  revision: {{ .Release.Revision | quote }}
`)}
	chrt := *req.Desired.Chart
	chrt.Templates = append(append([]*common.File{}, chrt.Templates...), lookup)
	req.Desired.Chart = &chrt
	_, err := engine.Run(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	copied := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: "sandboxed", Name: "copied"}, copied)).To(Succeed())
	g.Expect(copied.Data).To(Equal(map[string]string{"k": "from the cluster", "revision": "1"}))

	req.Desired.Values, req.Desired.ChartDigest = map[string]any{"message": "two"}, "sha256:two"
	_, err = engine.Run(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: "sandboxed", Name: "copied"}, copied)).To(Succeed())
	g.Expect(copied.Data["revision"]).To(Equal("2"))

	cfg, err := engine.configFor(req.Target, testLogHandler(t), nil)
	g.Expect(err).NotTo(HaveOccurred())
	stored, err := cfg.Releases.Get("app", 2)
	g.Expect(err).NotTo(HaveOccurred())
	rel, err := v1Release(stored)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rel.Chart.Templates).To(ContainElement(HaveField("Data", Equal(lookup.Data))), "the record keeps the chart's own templates")
	g.Expect(rel.Manifest).To(ContainSubstring(`k: "from the cluster"`))

	for name, template := range map[string]string{
		"never-ends": "{{ range 1000000000000 }}{{ range 1000000000000 }}{{ end }}{{ end }}",
		"fills":      `{{ range until 1000000 }}{{ repeat 100000 "x" }}{{ end }}`,
	} {
		bad := interruptibleRequest(g, "sandboxed")
		bad.Target.ReleaseName = name
		c := *bad.Desired.Chart
		c.Templates = []*common.File{{Name: "templates/bad.yaml", Data: []byte(template)}}
		bad.Desired.Chart = &c
		res, err := engine.Run(ctx, bad)
		if err == nil {
			for _, s := range res.Taken {
				err = errors.Join(err, s.Err)
			}
		}
		limit := &sandbox.LimitError{}
		g.Expect(errors.As(err, &limit)).To(BeTrue(), "%s: %v", name, err)
		g.Expect(err.Error()).To(ContainSubstring("--"), name)
	}
	deployments := &appsv1.DeploymentList{}
	g.Expect(env.Client.List(ctx, deployments)).To(Succeed())
	g.Expect(deployments.Items).To(HaveLen(1), "only the good release's Deployment")
}
