package migration_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kraan-io/kraan-operator/internal/helm"
)

// helmRelease names a Helm release and the revision of interest.
type helmRelease struct {
	name, storageNamespace string
	version                int
}

func (r helmRelease) String() string { return r.storageNamespace + "/" + r.name }

// revisions is what Helm storage holds for a release: the status of each
// revision, read from the labels of its Secrets
// (sh.helm.release.v1.<name>.v<revision>), the labels of each, and the UID
// of each Secret, which an uninstall and a new install would change even
// where the revisions and statuses come out the same.
type revisions struct {
	status map[int]string
	labels map[int]map[string]string
	uids   map[int]types.UID
}

// latest is the newest revision's number.
func (r revisions) latest() int { return slices.Max(slices.Collect(maps.Keys(r.status))) }

// storedRevisions reads the revisions of release from Helm storage.
func storedRevisions(g Gomega, release helmRelease) revisions {
	secrets := &corev1.SecretList{}
	g.Expect(k8s.List(context.Background(), secrets, client.InNamespace(release.storageNamespace),
		client.MatchingLabels{"owner": "helm", "name": release.name})).To(Succeed())
	r := revisions{status: map[int]string{}, labels: map[int]map[string]string{}, uids: map[int]types.UID{}}
	for _, s := range secrets.Items {
		version, err := strconv.Atoi(s.Labels["version"])
		g.Expect(err).NotTo(HaveOccurred(), "Secret %s has no revision label", s.Name)
		g.Expect(s.Name).To(Equal(fmt.Sprintf("sh.helm.release.v1.%s.v%d", release.name, version)))
		r.status[version], r.labels[version], r.uids[version] = s.Labels["status"], s.Labels, s.UID
	}
	g.Expect(r.status).NotTo(BeEmpty(), "Helm storage holds no revision of %s", release)
	return r
}

// adopted says whether kraan-operator recorded its labels on the revision.
func (r revisions) adopted(version int) bool {
	return r.labels[version][helm.ChartDigestLabel] != ""
}

// workload is what a restart or re-creation of a Deployment would change.
type workload struct {
	uid types.UID
	// templateHash is the pod-template-hash of its current ReplicaSet: a
	// changed pod template (an image, an annotation) rolls the pods.
	templateHash string
	pods         []types.UID
}

// workloads returns every Deployment of the namespaces, by namespace/name,
// once each is rolled out: as many pods as replicas, all of the current
// template and ready.
func workloads(g Gomega, namespaces ...string) map[string]workload {
	ctx := context.Background()
	out := map[string]workload{}
	for _, ns := range namespaces {
		deployments := &appsv1.DeploymentList{}
		g.Expect(k8s.List(ctx, deployments, client.InNamespace(ns))).To(Succeed())
		for _, d := range deployments.Items {
			out[ns+"/"+d.Name] = rolledOut(g, &d)
		}
	}
	return out
}

func rolledOut(g Gomega, d *appsv1.Deployment) workload {
	ctx := context.Background()
	g.Expect(d.Status.ObservedGeneration).To(Equal(d.Generation), "Deployment %s", d.Name)
	g.Expect(d.Spec.Replicas).NotTo(BeNil())
	want := *d.Spec.Replicas
	g.Expect([]int32{d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.ReadyReplicas}).To(HaveEach(want), "Deployment %s", d.Name)
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	g.Expect(err).NotTo(HaveOccurred())
	w := workload{uid: d.UID}
	sets := &appsv1.ReplicaSetList{}
	g.Expect(k8s.List(ctx, sets, client.InNamespace(d.Namespace), client.MatchingLabelsSelector{Selector: selector})).To(Succeed())
	for _, rs := range sets.Items {
		if rs.Spec.Replicas != nil && *rs.Spec.Replicas > 0 {
			g.Expect(w.templateHash).To(BeEmpty(), "Deployment %s has several scaled ReplicaSets", d.Name)
			w.templateHash = rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
		}
	}
	g.Expect(w.templateHash).NotTo(BeEmpty(), "Deployment %s has no scaled ReplicaSet", d.Name)
	pods := &corev1.PodList{}
	g.Expect(k8s.List(ctx, pods, client.InNamespace(d.Namespace), client.MatchingLabelsSelector{Selector: selector})).To(Succeed())
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			w.pods = append(w.pods, p.UID)
		}
	}
	g.Expect(w.pods).To(HaveLen(int(want)), "pods of Deployment %s", d.Name)
	slices.Sort(w.pods)
	return w
}

// restartedPods counts the pods of before that are gone in after: a pod
// deleted and created again, as a rollout or a re-install does, counts.
func restartedPods(before, after map[string]workload) int {
	n := 0
	for name, w := range before {
		for _, uid := range w.pods {
			if !slices.Contains(after[name].pods, uid) {
				n++
			}
		}
	}
	return n
}
