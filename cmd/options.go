package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kraan-io/kraan-operator/internal/controller/helmrelease"
	"github.com/kraan-io/kraan-operator/internal/controller/kit"
	"github.com/kraan-io/kraan-operator/internal/defaults"
	"github.com/kraan-io/kraan-operator/internal/helm"
	"github.com/kraan-io/kraan-operator/internal/helm/chart"
	"github.com/kraan-io/kraan-operator/internal/helm/sandbox"
	"github.com/kraan-io/kraan-operator/internal/operator"
	"github.com/kraan-io/kraan-operator/internal/pace"
	"github.com/kraan-io/kraan-operator/internal/source"
)

// options are the operator's command-line flags. They live on a FlagSet of
// their own: libraries register flags on flag.CommandLine at init time (klog,
// controller-runtime's --kubeconfig), and parsing that global set would leak
// them into our interface, as glog's did in the Habitat operator.
type options struct {
	kubeconfig              string
	metricsAddr             string
	metricsSecure           bool
	metricsCertDir          string
	probeAddr               string
	pprofAddr               string
	leaderElect             bool
	leaderElectionNamespace string
	leaseDuration           time.Duration
	renewDeadline           time.Duration
	retryPeriod             time.Duration
	gracefulShutdown        time.Duration
	concurrent              int
	maxConcurrentRollouts   int
	helmRunGracePeriod      time.Duration
	minRetryDelay           time.Duration
	maxRetryDelay           time.Duration
	minReconcileInterval    time.Duration
	logFormat               string
	logLevel                string
	dataPath                string
	sourceHostOverride      string
	sourceNamespace         string
	defaultServiceAccount   string
	lockdown                bool
	// fromSettings are the keys of the settings ConfigMap that set flags.
	fromSettings         []string
	platformNamespaces   string
	noCrossNamespaceRefs bool
	requeueDependency    time.Duration
	watchLabelSelector   string
	watchConfigs         string
	watchesFile          string
	watchNamespace       string
	recordKeySecretName  string
	recordKeyNamespace   string
	// chartFetch are the caps on what chart repositories and registries may
	// send, and the sizes of the caches of what they sent.
	chartFetch chart.Options
	// artifactLimits bound what a Flux source artifact may extract to
	// (MaxUntarBytes, MaxFileBytes, MaxFiles; the rest is unset).
	artifactLimits source.Options
	// maxRecordSize bounds a Helm release record before it is encoded.
	maxRecordSize int64
	// renderLimits bound the worker each chart's templates run in.
	renderLimits sandbox.Limits
	// helmDefaults are the defaults of the fields Flux v1.5/v1.6 added,
	// switched to Helm 3's by --feature-gates=UseHelm3Defaults=true.
	helmDefaults defaults.Defaults
	// fromEnv names the environment variables that set flags (envflags.go).
	fromEnv []string
}

