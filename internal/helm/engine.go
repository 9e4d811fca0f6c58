package helm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/go-logr/logr"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/kube"
	"helm.sh/helm/v4/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/helm/sandbox"
	"github.com/kraan-io/kraan-operator/internal/rollout"
)

// Client-side rate limits of one Helm action, as Flux's --kube-api-qps and
// --kube-api-burst defaults.
const (
	helmQPS   = 50
	helmBurst = 300
)

// Engine holds what every release shares: the operator's REST config, one
// cached discovery client and one REST mapper, and the same per remote
// cluster. It is safe for concurrent use.
type Engine struct {
	local   *clusterClients
	remotes remoteClusters
	// recordKey signs and verifies release records (SignRecordsWith).
	recordKey []byte
	// maxRecordBytes bounds a release record (LimitRecordSize).
	maxRecordBytes int64
	// renderer runs charts' templates in bounded workers
	// (RenderInSandbox); nil runs them in the process.
	renderer *sandbox.Renderer
	// literals maps the literal charts the engine hands Helm's actions to
	// the charts they stand for (sandboxed).
	literals sync.Map
}

// NewEngine returns an engine talking to the cluster of config.
func NewEngine(config *rest.Config) (*Engine, error) {
	helmConfig := rest.CopyConfig(config)
	// Helm's wait polls every object of a release every 2 seconds; client-go's
	// default limit (5 requests/s) throttles a few concurrent waits into
	// failure. Each action's resource clients get their own limiter from
	// these settings; the typed clients (release storage) share one per
	// user (see clientsets).
	helmConfig.QPS = max(helmConfig.QPS, helmQPS)
	helmConfig.Burst = max(helmConfig.Burst, helmBurst)
	local, err := newClusterClients(helmConfig)
	if err != nil {
		return nil, err
	}
	return &Engine{local: local}, nil
}

// Close stops what the engine runs in the background on every cluster: the
// watches on the clusters' APIs, the rollout informers, the idle
// connections. The operator never calls it (its engine lives as long as the
// process); a process that goes on without the engine does, or the API
// server it talked to waits for those watches when it shuts down.
func (e *Engine) Close() {
	e.remotes.retireAll()
	e.local.stop()
}

// clientsFor are the clients of the cluster target lives in.
func (e *Engine) clientsFor(target Target) (*clusterClients, error) {
	if target.Cluster == nil {
		return e.local, nil
	}
	return e.remotes.get(target.Cluster)
}

// ForgetCluster says owner (a HelmRelease, namespace/name) no longer uses
// the remote cluster it last used: it was deleted, or has no spec.kubeConfig
// any more. The cluster's clients are stopped when no other owner uses them.
func (e *Engine) ForgetCluster(owner string) {
	e.remotes.forget(owner)
}

// Target says where a release lives and as whom the engine acts on it.
type Target struct {
	// ReleaseName of the Helm release.
	ReleaseName string
	// Namespace the release's objects go to.
	Namespace string
	// StorageNamespace holds the release records (Secrets).
	StorageNamespace string
	// Tenant is the namespace of the object the release is reconciled
	// for: places the releases share (render workers) are shared fairly
	// between tenants. Empty is StorageNamespace.
	Tenant string
	// Owner is the UID of the object the release is reconciled for: the
	// records the engine signs are bound to it, and a record signed for
	// another object is never replayed for this one (see recordBinding).
	Owner types.UID
	// Impersonate, when set, is the user every API request is made as, e.g.
	// system:serviceaccount:<ns>:<name>.
	Impersonate string
	// FreshClients gives each action its own discovery client and REST
	// mapper instead of the engine's shared ones (spec.persistentClient
	// false): kinds created during an action outside Helm's CRD handling
	// then resolve in the next action.
	FreshClients bool
	// PostRenderStrategy says which rendered documents the post-renderers
	// see (spec.postRenderStrategy, resolved); empty is nohooks, Helm 3's:
	// hooks are applied as the chart rendered them.
	PostRenderStrategy kraanv1.PostRenderStrategy
	// Cluster, when set, is the remote cluster the release lives in
	// (spec.kubeConfig); nil is the operator's own.
	Cluster *Cluster
	// Bounds, when set, confine what every action may create, update or
	// delete, hooks included (see confine.go): chart-backed kinds.
	Bounds *Bounds
	// WaitStrategy says which objects an action's wait judges; empty is
	// WaitLegacy.
	WaitStrategy WaitStrategy
	// HealthCheckExprs judge the objects of their kinds instead of kstatus
	// in an action's wait, under WaitPoller only (spec.healthCheckExprs).
	HealthCheckExprs []rollout.HealthCheckExpr
}

// FieldManager is the field manager of every write Helm makes for the
// engine, server-side applies included, and of drift correction: one owner
// for the fields of a release's objects, whichever of the two wrote them
// last. Helm's own default is the name of the binary ("manager" in the
// operator's image).
const FieldManager = "kraan-operator"

