package kit

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func request(namespace, name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: namespace, Name: name}}
}

// One namespace's backlog delays another namespace's request by about one,
// not by the backlog; a higher priority asked for (a run's end) still goes
// first; within a namespace the order is arrival. An item queued twice is
// served once.
func TestFairQueue_SharesWorkersBetweenNamespaces(t *testing.T) {
	g := NewWithT(t)
	q := newFairQueue(logr.Discard())("", workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]()).(*fairQueue)
	defer q.ShutDown()
	for i := range 1000 {
		q.Add(request("flood", fmt.Sprint(i)))
	}
	q.Add(request("flood", "0"))
	q.Add(request("quiet", "app"))
	q.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(10)}, request("flood", "run-ended"))
	g.Eventually(q.Len).Should(Equal(1002))
	got := make([]reconcile.Request, 0, 4)
	for range 4 {
		item, _ := q.Get()
		got = append(got, item)
		q.Done(item)
	}
	g.Expect(got).To(Equal([]reconcile.Request{
		request("flood", "run-ended"), request("flood", "0"), request("quiet", "app"), request("flood", "1"),
	}))
	g.Expect(q.queued).To(Equal(map[string]int{"flood": 998}))
	q.AddAfter(request("quiet", "later"), 10*time.Millisecond)
	g.Eventually(q.Len).Should(Equal(999))
}

// Within a namespace the order stays arrival, also for a request added
// after the workers took some: it goes behind those still queued.
func TestFairQueue_KeepsArrivalOrderWithinANamespace(t *testing.T) {
	g := NewWithT(t)
	q := newFairQueue(logr.Discard())("", workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]()).(*fairQueue)
	defer q.ShutDown()
	for i := range 10 {
		q.Add(request("a", fmt.Sprint(i)))
	}
	g.Eventually(q.Len).Should(Equal(10))
	for i := range 5 {
		item, _ := q.Get()
		g.Expect(item).To(Equal(request("a", fmt.Sprint(i))))
		q.Done(item)
	}
	q.Add(request("a", "new"))
	q.Add(request("b", "other"))
	got := make([]string, 0, 7)
	for range 7 {
		item, _ := q.Get()
		got = append(got, item.Namespace+"/"+item.Name)
		q.Done(item)
	}
	g.Expect(got).To(Equal([]string{"a/5", "b/other", "a/6", "a/7", "a/8", "a/9", "a/new"}))
	g.Expect(q.tags).To(BeEmpty())
	g.Expect(q.last).To(BeEmpty())
}