func newFlagSet(opts *options, output io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("kraan-operator", flag.ContinueOnError)
	fs.SetOutput(output)
	fs.Usage = func() {
		_, _ = fmt.Fprintln(fs.Output(), "Usage of kraan-operator:")
		fs.PrintDefaults()
		_, _ = fmt.Fprintf(fs.Output(), "\nEvery flag can also be set by the environment variable %s and its name in upper case, "+
			"dashes as underscores (--log-level: %s); the command line wins.\n", envPrefix, flagEnvName("log-level"))
	}
	fs.StringVar(&opts.kubeconfig, "kubeconfig", "",
		"Path to a kubeconfig; defaults to $KUBECONFIG, then the in-cluster configuration.")
	fs.StringVar(&opts.metricsAddr, "metrics-bind-address", ":8443",
		"Address the metrics endpoint binds to; 0 disables it.")
	fs.BoolVar(&opts.metricsSecure, "metrics-secure", true,
		"Serve metrics over HTTPS, authenticated and authorized by the API server.")
	fs.StringVar(&opts.metricsCertDir, "metrics-cert-dir", "",
		"Directory holding the metrics endpoint's serving certificate and key (tls.crt, tls.key), reloaded when they change; "+
			"empty serves a self-signed certificate, which no scraper can verify.")
	fs.StringVar(&opts.probeAddr, "health-probe-bind-address", ":8081",
		"Address the /healthz and /readyz probes bind to.")
	fs.StringVar(&opts.pprofAddr, "pprof-bind-address", "0",
		"Address Go's pprof profiles (/debug/pprof/) bind to; 0, the default, disables them.")
	fs.BoolVar(&opts.leaderElect, "leader-elect", false,
		"Elect a leader on a Lease so that only one replica reconciles.")
	fs.StringVar(&opts.leaderElectionNamespace, "leader-election-namespace", "",
		"Namespace of the leader election Lease; defaults to the operator's namespace.")
	// Flux's names and meaning; controller-runtime's defaults. A shorter lease
	// hands over sooner after a leader dies without releasing it (a crash, a
	// lost node), at the price of more Lease writes.
	fs.DurationVar(&opts.leaseDuration, "leader-election-lease-duration", 15*time.Second,
		"How long standby replicas wait before taking over a Lease its leader stopped renewing.")
	fs.DurationVar(&opts.renewDeadline, "leader-election-renew-deadline", 10*time.Second,
		"How long the leader retries renewing its Lease before it gives up leading.")
	fs.DurationVar(&opts.retryPeriod, "leader-election-retry-period", 2*time.Second,
		"How often replicas try to acquire or renew the Lease.")
	fs.DurationVar(&opts.gracefulShutdown, "graceful-shutdown-timeout", 30*time.Second,
		"How long in-flight reconciles may run after a termination signal.")
	fs.IntVar(&opts.concurrent, "concurrent", 4, "Number of concurrent reconciles per kind.")
	fs.IntVar(&opts.maxConcurrentRollouts, "max-concurrent-rollouts", pace.DefaultMax,
		"Most HelmReleases rolling out at once. Below it the number adapts to how fast the cluster rolls out: a Helm action starts only with a slot, so its timeout measures its own rollout, never the queue.")
	fs.DurationVar(&opts.helmRunGracePeriod, "helm-run-grace-period", helmrelease.DefaultRunGracePeriod,
		"How long, once the operator is told to stop, the Helm actions in flight get to finish before it exits. Within --graceful-shutdown-timeout; a run cut anyway leaves its revision pending for the next leader to resume.")
	fs.DurationVar(&opts.minRetryDelay, "min-retry-delay", kit.DefaultMinRetryDelay,
		"The first delay before an object whose reconcile failed transiently is retried; it doubles on every failure.")
	fs.DurationVar(&opts.maxRetryDelay, "max-retry-delay", kit.DefaultMaxRetryDelay,
		"The longest delay between retries of an object whose reconcile keeps failing transiently.")
	fs.DurationVar(&opts.minReconcileInterval, "min-reconcile-interval", kit.DefaultMinReconcileInterval,
		"The shortest period an object may ask to be reconciled at: a HelmRelease's spec.interval and retryInterval, "+
			"an AddonsLayer's spec.interval, a chart-backed object's reconcile-period annotation and a HelmRepository's "+
			"spec.interval below it are raised to it. 0 keeps every period as asked.")
	fs.StringVar(&opts.logFormat, "log-format", "json", "Log format: json or console.")
	fs.StringVar(&opts.logLevel, "log-level", "info", "Log level: debug, info or error.")
	fs.StringVar(&opts.dataPath, "data-path", filepath.Join(os.TempDir(), "kraan-artifacts"),
		"Directory the AddonsLayer controller keeps fetched source artifacts in.")
	fs.StringVar(&opts.sourceHostOverride, "source-host-override", "",
		"Replace the host[:port] of Flux artifact URLs, e.g. 127.0.0.1:9090 through a port-forward (Kraan's SC_HOST).")
	fs.StringVar(&opts.sourceNamespace, "default-source-namespace", os.Getenv("RUNTIME_NAMESPACE"),
		"Namespace of an AddonsLayer's source when spec.source.namespace is empty; defaults to $RUNTIME_NAMESPACE.")
	fs.StringVar(&opts.defaultServiceAccount, "default-service-account", "",
		"Service account (in the object's namespace) that HelmReleases naming none, and the releases of chart-backed kinds "+
			"(watches.yaml) whose entry names none, impersonate. Under --multi-tenancy-lockdown a tenant's HelmRelease "+
			"impersonates \"default\" when this is empty.")
	fs.BoolVar(&opts.lockdown, "multi-tenancy-lockdown", true,
		"A HelmRelease a namespace user wrote acts as a ServiceAccount of its namespace (--default-service-account, else "+
			"\"default\"), unless it names one; HelmReleases in the operator's namespace and --platform-namespaces, and those "+
			"an AddonsLayer applied, act as the operator. False gives Flux's behaviour: every HelmRelease naming no account "+
			"acts as the operator (docs/security.md).")
	fs.StringVar(&opts.platformNamespaces, "platform-namespaces", "",
		"Comma-separated namespaces only cluster admins write, whose HelmReleases act as the operator under "+
			"--multi-tenancy-lockdown, besides the operator's own namespace.")
	fs.BoolVar(&opts.noCrossNamespaceRefs, "no-cross-namespace-refs", false,
		"Refuse HelmReleases that refer to a chart source or a dependency in another namespace (Flux's multi-tenancy lockdown).")
	fs.DurationVar(&opts.requeueDependency, "requeue-dependency", helmrelease.DefaultDependencyRequeue,
		"How often a HelmRelease waiting on its dependencies is looked at again, besides the watch on them.")
	fs.StringVar(&opts.watchLabelSelector, "watch-label-selector", "",
		"Reconcile only the HelmReleases, AddonsLayers and chart-backed objects matching this label selector, "+
			"e.g. sharding.fluxcd.io/key=shard1 (Flux's sharding); empty reconciles all.")
	fs.StringVar(&opts.watchConfigs, "watch-configs-label-selector", helmrelease.DefaultWatchConfigsLabelSelector,
		"valuesFrom ConfigMaps and Secrets matching this label selector reconcile their HelmReleases as soon as they change "+
			"(Flux's flag and default); others are read at each reconcile. Empty watches all, at the cost of caching "+
			"every ConfigMap's metadata.")
	fs.StringVar(&opts.watchesFile, "watches-file", defaultWatchesFile,
		"watches.yaml listing the chart-backed kinds; relative to the working directory, then "+imageWatchesFile+".")
	fs.StringVar(&opts.watchNamespace, "watch-namespace", os.Getenv("WATCH_NAMESPACE"),
		"Comma-separated namespaces to watch; empty watches all. Defaults to $WATCH_NAMESPACE.")
	fs.StringVar(&opts.recordKeySecretName, "release-record-key-secret", operator.DefaultRecordKeySecret,
		"Secret holding the key that signs the Helm release records the operator writes; created with a random key when absent. "+
			"Records whose signature does not verify are never replayed.")
	fs.StringVar(&opts.recordKeyNamespace, "release-record-key-namespace", os.Getenv("RUNTIME_NAMESPACE"),
		"Namespace of --release-record-key-secret: the operator's own, which tenants cannot read. "+
			"Defaults to $RUNTIME_NAMESPACE, then --leader-election-namespace, then the pod's namespace.")
	fs.Var(featureGates{&opts.helmDefaults}, "feature-gates",
		"Comma-separated Name=true|false feature gates, as Flux's: UseHelm3Defaults=true gives HelmReleases Helm 3's "+
			"behaviour where a field is unset (client-side apply on install, legacy waits, no post-rendering of hooks).")
	addChartFetchFlags(fs, &opts.chartFetch)
	addArtifactFlags(fs, &opts.artifactLimits)
	opts.maxRecordSize = helm.DefaultMaxRecordBytes
	addRenderFlags(fs, &opts.renderLimits)
	fs.Var(byteSize{&opts.maxRecordSize}, flagName(helm.FlagMaxRecordSize),
		"Most a Helm release record may hold before it is encoded (chart files, manifest, hooks, values); "+
			"a revision over it fails before anything is applied.")
	return fs
}

