package habitat

import (
	"context"
	"errors"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	habitatv1 "github.com/kraan-io/kraan-operator/api/habitat/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/controller/kit"
)

// Reconciler is the Go half of the Habitat API: the chart-backed
// reconciler renders the StatefulSet from helm-charts/habitat; this one does
// what a chart cannot — the peer list that follows pods, the generated ring
// key and the status fields about them.
type Reconciler struct {
	client.Client
	// Group reads the supervisors' pods, the peer lists and the chart's
	// StatefulSets from a cache that holds only those, slimmed to what is
	// read (newHabitatCache).
	Group client.Reader
	// APIReader reads Secrets uncached: only their metadata is watched, so
	// the operator does not hold every Secret of the cluster in memory.
	APIReader client.Reader
	Events    kit.Events
}

// habitatScope carries what one pass observed: reconcileRingKey fills
// ringKeySecret, reconcilePeers fills peers, observeStatefulSet readyReplicas.
type habitatScope struct {
	obj           *habitatv1.Habitat
	group         string
	ringKeySecret string
	peers         []string
	readyReplicas int32
	// reconcileSecrets: whether the Secrets the spec names hold their keys;
	// no Type when they were not checked.
	secrets metav1.Condition
	// patcher writes the status Finish sets.
	patcher *kit.Patcher
}

// +kubebuilder:rbac:groups=habitat.kraan.io,resources=habitats,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=habitat.kraan.io,resources=habitats/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=habitat.kraan.io,resources=habitats/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=configmaps;secrets;services,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch;create;update;patch;delete

// Reconcile keeps the peer list and ring key of one Habitat and reports them.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return kit.Reconcile[*habitatScope](ctx, r, req)
}

// Read gets the Habitat. One being deleted is left to garbage collection,
// which removes what this controller made once the last Habitat owning it
// is gone: nothing to do, and nothing to report.
func (r *Reconciler) Read(ctx context.Context, req ctrl.Request) (*habitatScope, bool, error) {
	obj := &habitatv1.Habitat{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return nil, false, err
	}
	if !obj.DeletionTimestamp.IsZero() {
		return nil, false, nil
	}
	// Locking: the chart-backed controller writes the same status.
	return &habitatScope{obj: obj, group: PeerGroup(obj), patcher: kit.NewLockingPatcher(r.Client, obj)}, true, nil
}

// Steps check the Secrets, keep the ring key and the peer list, and read
// the StatefulSet's ready replicas.
func (r *Reconciler) Steps(*habitatScope) []kit.Step[*habitatScope] {
	return []kit.Step[*habitatScope]{
		step(r.reconcileSecrets),
		step(r.reconcileRingKey),
		step(r.reconcilePeers),
		step(r.observeStatefulSet),
	}
}

// Finish writes what the pass observed: everything when every step went
// through; when one failed, the Secrets' condition if it was checked, so a
// user sees a missing key even while the ring key or peers cannot be made.
func (r *Reconciler) Finish(ctx context.Context, sc *habitatScope, res ctrl.Result, err error) (ctrl.Result, error) {
	obj := sc.obj
	if err == nil && res.IsZero() {
		obj.Status.Peers = sc.peers
		obj.Status.RingKeySecretName = sc.ringKeySecret
		obj.Status.ReadyReplicas = sc.readyReplicas
	}
	if sc.secrets.Type != "" {
		r.setSecretsCondition(obj, sc.secrets)
	}
	if patchErr := sc.patcher.Patch(ctx, obj); patchErr != nil {
		return ctrl.Result{}, errors.Join(err, patchErr)
	}
	return res, err
}

// step adapts a step that can only fail to the step runner: the Habitat's
// steps never wait, they succeed or are retried with back-off.
func step(fn func(context.Context, *habitatScope, *habitatv1.Habitat) error) kit.Step[*habitatScope] {
	return func(ctx context.Context, sc *habitatScope) (ctrl.Result, error) {
		return ctrl.Result{}, fn(ctx, sc, sc.obj)
	}
}

// observeStatefulSet reads the ready replicas of the chart's StatefulSet; a
// StatefulSet the chart has not rendered yet has none, and so has one of
// the Habitat's name that the Habitat does not control (someone else's).
func (r *Reconciler) observeStatefulSet(ctx context.Context, sc *habitatScope, obj *habitatv1.Habitat) error {
	sts := &appsv1.StatefulSet{}
	err := r.Group.Get(ctx, types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name}, sts)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading StatefulSet: %w", err)
	}
	if controlledBy(sts, obj) {
		sc.readyReplicas = sts.Status.ReadyReplicas
	}
	return nil
}

// runningPeerIPs lists the IPs of the Running, not terminating pods of a
// peer group, sorted so the file only changes when the set does.
func runningPeerIPs(pods []corev1.Pod) []string {
	var ips []string
	for i := range pods {
		p := &pods[i]
		if p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" || !p.DeletionTimestamp.IsZero() {
			continue
		}
		ips = append(ips, p.Status.PodIP)
	}
	slices.Sort(ips)
	return slices.Compact(ips)
}
