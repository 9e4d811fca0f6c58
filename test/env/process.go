package env

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kraan-io/kraan-operator/internal/controller/addonslayer"
	"github.com/kraan-io/kraan-operator/internal/controller/kit"
	"github.com/kraan-io/kraan-operator/internal/operator"
	"github.com/kraan-io/kraan-operator/internal/watches"
	"github.com/kraan-io/kraan-operator/test/localplane"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

// StartSourceController runs the real source-controller against the plane
// of kubeconfig, serving artifacts from storage, with its log beside it
// (<storage>.log). Stop the returned process when done.
func StartSourceController(bin, kubeconfig, storage string) (*localplane.Process, error) {
	if err := os.MkdirAll(storage, 0o750); err != nil { // source-controller does not create it
		return nil, err
	}
	var ports [3]int
	for i := range ports {
		p, err := localplane.FreePort()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	storageAddr := "127.0.0.1:" + strconv.Itoa(ports[0])
	p, err := localplane.StartProcess(localplane.ProcessOptions{
		Name: filepath.Base(storage), Dir: filepath.Dir(storage), Binary: bin,
		Args: []string{"--storage-path", storage, "--storage-addr", storageAddr, "--storage-adv-addr", storageAddr,
			"--metrics-addr", fmt.Sprintf("127.0.0.1:%d", ports[1]), "--health-addr", fmt.Sprintf("127.0.0.1:%d", ports[2]),
			"--watch-all-namespaces", "--enable-leader-election=false", "--log-level", "info"},
		Env: []string{"KUBECONFIG=" + kubeconfig}, // it has no --kubeconfig flag
	})
	if err != nil {
		return nil, fmt.Errorf("starting source-controller: %w", err)
	}
	return p, nil
}

// startOperator runs the operator's manager (every controller, the
// chart-backed ones included) in this process, logging to <dir>/operator.log, and returns the function that stops it.
func startOperator(cfg *rest.Config, dir string) (func() error, error) {
	opts, err := operatorOptions(dir)
	if err != nil {
		return nil, err
	}
	// client-go's default 20 QPS throttles a burst of server-side dry runs by
	// seconds; Flux controllers run with 50 QPS, burst 300.
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 50, 300
	logFile, err := os.Create(filepath.Join(dir, "operator.log"))
	if err != nil {
		return nil, err
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(logFile), zap.UseDevMode(true)))
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: testenv.Scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		// Tests start several managers in one process; names are per manager here.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err == nil {
		err = operator.SetupAll(mgr, opts)
	}
	if err != nil {
		_ = logFile.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return func() error {
		cancel()
		err := <-done
		return errors.Join(err, logFile.Close())
	}, nil
}

// operatorOptions are the controllers' settings as cmd/main.go makes them,
// with the chart-backed kinds of the repository's watches.yaml: without them
// only the Go half of Habitat would run and no Habitat would be deployed.
func operatorOptions(dir string) (operator.Options, error) {
	file, err := testenv.WatchesFile()
	if err != nil {
		return operator.Options{}, err
	}
	chartKinds, err := watches.Load(file)
	if err != nil {
		return operator.Options{}, err
	}
	return operator.Options{
		ControllerOptions: kit.ControllerOptions{MaxConcurrentReconciles: 4},
		RecordKey:         testenv.RecordKey,
		ChartArtifactsDir: filepath.Join(dir, "chart-artifacts"),
		Layers: addonslayer.Options{
			DataPath: filepath.Join(dir, "data"), DefaultSourceNamespace: FluxNamespace,
		},
		Watches: chartKinds,
	}, nil
}
