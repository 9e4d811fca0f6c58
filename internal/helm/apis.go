package helm

import (
	"context"
	"sync"
	"time"

	"k8s.io/kubectl/pkg/validation"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
)

// apiSyncTimeout bounds the first sync of the watches on CRDs and
// APIServices; without them, each action finds the cluster's APIs itself.
const apiSyncTimeout = 30 * time.Second

// The resources whose changes change what the cluster serves.
var apiResources = []schema.GroupVersionResource{
	{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"},
	{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"},
}

// servedAPIs keeps what the cluster serves — the capabilities charts are
// rendered with, and the discovery documents, OpenAPI schemas and REST
// mappings behind them — until a CustomResourceDefinition or an APIService
// changes, which a metadata watch on both reports. Helm instead drops its
// discovery cache at the start of every action: five requests per action
// (/api, /apis and the OpenAPI documents of the kinds it validates).
type servedAPIs struct {
	discovery discovery.CachedDiscoveryInterface
	reset     func()
	metadata  metadata.Interface

	start    sync.Once
	watching bool
	// factory runs the watches; stopWatches ends them (stop).
	factory     metadatainformer.SharedInformerFactory
	stopWatches chan struct{}
	stopped     bool

	mu   sync.Mutex
	caps *common.Capabilities
	// validators are the schemas Helm's Build validates manifests with,
	// by user and directive (see sharedValidators).
	validators map[string]validation.Schema
}

// capabilities returns a copy of the cluster's capabilities as Helm computes
// them; nil when the watches could not start, so that Helm computes them.
func (s *servedAPIs) capabilities() *common.Capabilities {
	s.start.Do(s.watch)
	if !s.watching {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil // nothing says any more when the cached APIs change
	}
	if s.caps == nil {
		version, err := s.discovery.ServerVersion()
		if err != nil {
			return nil
		}
		// A group whose discovery fails (an APIService without its
		// backend) leaves the others listed, as Helm tolerates.
		apiVersions, err := action.GetVersionSet(s.discovery)
		if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
			return nil
		}
		s.caps = &common.Capabilities{
			APIVersions: apiVersions,
			KubeVersion: common.KubeVersion{Version: version.GitVersion, Major: version.Major, Minor: version.Minor},
			HelmVersion: common.DefaultCapabilities.HelmVersion,
		}
	}
	return s.caps.Copy()
}

// validator returns the schema kept under key, built by build the first
// time; build's own when the watches could not start.
func (s *servedAPIs) validator(key string, build func() (validation.Schema, error)) (validation.Schema, error) {
	s.start.Do(s.watch)
	if !s.watching {
		return build()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return build()
	}
	if v, ok := s.validators[key]; ok {
		return v, nil
	}
	v, err := build()
	if err != nil {
		return nil, err
	}
	if s.validators == nil {
		s.validators = map[string]validation.Schema{}
	}
	s.validators[key] = v
	return v, nil
}

// invalidate forgets what the cluster serves: a CRD or an APIService changed,
// or a release's CRDs were just installed.
func (s *servedAPIs) invalidate() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.caps = nil
	s.validators = nil
	s.discovery.Invalidate()
	s.reset()
}

// watch starts the metadata watches on CRDs and APIServices, until stop, and
// waits for their first sync.
func (s *servedAPIs) watch() {
	ctx, cancel := context.WithTimeout(context.Background(), apiSyncTimeout)
	defer cancel()
	for _, gvr := range apiResources {
		// An operator limited to some namespaces (Roles only) may not list
		// these cluster-wide: Helm then finds the APIs itself per action.
		if _, err := s.metadata.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
			return
		}
	}
	factory := metadatainformer.NewSharedInformerFactory(s.metadata, 0)
	handler := cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(_ any, initial bool) {
			if !initial {
				s.invalidate()
			}
		},
		UpdateFunc: func(any, any) { s.invalidate() },
		DeleteFunc: func(any) { s.invalidate() },
	}
	var synced []cache.InformerSynced
	for _, gvr := range apiResources {
		informer := factory.ForResource(gvr).Informer()
		if _, err := informer.AddEventHandler(handler); err != nil {
			return
		}
		synced = append(synced, informer.HasSynced)
	}
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return
	}
	s.factory, s.stopWatches = factory, make(chan struct{})
	factory.Start(s.stopWatches)
	s.mu.Unlock()
	s.watching = cache.WaitForCacheSync(ctx.Done(), synced...)
}

// stop ends the watches and waits for their goroutines; what is cached is
// no longer served, since nothing would tell when it goes stale. The
// operator's own cluster is watched for the life of the process; a remote
// cluster's until its clients are retired (see remoteClusters).
func (s *servedAPIs) stop() {
	s.mu.Lock()
	s.stopped = true
	factory, stopWatches := s.factory, s.stopWatches
	s.factory, s.stopWatches = nil, nil
	s.mu.Unlock()
	if factory == nil {
		return
	}
	close(stopWatches)
	factory.Shutdown()
}