func init() {
	// Helm reads it from a package variable, at every write.
	kube.ManagedFieldsManager = FieldManager
}

// configFor returns a Helm action configuration for target. Releases are
// stored as Secrets in the storage namespace, as the helm CLI does, so `helm
// list` and `helm history` keep working on releases the operator manages.
//
// Helm logs through log; its waits go to the cluster's rollout tracker
// (watchingClient); pause, when set, is called when a wait starts and
// returns what to call when it ends.
func (e *Engine) configFor(target Target, log slog.Handler, pause func() func()) (*action.Configuration, error) {
	return e.configWith(target, log, pause, nil)
}

// configWith is configFor whose waits also end, with ErrWaitSuperseded, once
// superseded is closed.
func (e *Engine) configWith(target Target, log slog.Handler, pause func() func(), superseded <-chan struct{}) (*action.Configuration, error) {
	cc, err := e.clientsFor(target)
	if err != nil {
		return nil, err
	}
	tracker, apis, shared := cc.tracker, cc.apis, cc.clientsets
	if target.FreshClients {
		if cc, err = newClusterClients(cc.config); err != nil {
			return nil, err
		}
	}
	config := rest.CopyConfig(cc.config)
	if target.Impersonate != "" {
		config.Impersonate = rest.ImpersonationConfig{UserName: target.Impersonate}
	}
	getter := &restClientGetter{
		config:    config,
		namespace: target.Namespace,
		discovery: cc.discovery,
		mapper:    cc.mapper,
	}
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(log))
	if err := cfg.Init(getter, target.StorageNamespace, "secret"); err != nil {
		return nil, fmt.Errorf("initialising Helm for release %s/%s: %w", target.StorageNamespace, target.ReleaseName, err)
	}
	kc, ok := cfg.KubeClient.(*kube.Client)
	if !ok {
		return nil, fmt.Errorf("initialising Helm for release %s/%s: unexpected kube client %T", target.StorageNamespace, target.ReleaseName, cfg.KubeClient)
	}
	if !target.FreshClients && apis != nil {
		kc.Factory = &sharedValidators{Factory: kc.Factory, apis: apis, clientsets: shared, config: config, user: target.Impersonate}
	}
	cs, err := kc.Factory.KubernetesClientSet()
	if err != nil {
		return nil, err
	}
	cfg.Releases = e.recordStorage(cs.CoreV1().Secrets(target.StorageNamespace), target, log)
	dyn, err := dynamic.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	watching := &watchingClient{Client: kc, tracker: tracker, pause: pause, superseded: superseded, apis: apis,
		strategy: target.WaitStrategy, healthChecks: target.HealthCheckExprs, dynamic: dyn}
	// Nothing of Helm's may wait: its client's own waiter is ours too.
	kc.Waiter = &engineWaiter{client: watching}
	cfg.KubeClient = target.Bounds.guard(&owningClient{watchingClient: watching, owner: releaseOwner{name: target.ReleaseName, namespace: target.Namespace}})
	if !target.FreshClients && apis != nil {
		// Helm computes these at the start of every action after dropping
		// its discovery cache; the cluster's are kept until its APIs change.
		// Run drops them for a chart with CRDs, whose install must see them.
		cfg.Capabilities = apis.capabilities()
	}
	return cfg, nil
}

// tenant is the namespace the release's share of shared places counts to.
func (t Target) tenant() string {
	if t.Tenant != "" {
		return t.Tenant
	}
	return t.StorageNamespace
}

// Uninstall removes the release as acts.Uninstall says. A release that is
// not in storage is already gone.
func (e *Engine) Uninstall(ctx context.Context, target Target, acts Actions) error {
	return e.UninstallPausing(ctx, target, acts, nil)
}

// UninstallPausing is Uninstall, calling pause when it starts waiting for
// the release's objects to go and the function pause returns when it stops
// (as Request.Pause does for a run): a caller bounding the uninstalls that
// work at once frees the place while one waits.
func (e *Engine) UninstallPausing(ctx context.Context, target Target, acts Actions, pause func() func()) error {
	logs := &logTail{}
	cfg, err := e.configFor(target, logs.handler(logr.FromContextOrDiscard(ctx)), pause)
	if err != nil {
		return err
	}
	uninstall := newUninstall(cfg, acts)
	uninstall.DisableHooks = uninstall.DisableHooks || !hooksOfLatestReplayable(cfg, target.ReleaseName)
	// Helm's IgnoreNotFound ignores any error reading the history, a
	// forbidden one included: an impersonated account without rights would
	// let the object go with its release still installed. Only a release
	// that storage does not hold is gone.
	uninstall.IgnoreNotFound = false
	if _, err := uninstall.Run(target.ReleaseName); err != nil {
		if errors.Is(err, driver.ErrReleaseNotFound) {
			return nil
		}
		return fmt.Errorf("uninstalling release %s/%s: %w", target.StorageNamespace, target.ReleaseName, err)
	}
	return nil
}
