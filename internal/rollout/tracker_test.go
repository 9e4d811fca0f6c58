package rollout_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kraan-io/kraan-operator/internal/rollout"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

// The API server has no controllers: each test writes the status a
// Deployment or Job controller would, and the tracker must see it from its
// watch.
var (
	k8s     client.Client
	tracker *rollout.Tracker
	admin   *rest.Config
)

func TestMain(m *testing.M) {
	env, err := testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	k8s, admin = env.Client, env.Config
	tracker = rollout.NewTracker(dynamic.NewForConfigOrDie(env.Config))
	code := m.Run()
	_ = env.Stop()
	os.Exit(code)
}

var deployments = appsv1.SchemeGroupVersion.WithResource("deployments")

func newDeployment(t *testing.T, ns, name string, labels map[string]string) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			},
		},
	}
	NewWithT(t).Expect(k8s.Create(context.Background(), d)).To(Succeed())
	return d
}

var helmLabels = map[string]string{rollout.ManagedByLabel: rollout.ManagedByHelm}

// rollOut writes the status of a Deployment whose one replica is available.
func rollOut(g Gomega, d *appsv1.Deployment) {
	live := &appsv1.Deployment{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(d), live)).To(Succeed())
	live.Status = appsv1.DeploymentStatus{
		ObservedGeneration: live.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
		Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
		},
	}
	g.Expect(k8s.Status().Update(context.Background(), live)).To(Succeed())
}

func objectOf(d *appsv1.Deployment) rollout.Object {
	return rollout.Object{Resource: deployments, Kind: "Deployment", Namespace: d.Namespace, Name: d.Name, Generation: d.Generation}
}

func newNamespace(t *testing.T) string {
	t.Helper()
	ns := fmt.Sprintf("rollout-%d", time.Now().UnixNano())
	testenv.CreateNamespace(t, k8s, ns)
	return ns
}

// waitAsync runs a Wait of a minute in the background; its error arrives on the channel.
func waitAsync(objs []rollout.Object, opts rollout.Options) <-chan error {
	done := make(chan error, 1)
	go func() { done <- tracker.Wait(context.Background(), objs, time.Minute, opts) }()
	return done
}

// TestWait_EndsWhenTheWatchSeesTheRollout: the wait ends once the watch has
// seen every object rolled out, and not before.
func TestWait_EndsWhenTheWatchSeesTheRollout(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	a := newDeployment(t, ns, "a", helmLabels)
	b := newDeployment(t, ns, "b", helmLabels)
	done := waitAsync([]rollout.Object{objectOf(a), objectOf(b)}, rollout.Options{})

	rollOut(g, a)
	g.Consistently(done).WithTimeout(time.Second).ShouldNot(Receive(), "ended with b not rolled out")
	rollOut(g, b)
	g.Eventually(done).WithTimeout(10 * time.Second).Should(Receive(BeNil()))
}

// TestWait_TimesOutNamingWhatIsNotReady: the error names each object that is
// not ready and why, and says it timed out.
func TestWait_TimesOutNamingWhatIsNotReady(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	d := newDeployment(t, ns, "stuck", helmLabels)
	err := tracker.Wait(context.Background(), []rollout.Object{objectOf(d)}, 500*time.Millisecond, rollout.Options{})
	var timeout *rollout.TimeoutError
	g.Expect(errors.As(err, &timeout)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(And(ContainSubstring("timed out after 500ms"), ContainSubstring("Deployment "+ns+"/stuck: InProgress")))
}

// TestWait_JudgesTheGenerationWritten: a cached copy of an older generation
// that was rolled out does not end the wait for the new one.
func TestWait_JudgesTheGenerationWritten(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	d := newDeployment(t, ns, "gen", helmLabels)
	rollOut(g, d)
	g.Expect(tracker.Wait(context.Background(), []rollout.Object{objectOf(d)}, 10*time.Second, rollout.Options{})).To(Succeed())

	live := &appsv1.Deployment{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(d), live)).To(Succeed())
	live.Spec.Replicas = ptr.To[int32](2)
	g.Expect(k8s.Update(context.Background(), live)).To(Succeed())
	err := tracker.Wait(context.Background(), []rollout.Object{objectOf(live)}, time.Second, rollout.Options{})
	g.Expect(err).To(MatchError(ContainSubstring("Deployment " + ns + "/gen")))
}

