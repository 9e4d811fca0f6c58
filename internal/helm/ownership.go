package helm

import (
	"fmt"
	"sync"
	"time"

	"github.com/fluxcd/pkg/ssa/jsondiff"
	"helm.sh/helm/v4/pkg/kube"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/resource"

	"github.com/kraan-io/kraan-operator/internal/rollout"
)

// The annotations Helm writes on every object of a release, naming the
// release and the namespace it deploys to. They are the engine's proof that
// a live object belongs to a release: a release record is a Secret a tenant
// may edit, the objects it names are not.
const (
	ReleaseNameAnnotation      = "meta.helm.sh/release-name"
	ReleaseNamespaceAnnotation = "meta.helm.sh/release-namespace"
)

// releaseOwner names the release an action runs for: the name and namespace
// its objects' ownership annotations carry (Helm's release namespace, where
// the objects go, not the storage namespace).
type releaseOwner struct {
	name, namespace string
}

// owns says whether obj carries the ownership annotations of o.
func (o releaseOwner) owns(obj metav1.Object) bool {
	a := obj.GetAnnotations()
	return a[ReleaseNameAnnotation] == o.name && a[ReleaseNamespaceAnnotation] == o.namespace
}

// String is the release as the annotations name it, for logs.
func (o releaseOwner) String() string { return o.namespace + "/" + o.name }

// MarkOwned sets on obj the ownership metadata Helm writes on every object
// of the release name in namespace: the label
// app.kubernetes.io/managed-by=Helm and the release annotations. Helm 4's
// uninstall deletes only objects that carry all three, so whatever applies a
// release's manifest again outside Helm (the manifest holds the chart's own
// labels, not Helm's) must keep them, or the object outlives the release.
func MarkOwned(obj metav1.Object, name, namespace string) {
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[rollout.ManagedByLabel] = rollout.ManagedByHelm
	obj.SetLabels(labels)
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[ReleaseNameAnnotation], a[ReleaseNamespaceAnnotation] = name, namespace
	obj.SetAnnotations(a)
}

// owningClient is the engine's kube client restricted to what a release owns:
// every delete an action makes on a release's behalf (uninstall, the objects
// an upgrade or rollback drops, hooks with a delete policy, the cleanup of a
// failed upgrade) touches only live objects that carry the release's
// ownership annotations. A record's manifest is only a list of names; a
// record edited to name an object of kube-system, or a hand-made object of the
// namespace, cannot make the operator delete it. Objects the engine creates
// for a release always carry the annotations (Helm does not annotate hooks:
// Create does), so the release's own objects are still cleaned up.
type owningClient struct {
	*watchingClient
	owner releaseOwner
}

// Create annotates each object with the release's ownership before creating
// it, so that hooks and every other object the release creates can later be
// deleted by it.
func (c *owningClient) Create(resources kube.ResourceList, opts ...kube.ClientCreateOption) (*kube.Result, error) {
	if err := resources.Visit(c.annotate); err != nil {
		return nil, err
	}
	return c.watchingClient.Create(resources, opts...)
}

// annotate adds the release's ownership annotations to info's object when it
// has none of its own (Helm already annotates the objects of a manifest).
func (c *owningClient) annotate(info *resource.Info, err error) error {
	if err != nil {
		return err
	}
	obj, err := meta.Accessor(info.Object)
	if err != nil {
		return fmt.Errorf("annotating %s with its release: %w", resourceID(info), err)
	}
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	if _, set := a[ReleaseNameAnnotation]; !set {
		a[ReleaseNameAnnotation] = c.owner.name
		a[ReleaseNamespaceAnnotation] = c.owner.namespace
	}
	obj.SetAnnotations(a)
	return nil
}

// Delete deletes the owned objects among resources; the others are skipped
// and logged. Helm calls it for hooks (their delete policies), for the
// objects a failed upgrade or rollback just created, and for a record's
// manifest on uninstall. Hooks run only from the chart being installed or a
// verified record (see replayable), so a hook object an earlier operator
// version created, unannotated, is still deleted when Helm deletes it as a
// hook (legacyHooks): without it, a hook with the before-hook-creation
// policy would fail every later action. A record's manifest never holds a
// hook (Helm keeps those apart), so its objects get no such leave.
func (c *owningClient) Delete(resources kube.ResourceList, policy metav1.DeletionPropagation) (*kube.Result, []error) {
	hooks := resources.Filter(isHook)
	others := resources.Filter(func(info *resource.Info) bool { return !isHook(info) })
	owned := append(c.ownedOnly(hooks, true), c.ownedOnly(others, false)...)
	return c.watchingClient.Delete(owned, policy)
}

// GetWaiter implements kube.Interface: the engine's waiter, restricted to
// owned objects when it waits for deletes.
func (c *owningClient) GetWaiter(ws kube.WaitStrategy) (kube.Waiter, error) {
	return c.GetWaiterWithOptions(ws)
}

