package fleet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/kubeconfig"
)

// Registration kinds.
const (
	// FleetClusterKind is the operator's own registration.
	FleetClusterKind = "FleetCluster"
	// CAPIClusterKind is a Cluster API Cluster, reached through the
	// <name>-kubeconfig Secret Cluster API writes (key "value").
	CAPIClusterKind = "Cluster"
)

// capiClusters is Cluster API's Cluster; the version the API server prefers
// is looked up, so any served version works.
var capiClusters = schema.GroupKind{Group: "cluster.x-k8s.io", Kind: "Cluster"}

// defaultKubeConfigKeys are read when a registration names no key: Cluster
// API's and Flux's key, then Flux's alternative.
var defaultKubeConfigKeys = []string{"value", "value.yaml"}

// Cluster is a registered cluster.
type Cluster struct {
	// Key is the registration as <namespace>/<name>.
	Key string
	// Kind is FleetClusterKind or CAPIClusterKind.
	Kind string
	// Labels are the registration's labels, which placements select on.
	Labels map[string]string
	// Secret holds the kubeconfig, under SecretKey ("" tries
	// defaultKubeConfigKeys).
	Secret    client.ObjectKey
	SecretKey string
}

// Registry lists the registered clusters and connects to them.
type Registry struct {
	// Reader reads FleetClusters: Cache, which holds those of Namespaces
	// only; nil when there are no Namespaces.
	Reader client.Reader
	// Cache is Reader, for watches.
	Cache cache.Cache
	// APIReader reads kubeconfig Secrets and Cluster API Clusters from the
	// API server: neither is cached, so no Secret of the cluster is held in
	// memory and no informer waits for a kind that may not be installed.
	APIReader client.Reader
	// Mapper finds the served version of Cluster API's Cluster.
	Mapper apimeta.RESTMapper
	// Namespaces are the platform's namespaces: registrations anywhere
	// else are ignored, so a tenant cannot register a cluster.
	Namespaces []string
	// Connections are the clients of the clusters, shared by every layer.
	Connections *Connections
}

// Registered lists every cluster registered in the platform's namespaces,
// ordered by key, and lets go of the connections of clusters no longer
// registered.
func (r *Registry) Registered(ctx context.Context) ([]Cluster, error) {
	var out []Cluster
	for _, ns := range r.Namespaces {
		if r.Reader == nil {
			break
		}
		list := &kraanv1.FleetClusterList{}
		if err := r.Reader.List(ctx, list, client.InNamespace(ns)); err != nil {
			return nil, fmt.Errorf("listing FleetClusters in %s: %w", ns, err)
		}
		for i := range list.Items {
			out = append(out, FromFleetCluster(&list.Items[i]))
		}
		capi, err := r.capiClusters(ctx, ns)
		if err != nil {
			return nil, err
		}
		out = append(out, capi...)
	}
	out = byKey(out)
	keys := make([]string, len(out))
	for i, c := range out {
		keys[i] = c.Key
	}
	r.Connections.Retain(keys)
	return out, nil
}

// byKey orders clusters by key, one per key: a FleetCluster wins over a
// Cluster API Cluster of the same namespace and name.
func byKey(clusters []Cluster) []Cluster {
	slices.SortFunc(clusters, func(a, b Cluster) int {
		return cmp.Or(strings.Compare(a.Key, b.Key), cmp.Compare(kindRank(a), kindRank(b)))
	})
	return slices.CompactFunc(clusters, func(a, b Cluster) bool { return a.Key == b.Key })
}

// kindRank orders a FleetCluster before any other registration of its key.
func kindRank(c Cluster) int {
	if c.Kind == FleetClusterKind {
		return 0
	}
	return 1
}

// FromFleetCluster is the cluster fc registers.
func FromFleetCluster(fc *kraanv1.FleetCluster) Cluster {
	c := Cluster{Key: fc.Namespace + "/" + fc.Name, Kind: FleetClusterKind, Labels: fc.Labels}
	if ref := fc.Spec.KubeConfig.SecretRef; ref != nil {
		c.Secret, c.SecretKey = client.ObjectKey{Namespace: fc.Namespace, Name: ref.Name}, ref.Key
	}
	return c
}

// capiClusters lists Cluster API's Clusters in ns, by their metadata only;
// none when Cluster API is not installed.
func (r *Registry) capiClusters(ctx context.Context, ns string) ([]Cluster, error) {
	if r.Mapper == nil {
		return nil, nil
	}
	mapping, err := r.Mapper.RESTMapping(capiClusters)
	if err != nil {
		if apimeta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("looking up Cluster API's Cluster kind: %w", err)
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(mapping.GroupVersionKind.GroupVersion().WithKind("ClusterList"))
	if err := r.APIReader.List(ctx, list, client.InNamespace(ns)); err != nil {
		if apierrors.IsNotFound(err) || apimeta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("listing Cluster API Clusters in %s: %w", ns, err)
	}
	out := make([]Cluster, 0, len(list.Items))
	for _, item := range list.Items {
		out = append(out, Cluster{Key: ns + "/" + item.Name, Kind: CAPIClusterKind, Labels: item.Labels,
			Secret: client.ObjectKey{Namespace: ns, Name: item.Name + "-kubeconfig"}, SecretKey: "value"})
	}
	return out, nil
}

// Select returns the registered clusters selector chooses, ordered by key.
func Select(clusters []Cluster, selector labels.Selector) []Cluster {
	var out []Cluster
	for _, c := range clusters {
		if selector.Matches(labels.Set(c.Labels)) {
			out = append(out, c)
		}
	}
	return out
}

// IsPlatformNamespace says whether registrations in ns are honoured.
func (r *Registry) IsPlatformNamespace(ns string) bool { return slices.Contains(r.Namespaces, ns) }

// ErrNoKubeConfig is a registration whose kubeconfig cannot be read; the
// message says what to fix.
var ErrNoKubeConfig = errors.New("no usable kubeconfig")

// Connect returns the connection to c, made from its kubeconfig Secret the
// first time or when the Secret's content changed.
func (r *Registry) Connect(ctx context.Context, c Cluster) (*Connection, error) {
	data, err := r.kubeconfigOf(ctx, c)
	if err != nil {
		return nil, err
	}
	config, digest, err := kubeconfig.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%w: Secret %s: %w", ErrNoKubeConfig, c.Secret, err)
	}
	return r.Connections.Get(c.Key, digest, config)
}

func (r *Registry) kubeconfigOf(ctx context.Context, c Cluster) ([]byte, error) {
	if c.Secret.Name == "" {
		return nil, fmt.Errorf("%w: spec.kubeConfig.secretRef is not set", ErrNoKubeConfig)
	}
	secret := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, c.Secret, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%w: Secret %s does not exist", ErrNoKubeConfig, c.Secret)
		}
		return nil, fmt.Errorf("reading the kubeconfig Secret %s: %w", c.Secret, err)
	}
	keys := defaultKubeConfigKeys
	if c.SecretKey != "" {
		keys = []string{c.SecretKey}
	}
	for _, k := range keys {
		if data, ok := secret.Data[k]; ok {
			return data, nil
		}
	}
	return nil, fmt.Errorf("%w: Secret %s has no key %q", ErrNoKubeConfig, c.Secret, keys[0])
}