// addChartFetchFlags declares the caps on what a chart repository or OCI
// registry may send, and the caches' sizes. Sizes are Kubernetes quantities
// ("10Mi", "512Ki", "1048576").
func addChartFetchFlags(fs *flag.FlagSet, o *chart.Options) {
	o.MaxIndexSize, o.MaxChartSize, o.MaxManifestSize = chart.DefaultMaxIndexSize, chart.DefaultMaxChartSize, chart.DefaultMaxManifestSize
	o.MaxCacheBytes, o.MaxIndexCacheBytes = chart.DefaultMaxCacheBytes, chart.DefaultMaxIndexCacheBytes
	o.MaxTags, o.MaxTagPages = chart.DefaultMaxTags, chart.DefaultMaxTagPages
	o.MaxDecompressedChartSize, o.MaxChartFileSize = chart.DefaultMaxDecompressedChartSize, chart.DefaultMaxChartFileSize
	fs.Var(byteSize{&o.MaxIndexSize}, flagName(chart.FlagMaxIndexSize),
		"Largest Helm repository index.yaml accepted.")
	fs.Var(byteSize{&o.MaxChartSize}, flagName(chart.FlagMaxChartSize),
		"Largest chart archive or OCI chart layer accepted, checked against the declared size before downloading and while reading.")
	fs.Var(byteSize{&o.MaxDecompressedChartSize}, flagName(chart.FlagMaxDecompressedChartSize),
		"Most a chart may expand to, packaged subcharts included, measured before Helm loads it: what gzip inflates, and the files' sizes summed. "+
			"Helm's loader refuses more than 100Mi whatever this says.")
	fs.Var(byteSize{&o.MaxChartFileSize}, flagName(chart.FlagMaxChartFileSize),
		"Largest file of a chart, and largest values file read from a source artifact.")
	fs.IntVar(&o.MaxChartFiles, flagName(chart.FlagMaxChartFiles), chart.DefaultMaxChartFiles,
		"Most files and directories in a chart, packaged subcharts included.")
	fs.Var(byteSize{&o.MaxManifestSize}, flagName(chart.FlagMaxManifestSize),
		"Largest OCI manifest, and page of an OCI tag list, accepted.")
	fs.IntVar(&o.MaxTags, flagName(chart.FlagMaxTags), chart.DefaultMaxTags,
		"Most tags of one OCI chart accepted.")
	fs.IntVar(&o.MaxTagPages, flagName(chart.FlagMaxTagPages), chart.DefaultMaxTagPages,
		"Most pages of one OCI tag listing followed.")
	fs.Var(byteSize{&o.MaxCacheBytes}, flagName(chart.FlagChartCacheSize),
		"Memory kept for downloaded chart archives, shared only within one repository and set of credentials.")
	fs.Var(byteSize{&o.MaxIndexCacheBytes}, flagName(chart.FlagIndexCacheSize),
		"Memory kept for Helm repository indexes (what they hold: each chart's versions, URLs and digests), and again for OCI tag lists.")
}