// GetWaiterWithOptions implements kube.InterfaceWaitOptions (see GetWaiter).
func (c *owningClient) GetWaiterWithOptions(ws kube.WaitStrategy, opts ...kube.WaitOption) (kube.Waiter, error) {
	w, err := c.watchingClient.GetWaiterWithOptions(ws, opts...)
	if err != nil {
		return nil, err
	}
	return &owningWaiter{Waiter: w, client: c}, nil
}

// owningWaiter waits only for the deletes the owning client made.
type owningWaiter struct {
	kube.Waiter
	client *owningClient
}

// WaitForDelete waits until the owned objects among resources are gone.
// Helm's uninstall waits for every object of the record's manifest, those
// Delete skipped too, which would never go: the wait would run into its
// timeout and fail the uninstall.
func (w *owningWaiter) WaitForDelete(resources kube.ResourceList, timeout time.Duration) error {
	hooks := resources.Filter(isHook)
	others := resources.Filter(func(info *resource.Info) bool { return !isHook(info) })
	owned := append(w.client.ownedOnly(hooks, true), w.client.ownedOnly(others, false)...)
	return w.Waiter.WaitForDelete(owned, timeout)
}

// Update applies target and deletes what original has and target lacks.
// Helm deletes those inline, so original loses, beforehand, every object
// target lacks whose live copy the release does not own.
func (c *owningClient) Update(original, target kube.ResourceList, opts ...kube.ClientUpdateOption) (*kube.Result, error) {
	return c.watchingClient.Update(c.deletableOriginal(original, target), target, opts...)
}

// deletableOriginal is original without the objects Update would delete
// (those target lacks) that the release does not own. Objects target keeps
// stay: they are the baseline of their patch.
func (c *owningClient) deletableOriginal(original, target kube.ResourceList) kube.ResourceList {
	dropped := original.Difference(target)
	if len(dropped) == 0 {
		return original
	}
	owned := c.ownedOnly(dropped, false)
	keep := make(kube.ResourceList, 0, len(original))
	for _, info := range original {
		if target.Get(info) != nil || owned.Get(info) != nil {
			keep = append(keep, info)
		}
	}
	return keep
}

// ownedOnly is the subset of resources whose live object carries the
// release's ownership, plus those that no longer exist (deleting them is a
// no-op Helm expects to succeed) and, with legacyHooks, hook objects that
// carry no release's ownership at all. An object that cannot be read is
// left out: the engine never deletes what it could not check.
func (c *owningClient) ownedOnly(resources kube.ResourceList, legacyHooks bool) kube.ResourceList {
	verdicts := make([]bool, len(resources))
	var wg sync.WaitGroup
	for i, info := range resources {
		wg.Go(func() { verdicts[i] = c.deletable(info, legacyHooks) })
	}
	wg.Wait()
	owned := make(kube.ResourceList, 0, len(resources))
	for i, info := range resources {
		if verdicts[i] {
			owned = append(owned, info)
		}
	}
	return owned
}

// deletable reads info's live object, without changing info, and says
// whether the release may delete it.
func (c *owningClient) deletable(info *resource.Info, legacyHooks bool) bool {
	if info.Mapping == nil || info.Client == nil {
		return false
	}
	live, err := resource.NewHelper(info.Client, info.Mapping).Get(info.Namespace, info.Name)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return true
		}
		c.Logger().Info("Not deleting an object: it could not be read to check that the release owns it",
			"object", resourceID(info), "release", c.owner.String(), "error", err)
		return false
	}
	obj, err := meta.Accessor(live)
	if err == nil && legacyHooks && unownedHook(obj) {
		return true
	}
	if err != nil || !c.owner.owns(obj) {
		c.Logger().Info("Not deleting an object: it does not carry the release's ownership annotations",
			"object", resourceID(info), "release", c.owner.String())
		return false
	}
	return true
}

// resourceID names info as "<Kind> <namespace>/<name>".
func resourceID(info *resource.Info) string {
	kind := ""
	if info.Mapping != nil {
		kind = info.Mapping.GroupVersionKind.Kind
	}
	if info.Namespace == "" {
		return kind + " " + info.Name
	}
	return kind + " " + info.Namespace + "/" + info.Name
}

// correctable says whether drift correction may apply the record's version of
// a drifted object: the record must be the operator's verified one, and an
// object that exists must carry the release's ownership. A missing object is
// re-created only from a verified record.
func correctable(rel *Revision, owner releaseOwner, d *jsondiff.Diff) bool {
	if rel.Trust != "" && rel.Trust != RecordVerified {
		return false
	}
	if d.Type == jsondiff.DiffTypeCreate || d.ClusterObject == nil {
		return true
	}
	return owner.owns(d.ClusterObject)
}

// hookAnnotation marks a Helm hook object (in its chart and on the cluster).
const hookAnnotation = "helm.sh/hook"

// unownedHook says whether obj is a hook object that no release claims:
// created before the engine annotated hooks with their release.
func unownedHook(obj metav1.Object) bool {
	a := obj.GetAnnotations()
	_, hook := a[hookAnnotation]
	_, claimed := a[ReleaseNameAnnotation]
	return hook && !claimed
}
