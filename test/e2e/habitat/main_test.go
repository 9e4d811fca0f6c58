// Package habitat_test proves the hybrid Habitat API end to end on the local
// control plane (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, kwok): the operator's manager, wired as cmd/main.go wires
// it with the repository's watches.yaml, runs in this process; kwok runs the
// supervisors' pods and gives them IPs, so the peer lists follow real pods.
package habitat_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kraan-io/kraan-operator/internal/controller"
	"github.com/kraan-io/kraan-operator/internal/testenv"
	"github.com/kraan-io/kraan-operator/internal/watches"
	"github.com/kraan-io/kraan-operator/test/localplane"
)

// k8s is the admin client of the plane the suite runs on.
var k8s client.Client

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// KRAAN_E2E_PLANE_DIR keeps the plane's logs for a look after the run.
	plane, err := localplane.Start(ctx, localplane.Options{Dir: os.Getenv("KRAAN_E2E_PLANE_DIR")})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = plane.Stop() }()
	cfg := plane.RESTConfig()
	cfg.QPS, cfg.Burst = 50, 100 // as the operator's own default flags
	if err := testenv.InstallCRDs(cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if k8s, err = client.New(cfg, client.Options{Scheme: testenv.Scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	stopped, err := startOperator(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	cancel()
	if err := <-stopped; err != nil {
		fmt.Fprintln(os.Stderr, "operator:", err)
	}
	return code
}

// startOperator runs the operator's manager with the repository's
// watches.yaml; the returned channel yields its error once ctx is cancelled.
func startOperator(ctx context.Context, cfg *rest.Config) (<-chan error, error) {
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.Level(zapLevel())))
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	chartKinds, err := watches.Load(filepath.Join(root, "watches.yaml"))
	if err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 testenv.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	dir, err := os.MkdirTemp("", "kraan-e2e-habitat-")
	if err != nil {
		return nil, err
	}
	err = controller.SetupAll(mgr, controller.Options{MaxConcurrentReconciles: 4, ChartArtifactsDir: dir, Watches: chartKinds})
	if err != nil {
		return nil, err
	}
	stopped := make(chan error, 1)
	go func() {
		stopped <- mgr.Start(ctx)
		_ = os.RemoveAll(dir)
	}()
	return stopped, nil
}
