package kit

import (
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// newFairQueue is a controller's work queue whose order is fair between
// namespaces: client-go's workqueue (de-duplication, the items in process,
// delays, back-off) over a NamespaceFairQueue instead of one FIFO. One
// namespace's thousand queued objects then delay another namespace's object
// by one turn per worker, not by a thousand reconciles.
func newFairQueue(name string, rateLimiter workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	queue := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[reconcile.Request]{Name: name, Queue: NewNamespaceFairQueue()})
	delaying := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[reconcile.Request]{Name: name, Queue: queue})
	return workqueue.NewTypedRateLimitingQueueWithConfig(rateLimiter,
		workqueue.TypedRateLimitingQueueConfig[reconcile.Request]{Name: name, DelayingQueue: delaying})
}

// NamespaceFairQueue orders queued requests round robin between
// namespaces, and in arrival order within one. Cluster-scoped objects are
// the namespace "". It is the storage of a client-go workqueue, which calls
// it from one goroutine.
type NamespaceFairQueue struct {
	byNamespace map[string][]reconcile.Request
	// turns are the namespaces with queued requests, the next to serve
	// first.
	turns []string
	n     int
}

// NewNamespaceFairQueue returns an empty queue.
func NewNamespaceFairQueue() *NamespaceFairQueue {
	return &NamespaceFairQueue{byNamespace: map[string][]reconcile.Request{}}
}

// Touch keeps a request queued again where it was.
func (q *NamespaceFairQueue) Touch(reconcile.Request) {}

// Push queues a request behind its namespace's.
func (q *NamespaceFairQueue) Push(item reconcile.Request) {
	queued := q.byNamespace[item.Namespace]
	if len(queued) == 0 {
		q.turns = append(q.turns, item.Namespace)
	}
	q.byNamespace[item.Namespace] = append(queued, item)
	q.n++
}

// Len is the number of queued requests.
func (q *NamespaceFairQueue) Len() int { return q.n }

// Pop takes the oldest request of the namespace whose turn it is; that
// namespace's next turn comes after every other namespace's.
func (q *NamespaceFairQueue) Pop() reconcile.Request {
	ns := q.turns[0]
	q.turns = q.turns[1:]
	queued := q.byNamespace[ns]
	item := queued[0]
	queued[0] = reconcile.Request{} // let the namespace's backing array drop it
	if rest := queued[1:]; len(rest) > 0 {
		q.byNamespace[ns] = rest
		q.turns = append(q.turns, ns)
	} else {
		delete(q.byNamespace, ns)
	}
	q.n--
	return item
}
