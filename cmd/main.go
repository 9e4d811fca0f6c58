// Command kraan-operator runs the operator's controllers: AddonsLayer,
// HelmRelease and Habitat. This file only wires the manager: flags, scheme,
// controllers, probes and metrics.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	habitatv1 "github.com/kraan-io/kraan-operator/api/habitat/v1alpha1"
	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/controller/addonslayer"
	"github.com/kraan-io/kraan-operator/internal/controller/kit"
	"github.com/kraan-io/kraan-operator/internal/health"
	"github.com/kraan-io/kraan-operator/internal/metricsauth"
	"github.com/kraan-io/kraan-operator/internal/olm"
	"github.com/kraan-io/kraan-operator/internal/operator"
)

// leaderElectionID names the Lease replicas compete for.
const leaderElectionID = "kraan-operator.kraan.io"

func main() {
	os.Exit(run(ctrl.SetupSignalHandler(), os.Args[1:], os.Stderr))
}

// run starts the manager and blocks until ctx is cancelled; it returns the
// process exit code (0 after a graceful shutdown, 2 on bad flags).
func run(ctx context.Context, args []string, output io.Writer) int {
	opts, err := parseOptions(args, output)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		_, _ = fmt.Fprintln(output, err)
		return 2
	}
	zopts, _ := opts.zapOptions() // checked by parseOptions
	zopts.DestWriter = output
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(zopts)))
	log := ctrl.Log.WithName("setup")
	if len(opts.fromEnv) > 0 {
		log.Info("Flags set from the environment", "variables", opts.fromEnv)
	}
	opts, read := withSettings(ctx, log, args, output, opts)
	percent := setGCPercent()
	renders := int64(opts.renderLimits.Concurrent) * opts.renderLimits.Memory
	if limit := setMemoryLimitFromCgroup(cgroupRoot, renders); limit > 0 {
		log.Info("Go memory limit follows the container's", "bytes", limit)
	}
	log.V(1).Info("Go garbage collector", "gcPercent", percent)

	if err := startManager(ctx, opts, read); err != nil {
		log.Error(err, "Operator stopped with an error")
		return 1
	}
	log.Info("Operator stopped")
	return 0
}

func newScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(kraanv1.AddToScheme(scheme))
	utilruntime.Must(habitatv1.AddToScheme(scheme))
	utilruntime.Must(sourcev1.AddToScheme(scheme))
	return scheme
}

// restConfig loads --kubeconfig, or the configuration controller-runtime
// finds (in-cluster first). Both come without a client-side rate limit, as
// ctrl.GetConfig makes it: the API server's priority and fairness applies.
// Read as it is, a kubeconfig would get client-go's 5 requests per second,
// which throttled a layer's apply of 10 HelmReleases to 14 seconds.
//
// Responses are not gzipped: the operator talks to the API server of its
// own cluster, where compression buys no time and costs CPU on both ends,
// and each open watch kept a decompressor of ~40 KiB (2.5 MiB of heap at
// 1000 releases). Remote clusters (spec.kubeConfig) keep it.
func restConfig(kubeconfig string) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if kubeconfig == "" {
		cfg, err = ctrl.GetConfig()
	} else {
		cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err == nil && cfg.QPS == 0 {
			cfg.QPS = -1
		}
	}
	if err != nil {
		return nil, err
	}
	cfg.DisableCompression = true
	return cfg, nil
}

// metricsOptions configures the metrics endpoint from the flags.
func metricsOptions(opts *options) metricsserver.Options {
	metrics := metricsserver.Options{BindAddress: opts.metricsAddr, SecureServing: opts.metricsSecure,
		CertDir: opts.metricsCertDir, CertName: metricsCertName, KeyName: metricsKeyName}
	if opts.metricsSecure {
		// Only callers the API server authenticates and authorizes for
		// `get /metrics` may scrape.
		metrics.FilterProvider = metricsauth.Filter
	}
	return metrics
}

