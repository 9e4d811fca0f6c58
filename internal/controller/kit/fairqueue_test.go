package kit

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func request(namespace, name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: namespace, Name: name}}
}

// One namespace's backlog delays another namespace's request by a turn, not
// by the backlog: namespaces are served in turn, each in arrival order.
func TestNamespaceFairQueue_ServesNamespacesInTurn(t *testing.T) {
	g := NewWithT(t)
	q := NewNamespaceFairQueue()
	for i := range 1000 {
		q.Push(request("flood", fmt.Sprint(i)))
	}
	q.Push(request("quiet", "app"))
	q.Push(request("", "layer"))
	g.Expect(q.Len()).To(Equal(1002))
	var got []reconcile.Request
	for range 5 {
		got = append(got, q.Pop())
	}
	g.Expect(got).To(Equal([]reconcile.Request{
		request("flood", "0"), request("quiet", "app"), request("", "layer"), request("flood", "1"), request("flood", "2"),
	}))
	g.Expect(q.Len()).To(Equal(997))
	q.Push(request("quiet", "later"))
	g.Expect(q.Pop()).To(Equal(request("flood", "3")))
	g.Expect(q.Pop()).To(Equal(request("quiet", "later")))
}

// The controllers' queue keeps client-go's semantics (an item queued twice is
// served once, a delayed item comes back) with the fair order.
func TestControllerQueue_IsFairAndDeduplicates(t *testing.T) {
	g := NewWithT(t)
	q := newFairQueue("", workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	for i := range 3 {
		q.Add(request("flood", fmt.Sprint(i)))
	}
	q.Add(request("flood", "0"))
	q.Add(request("quiet", "app"))
	g.Expect(q.Len()).To(Equal(4))
	first, _ := q.Get()
	second, _ := q.Get()
	g.Expect([]reconcile.Request{first, second}).To(Equal([]reconcile.Request{request("flood", "0"), request("quiet", "app")}))
	q.Done(first)
	q.Done(second)
	q.AddAfter(request("quiet", "again"), 10*time.Millisecond)
	g.Eventually(q.Len).Should(Equal(3))
}