// addArtifactFlags declares what a Flux source artifact (of an AddonsLayer,
// or of a HelmRelease's chart) may extract to; the download itself may be at
// most --max-artifact-size too.
func addArtifactFlags(fs *flag.FlagSet, o *source.Options) {
	o.MaxUntarBytes, o.MaxFileBytes = source.DefaultMaxUntarBytes, source.DefaultMaxFileBytes
	fs.Var(byteSize{&o.MaxUntarBytes}, flagName(source.FlagMaxArtifactSize),
		"Most a source artifact may extract to, its files' sizes summed; also the largest artifact downloaded.")
	fs.Var(byteSize{&o.MaxFileBytes}, flagName(source.FlagMaxArtifactFileSize),
		"Largest file extracted from a source artifact.")
	fs.IntVar(&o.MaxFiles, flagName(source.FlagMaxArtifactFiles), source.DefaultMaxFiles,
		"Most files, directories and links in a source artifact.")
}

// checkLimits refuses counts and bounds that would let nothing through:
// tags, chart and artifact files, renders.
func (o *options) checkLimits() error {
	if o.chartFetch.MaxTags < 1 || o.chartFetch.MaxTagPages < 1 {
		return fmt.Errorf("%s and %s must be at least 1, got %d and %d", chart.FlagMaxTags, chart.FlagMaxTagPages,
			o.chartFetch.MaxTags, o.chartFetch.MaxTagPages)
	}
	if o.chartFetch.MaxChartFiles < 1 || o.artifactLimits.MaxFiles < 1 {
		return fmt.Errorf("%s and %s must be at least 1, got %d and %d", chart.FlagMaxChartFiles, source.FlagMaxArtifactFiles,
			o.chartFetch.MaxChartFiles, o.artifactLimits.MaxFiles)
	}
	if o.renderLimits.Timeout <= 0 || o.renderLimits.Concurrent < 1 {
		return fmt.Errorf("%s must be above 0 and %s at least 1, got %s and %d", sandbox.FlagTimeout, sandbox.FlagConcurrent,
			o.renderLimits.Timeout, o.renderLimits.Concurrent)
	}
	return nil
}