func startManager(ctx context.Context, opts *options, read settings) error {
	cfg, err := restConfig(opts.kubeconfig)
	if err != nil {
		return fmt.Errorf("loading the Kubernetes client configuration: %w", err)
	}
	ctx, restart := context.WithCancel(ctx)
	defer restart()
	metrics := metricsOptions(opts)
	chartKinds, err := opts.loadWatches()
	if err != nil {
		return err
	}
	selector, err := opts.labelSelector()
	if err != nil {
		return err
	}
	watchConfigs, err := opts.watchConfigsSelector()
	if err != nil {
		return err
	}
	scheme := newScheme()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme,
		Metrics:                       metrics,
		HealthProbeBindAddress:        opts.probeAddr,
		PprofBindAddress:              opts.pprofAddr,
		LeaderElection:                opts.leaderElect,
		LeaderElectionID:              leaderElectionIDFor(selector),
		LeaderElectionNamespace:       opts.leaderElectionNamespace,
		LeaseDuration:                 &opts.leaseDuration,
		RenewDeadline:                 &opts.renewDeadline,
		RetryPeriod:                   &opts.retryPeriod,
		LeaderElectionReleaseOnCancel: true, // the next leader starts at once, not after the lease expires
		GracefulShutdownTimeout:       &opts.gracefulShutdown,
		Cache:                         withLabelSelector(opts.cacheOptions(), selector, shardedKinds(scheme, chartKinds)),
	})
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	if err := addProbes(mgr, opts.namespaces()); err != nil {
		return err
	}
	if err := mgr.Add(&settingsWatch{cfg: cfg, read: read, restart: restart, log: ctrl.Log.WithName("settings")}); err != nil {
		return fmt.Errorf("watching the settings ConfigMap: %w", err)
	}
	layers := addonslayer.Options{
		DataPath: opts.dataPath, SourceHostOverride: opts.sourceHostOverride, DefaultSourceNamespace: opts.sourceNamespace,
		SnapshotNamespace: opts.ownNamespace(),
	}
	if err := operator.SetupAll(mgr, operator.Options{
		ControllerOptions: kit.ControllerOptions{
			MaxConcurrentReconciles: opts.concurrent, MinRetryDelay: opts.minRetryDelay, MaxRetryDelay: opts.maxRetryDelay,
			MinReconcileInterval: opts.minReconcileInterval,
		},
		NoCrossNamespaceRefs: opts.noCrossNamespaceRefs, DependencyRequeue: opts.requeueDependency,
		Layers: layers, DefaultServiceAccount: opts.defaultServiceAccount, ChartFetch: opts.chartFetch,
		Lockdown: opts.lockdown, PlatformNamespaces: opts.platformNamespaceList(), ArtifactLimits: opts.artifactLimits,
		MaxRecordSize: opts.maxRecordSize, RenderLimits: opts.renderLimits,
		Watches: chartKinds, WatchNamespaces: opts.namespaces(),
		RecordKeySecret: opts.recordKeySecret(), HelmDefaults: opts.helmDefaults,
		MaxConcurrentRollouts: opts.maxConcurrentRollouts,
		HelmRunGracePeriod:    opts.helmRunGracePeriod,
		WatchConfigs:          watchConfigs,
	}); err != nil {
		return fmt.Errorf("setting up controllers: %w", err)
	}
	if olm.RunningUnderOLM() {
		// OLM must not replace the operator while a layer is mid-rollout.
		if err := olm.SetupUpgradeable(mgr, os.Getenv("RUNTIME_NAMESPACE")); err != nil {
			return fmt.Errorf("setting up the OLM OperatorCondition: %w", err)
		}
	}
	ctrl.Log.WithName("setup").Info("Starting the operator", "leaderElection", opts.leaderElect)
	return mgr.Start(ctx)
}

// addProbes registers liveness (the process serves HTTP) and readiness (the
// informer caches have synced once). Neither calls the API server, so a slow
// or briefly unreachable API server cannot make them flap and restart the pod.
func addProbes(mgr ctrl.Manager, watchNamespaces []string) error {
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("adding the liveness check: %w", err)
	}
	synced := health.NewCacheSyncCheck(mgr.GetCache(), operator.WatchedKinds(watchNamespaces)...)
	if err := mgr.Add(synced); err != nil {
		return fmt.Errorf("adding the cache sync watcher: %w", err)
	}
	if err := mgr.AddReadyzCheck("informers-synced", synced.Check); err != nil {
		return fmt.Errorf("adding the readiness check: %w", err)
	}
	return nil
}
