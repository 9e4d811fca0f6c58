package soak_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	habitatv1 "github.com/kraan-io/kraan-operator/api/habitat/v1alpha1"
	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

// soakPrefix starts the name of every namespace of the workload.
const soakPrefix = "soak-"

// uidRecorder remembers every UID it saw under each name, from watches that
// run for the whole soak: an object deleted and created again under its
// name (a release uninstalled and installed again, a layer's Namespace
// recreated) shows as a second UID, even when it happened between two
// polls, or while the apiserver was away (the informers' relist then
// reports the new object).
type uidRecorder struct {
	mu   sync.Mutex
	uids map[string][]types.UID // "<Kind> <namespace>/<name>" → UIDs in the order seen
}

// uidKinds are the objects whose identity the soak checks: what the
// workload creates (layers make the Namespaces and HelmReleases) and what
// the releases deploy.
var uidKinds = map[string]client.Object{
	"Namespace":   &corev1.Namespace{},
	"HelmRelease": &kraanv1.HelmRelease{},
	"Habitat":     &habitatv1.Habitat{},
	"Deployment":  &appsv1.Deployment{},
	"StatefulSet": &appsv1.StatefulSet{},
}

// startUIDRecorder starts the watches and returns once their first lists
// are in.
func startUIDRecorder(t *testing.T) *uidRecorder {
	g := NewWithT(t)
	u := &uidRecorder{uids: map[string][]types.UID{}}
	c, err := cache.New(restConfig, cache.Options{Scheme: testenv.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	for kind, obj := range uidKinds {
		inf, err := c.GetInformer(ctx, obj)
		g.Expect(err).NotTo(HaveOccurred())
		_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { u.record(kind, obj) },
			UpdateFunc: func(_, obj any) { u.record(kind, obj) },
			DeleteFunc: func(obj any) { u.record(kind, obj) },
		})
		g.Expect(err).NotTo(HaveOccurred())
	}
	go func() { _ = c.Start(ctx) }()
	g.Expect(c.WaitForCacheSync(ctx)).To(BeTrue())
	return u
}

// record notes the object's UID under its name, for the soak's namespaces.
func (u *uidRecorder) record(kind string, obj any) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	o, ok := obj.(client.Object)
	if !ok {
		return
	}
	ns := o.GetNamespace()
	if kind == "Namespace" {
		ns = o.GetName()
	}
	if !strings.HasPrefix(ns, soakPrefix) {
		return
	}
	key := fmt.Sprintf("%s %s/%s", kind, o.GetNamespace(), o.GetName())
	u.mu.Lock()
	defer u.mu.Unlock()
	if !slices.Contains(u.uids[key], o.GetUID()) {
		u.uids[key] = append(u.uids[key], o.GetUID())
	}
}

// recreated returns every name that had more than one UID, except the
// names of what the workload deleted: those objects were deleted on
// purpose, and nothing is created again under their names.
func (u *uidRecorder) recreated(deleted []*release) []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []string
	for key, uids := range u.uids {
		if len(uids) < 2 || slices.ContainsFunc(deleted, func(r *release) bool {
			return strings.HasSuffix(key, " "+r.namespace+"/"+r.name)
		}) {
			continue
		}
		out = append(out, fmt.Sprintf("%s had UIDs %v", key, uids))
	}
	slices.Sort(out)
	return out
}

// count is how many names the recorder saw.
func (u *uidRecorder) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.uids)
}
