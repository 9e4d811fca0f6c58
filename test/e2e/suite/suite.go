package suite

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/go-logr/logr"
	uberzap "go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kraan-io/kraan-operator/internal/controller/kit"
	"github.com/kraan-io/kraan-operator/internal/defaults"
	"github.com/kraan-io/kraan-operator/internal/operator"
	"github.com/kraan-io/kraan-operator/internal/watches"
	"github.com/kraan-io/kraan-operator/test/localplane"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

// Options say what a suite needs besides the plane and its admin client.
type Options struct {
	// InstallCRDs installs the operator's and Flux's source CRDs
	// (testenv.InstallCRDs, which reads KRAAN_SOURCE_CRDS).
	InstallCRDs bool
	// ControllerManagerArgs are added to the plane's kube-controller-manager
	// flags (a throttled plane: --kube-api-qps).
	ControllerManagerArgs []string
	// Operator, when set, runs the operator's manager in the test process.
	// Without it controller-runtime's logger is discarded: envtest's CRD
	// installer logs through it, and the processes under test log to files.
	Operator *Operator
}

// Operator configures the manager Run starts in the test process.
type Operator struct {
	// Watches loads the repository's watches.yaml, so the chart-backed kinds
	// run as well as the Go controllers.
	Watches bool
	// HelmDefaults is what --feature-gates=UseHelm3Defaults=true sets:
	// how releases that leave Flux v1.6's new fields unset wait, apply and
	// post-render.
	HelmDefaults defaults.Defaults
}

// OperatorLog holds what the in-process operator logged at debug level.
var OperatorLog = &testenv.LockedBuffer{}

// logLevel is the least level of the manager's log, written to standard
// error: KRAAN_E2E_LOG=debug or error; quiet by default.
func logLevel() zapcore.Level {
	switch os.Getenv("KRAAN_E2E_LOG") {
	case "debug":
		return zapcore.DebugLevel
	case "error":
		return zapcore.ErrorLevel
	default:
		return zapcore.DPanicLevel
	}
}

// Suite is the running plane a suite's tests share.
type Suite struct {
	// Config is the plane's admin client configuration.
	Config *rest.Config
	// Kubeconfig is the path of the plane's admin kubeconfig file.
	Kubeconfig string
	// Client is an admin client with testenv.Scheme.
	Client client.Client
	// Plane is the running plane, for suites that restart its apiserver.
	Plane *localplane.Plane

	ctx      context.Context
	cleanups []func(code int)
}

// Run starts the plane as o says, calls setup (when not nil), runs the tests
// and stops everything again. It returns the exit code for os.Exit: 1, after
// printing the error, when start-up or setup fails.
func Run(m *testing.M, o Options, setup func(*Suite) error) (code int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := &Suite{ctx: ctx}
	defer func() { s.cleanUp(code) }()
	if err := s.start(o); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if setup != nil {
		if err := setup(s); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return m.Run()
}

// Context is cancelled once the tests have run and the cleanups returned.
func (s *Suite) Context() context.Context { return s.ctx }

// Cleanup registers f to run after the tests, with their exit code (1 when
// start-up failed), before what was registered earlier: the last started
// stops first, and the plane last of all.
func (s *Suite) Cleanup(f func(code int)) { s.cleanups = append(s.cleanups, f) }

func (s *Suite) cleanUp(code int) {
	for i := len(s.cleanups) - 1; i >= 0; i-- {
		s.cleanups[i](code)
	}
	s.cleanups = nil
}

// start starts the plane, installs the CRDs, creates the client and starts
// the operator, in that order, as o asks.
func (s *Suite) start(o Options) error {
	// The logger is set before anything slow: controller-runtime replaces a
	// logger still unset 30 s after start-up, when the plane was starting,
	// with one that drops everything for good, and OperatorLog stays empty.
	if o.Operator == nil {
		ctrl.SetLogger(logr.Discard())
	} else {
		setOperatorLogger()
	}
	plane, err := localplane.Start(s.ctx, localplane.Options{Dir: os.Getenv("KRAAN_E2E_PLANE_DIR"),
		ControllerManagerArgs: o.ControllerManagerArgs})
	if err != nil {
		return err
	}
	s.Cleanup(func(int) { _ = plane.Stop() })
	s.Plane, s.Config, s.Kubeconfig = plane, plane.RESTConfig(), plane.Kubeconfig()
	if o.Operator != nil {
		// The manager shares the config; client-go's default of 5 QPS would
		// throttle its reconcilers by seconds.
		s.Config.QPS, s.Config.Burst = 50, 100
	}
	if o.InstallCRDs {
		if err := testenv.InstallCRDs(s.Config); err != nil {
			return err
		}
	}
	if s.Client, err = client.New(s.Config, client.Options{Scheme: testenv.Scheme}); err != nil {
		return err
	}
	if o.Operator != nil {
		return s.startOperator(*o.Operator)
	}
	return nil
}

// setOperatorLogger sends the operator's log to standard error at
// KRAAN_E2E_LOG's level, and to OperatorLog with everything --log-level=debug
// would print, for the tests that search it.
func setOperatorLogger() {
	debugCore := zapcore.NewCore(zapcore.NewJSONEncoder(uberzap.NewDevelopmentEncoderConfig()),
		zapcore.AddSync(OperatorLog), zapcore.DebugLevel)
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.Level(logLevel()),
		zap.RawZapOpts(uberzap.WrapCore(func(c zapcore.Core) zapcore.Core { return zapcore.NewTee(c, debugCore) }))))
}

// startOperator runs the operator's manager, as cmd/main.go wires it, until
// the cleanups run; its chart artifacts go to a temporary directory.
func (s *Suite) startOperator(o Operator) error {
	opts := operator.Options{ControllerOptions: kit.ControllerOptions{MaxConcurrentReconciles: 4}, RecordKey: testenv.RecordKey,
		HelmDefaults: o.HelmDefaults}
	if o.Watches {
		file, err := testenv.WatchesFile()
		if err != nil {
			return err
		}
		chartKinds, err := watches.Load(file)
		if err != nil {
			return err
		}
		opts.Watches = chartKinds
	}
	mgr, err := ctrl.NewManager(s.Config, ctrl.Options{
		Scheme:                 testenv.Scheme,
		Cache:                  operator.CacheOptions(nil), // as the binary caches
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	if opts.ChartArtifactsDir, err = os.MkdirTemp("", "kraan-e2e-charts-"); err != nil {
		return err
	}
	if err := operator.SetupAll(mgr, opts); err != nil {
		_ = os.RemoveAll(opts.ChartArtifactsDir)
		return err
	}
	ctx, cancel := context.WithCancel(s.ctx)
	stopped := make(chan error, 1)
	go func() {
		err := mgr.Start(ctx)
		_ = os.RemoveAll(opts.ChartArtifactsDir)
		stopped <- err
	}()
	s.Cleanup(func(int) {
		cancel()
		if err := <-stopped; err != nil {
			fmt.Fprintln(os.Stderr, "operator:", err)
		}
	})
	return nil
}