// TestWait_ReadsObjectsWithoutHelmsLabel: an object the informers do not list
// (its managed-by label removed) is read directly instead.
func TestWait_ReadsObjectsWithoutHelmsLabel(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	d := newDeployment(t, ns, "unlabelled", nil)
	done := waitAsync([]rollout.Object{objectOf(d)}, rollout.Options{})
	g.Consistently(done).WithTimeout(time.Second).ShouldNot(Receive())
	rollOut(g, d)
	g.Eventually(done).WithTimeout(10 * time.Second).Should(Receive(BeNil()))
}

// TestWait_FailFastOnAFailedJob: with jobs, a failed Job ends the wait at
// once with its failure, long before the timeout.
func TestWait_FailFastOnAFailedJob(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "migrate", Namespace: ns, Labels: helmLabels},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
		}}},
	}
	g.Expect(k8s.Create(context.Background(), job)).To(Succeed())
	obj := rollout.Object{Resource: batchv1.SchemeGroupVersion.WithResource("jobs"), Kind: "Job", Namespace: ns, Name: "migrate"}
	done := waitAsync([]rollout.Object{obj}, rollout.Options{FailFast: true})

	now := metav1.Now()
	job.Status = batchv1.JobStatus{Failed: 1, StartTime: &now, Conditions: []batchv1.JobCondition{
		{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded"},
		{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded"},
	}}
	g.Expect(k8s.Status().Update(context.Background(), job)).To(Succeed())
	g.Eventually(done).WithTimeout(10 * time.Second).Should(Receive(MatchError(ContainSubstring("Job " + ns + "/migrate failed"))))
}

// TestWait_WithRolesInSomeNamespacesOnly: an operator that may list
// Deployments only in the namespaces it has a Role in (a namespaced install)
// watches them per namespace, and its waits still end on the rollout.
func TestWait_WithRolesInSomeNamespacesOnly(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	ctx := context.Background()
	g.Expect(k8s.Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "deployments", Namespace: ns},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list", "watch"}}},
	})).To(Succeed())
	g.Expect(k8s.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "deployments", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "deployments"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "namespaced-operator"}},
	})).To(Succeed())
	limited := rest.CopyConfig(admin)
	limited.Impersonate = rest.ImpersonationConfig{UserName: "namespaced-operator"}
	namespaced := rollout.NewTracker(dynamic.NewForConfigOrDie(limited))

	d := newDeployment(t, ns, "app", helmLabels)
	done := make(chan error, 1)
	go func() { done <- namespaced.Wait(ctx, []rollout.Object{objectOf(d)}, time.Minute, rollout.Options{}) }()
	g.Consistently(done).WithTimeout(time.Second).ShouldNot(Receive())
	rollOut(g, d)
	g.Eventually(done).WithTimeout(10 * time.Second).Should(Receive(BeNil()))
}

// TestTracker_Close_StopsTheInformers: a closed tracker stops the informers
// nobody waits on at once, instead of after the idle delay, a wait going on
// keeps its informer until it ends, and a wait after Close still works and
// leaves nothing running.
func TestTracker_Close_StopsTheInformers(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	closing := rollout.NewTracker(dynamic.NewForConfigOrDie(admin))
	ready := newDeployment(t, ns, "ready", helmLabels)
	rollOut(g, ready)
	g.Expect(closing.Wait(context.Background(), []rollout.Object{objectOf(ready)}, 10*time.Second, rollout.Options{})).To(Succeed())
	g.Expect(closing.Informers()).To(Equal(1), "kept for the next wait")

	pending := newDeployment(t, ns, "pending", helmLabels)
	jobs := batchv1.SchemeGroupVersion.WithResource("jobs")
	done := make(chan error, 1)
	go func() {
		done <- closing.Wait(context.Background(), []rollout.Object{objectOf(pending)}, time.Minute, rollout.Options{})
	}()
	g.Eventually(closing.Informers).WithTimeout(10 * time.Second).Should(Equal(1))
	closing.Close()
	g.Consistently(done).WithTimeout(500*time.Millisecond).ShouldNot(Receive(), "the wait goes on")
	g.Expect(closing.Informers()).To(Equal(1), "its informer runs while it waits")
	rollOut(g, pending)
	g.Eventually(done).WithTimeout(10 * time.Second).Should(Receive(BeNil()))
	g.Expect(closing.Informers()).To(Equal(0), "stopped when the last wait ended")

	job := rollout.Object{Resource: jobs, Kind: "Job", Namespace: ns, Name: "absent"}
	err := closing.Wait(context.Background(), []rollout.Object{job}, 500*time.Millisecond, rollout.Options{})
	g.Expect(err).To(HaveOccurred(), "times out: the job does not exist")
	g.Expect(closing.Informers()).To(Equal(0))
}
