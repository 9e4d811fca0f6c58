package bench

import (
	"context"
	"fmt"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/kube"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kraan-io/kraan-operator/test/bench/report"
	"github.com/kraan-io/kraan-operator/test/chartrepo"
)

// sdkMeasured is the most releases the sequential floor really installs;
// beyond it the time is extrapolated linearly (one install after another
// costs the same each), and labelled so everywhere.
const sdkMeasured = 100

// installSequentially installs the releases one after another with the Helm
// SDK, each waiting until its objects are ready as a HelmRelease does: the
// floor any controller should beat.
func installSequentially(ctx context.Context, c client.Client, kubeconfig string, n int) (report.SDK, error) {
	ch, err := loader.Load(chartrepo.ChartDir("small"))
	if err != nil {
		return report.SDK{}, err
	}
	ns := "sdk"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return report.SDK{}, err
	}
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig, flags.Namespace = &kubeconfig, &ns
	cfg := &action.Configuration{}
	if err := cfg.Init(flags, ns, "secret"); err != nil {
		return report.SDK{}, err
	}
	measured := min(n, sdkMeasured)
	start := time.Now()
	for i := range measured {
		install := action.NewInstall(cfg)
		install.ReleaseName, install.Namespace = fmt.Sprintf("r%d", i), ns
		install.WaitStrategy, install.Timeout = kube.LegacyStrategy, 5*time.Minute
		if _, err := install.RunWithContext(ctx, ch, map[string]any{}); err != nil {
			return report.SDK{}, fmt.Errorf("sdk install %d: %w", i, err)
		}
	}
	took := time.Since(start).Seconds()
	return report.SDK{Seconds: took * float64(n) / float64(measured), Measured: measured, Extrapolated: measured < n}, nil
}
