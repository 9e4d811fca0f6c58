package kit

import (
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// priorityStep separates the priorities callers ask for (a run's end is
// ahead of an ordinary event, controller-runtime's initial list behind it):
// the fair order only orders requests within one of them.
const priorityStep = 1 << 40

// fairQueue is controller-runtime's priority queue with the workers shared
// between namespaces, by fair queuing: each request gets a tag, one after
// its namespace's last queued request's and no earlier than the tag of the
// last request a worker took, and within the priority its caller asked for
// the lower tag goes first. A namespace's thousand queued objects then delay
// another namespace's object by about one request, not by the thousand;
// within a namespace (and with one namespace, as in a wave of one layer) the
// order is arrival, as before, and no request waits for ever.
type fairQueue struct {
	priorityqueue.PriorityQueue[reconcile.Request]

	mu sync.Mutex
	// tags of the requests queued (not yet taken by a worker).
	tags map[reconcile.Request]uint64
	// last is the tag of each namespace's last queued request, for the
	// namespaces with requests queued; queued counts them.
	last   map[string]uint64
	queued map[string]int
	// virtual is the tag of the last request a worker took.
	virtual uint64
}

// newFairQueue is the queue of a controller (controller.Options.NewQueue).
func newFairQueue(log logr.Logger) func(string, workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	return func(name string, rateLimiter workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
		return &fairQueue{
			PriorityQueue: priorityqueue.New(name, func(o *priorityqueue.Opts[reconcile.Request]) {
				o.Log = log.WithValues("controller", name)
				o.RateLimiter = rateLimiter
			}),
			tags: map[reconcile.Request]uint64{}, last: map[string]uint64{}, queued: map[string]int{},
		}
	}
}

// priorityOf is the priority of item asked at asked, with its tag: the one
// it has while queued, else the next of its namespace.
func (q *fairQueue) priorityOf(item reconcile.Request, asked *int) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	tag, ok := q.tags[item]
	if !ok {
		tag = max(q.virtual, q.last[item.Namespace]) + 1
		q.tags[item] = tag
		q.last[item.Namespace] = tag
		q.queued[item.Namespace]++
	}
	return ptr.Deref(asked, 0)*priorityStep - int(tag%priorityStep)
}

// got records that a worker took item.
func (q *fairQueue) got(item reconcile.Request) {
	q.mu.Lock()
	defer q.mu.Unlock()
	tag, ok := q.tags[item]
	if !ok {
		return
	}
	delete(q.tags, item)
	q.virtual = max(q.virtual, tag)
	if q.queued[item.Namespace]--; q.queued[item.Namespace] <= 0 {
		delete(q.queued, item.Namespace)
		delete(q.last, item.Namespace)
	}
}

// AddWithOpts queues items at their namespaces' priorities.
func (q *fairQueue) AddWithOpts(o priorityqueue.AddOpts, items ...reconcile.Request) {
	for _, item := range items {
		opts := o
		opts.Priority = ptr.To(q.priorityOf(item, o.Priority))
		q.PriorityQueue.AddWithOpts(opts, item)
	}
}

// Add queues item.
func (q *fairQueue) Add(item reconcile.Request) { q.AddWithOpts(priorityqueue.AddOpts{}, item) }

// AddAfter queues item after a delay.
func (q *fairQueue) AddAfter(item reconcile.Request, after time.Duration) {
	q.AddWithOpts(priorityqueue.AddOpts{After: after}, item)
}

// AddRateLimited queues item after its back-off.
func (q *fairQueue) AddRateLimited(item reconcile.Request) {
	q.AddWithOpts(priorityqueue.AddOpts{RateLimited: true}, item)
}

// Get hands a worker the next request.
func (q *fairQueue) Get() (reconcile.Request, bool) {
	item, _, shutdown := q.GetWithPriority()
	return item, shutdown
}

// GetWithPriority hands a worker the next request, with its priority.
func (q *fairQueue) GetWithPriority() (reconcile.Request, int, bool) {
	item, priority, shutdown := q.PriorityQueue.GetWithPriority()
	if !shutdown {
		q.got(item)
	}
	return item, priority, shutdown
}