// addRenderFlags declares the bounds of the worker a chart's templates run
// in: what one release's templates may cost the operator.
func addRenderFlags(fs *flag.FlagSet, l *sandbox.Limits) {
	l.Memory, l.Output, l.Timeout, l.Concurrent = sandbox.DefaultMemory, sandbox.DefaultOutput, sandbox.DefaultTimeout, sandbox.DefaultConcurrent
	fs.Var(byteSize{&l.Memory}, flagName(sandbox.FlagMemory),
		"Most memory (data mapped) the worker rendering one chart's templates may use; a render over it fails its release.")
	fs.Var(byteSize{&l.Output}, flagName(sandbox.FlagOutput),
		"Most text one chart's templates may render, all files summed, and the most one template lookup may answer.")
	fs.DurationVar(&l.Timeout, flagName(sandbox.FlagTimeout), sandbox.DefaultTimeout,
		"Longest one chart's templates may take to render; the worker is killed after it.")
	fs.IntVar(&l.Concurrent, flagName(sandbox.FlagConcurrent), sandbox.DefaultConcurrent,
		"Most render workers running at once; each may use --max-render-memory.")
}

// flagName is a flag's name without its leading dashes.
func flagName(flag string) string {
	return strings.TrimLeft(flag, "-")
}

// byteSize is a flag holding a positive size in bytes, written as a
// Kubernetes quantity: "10Mi", "50M", "1048576".
type byteSize struct{ bytes *int64 }

func (b byteSize) String() string {
	if b.bytes == nil {
		return ""
	}
	return resource.NewQuantity(*b.bytes, resource.BinarySI).String()
}

func (b byteSize) Set(s string) error {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return fmt.Errorf("want a size such as 10Mi, 512Ki or 1048576: %w", err)
	}
	if q.Sign() <= 0 {
		return fmt.Errorf("want a size above 0, got %s", s)
	}
	*b.bytes = q.Value()
	return nil
}

// parseOptions parses args, then the KRAAN_* environment variables of the
// flags args does not set (envflags.go), into options and checks them.
func parseOptions(args []string, output io.Writer) (*options, error) {
	return parseOptionsEnv(args, output, os.LookupEnv)
}

// parseOptionsEnv is parseOptions reading the environment through lookup.
func parseOptionsEnv(args []string, output io.Writer, lookup func(string) (string, bool)) (*options, error) {
	return parseOptionsWithSettings(args, output, lookup, nil)
}
