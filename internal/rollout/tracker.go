// Package rollout waits for objects to become ready the way a controller
// does: from watch events, judged by kstatus (or by a tenant's CEL health
// check expressions under the poller strategy), with one shared informer per
// kind however many waits are in flight. It replaces Helm's waits, legacy
// and poller, which poll or watch every object of a release from the
// goroutine that runs the action.
package rollout

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
)

// ManagedByLabel and ManagedByHelm: Helm labels every object it creates,
// updates or rolls back with them, so the informers list only Helm's objects,
// not every Deployment of the cluster.
const (
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedByHelm  = "Helm"
)

// Object is one object a wait is for.
type Object struct {
	Resource  schema.GroupVersionResource
	Kind      string
	Namespace string
	Name      string
	// Generation is the generation the object was written at; an informer
	// copy older than that is not judged (it may say Current for the spec
	// before the change). 0 accepts any.
	Generation int64
}

func (o Object) key() string {
	if o.Namespace == "" {
		return o.Name
	}
	return o.Namespace + "/" + o.Name
}

func (o Object) String() string { return o.Kind + " " + o.key() }

func (o Object) groupKind() schema.GroupKind {
	return schema.GroupKind{Group: o.Resource.Group, Kind: o.Kind}
}

// Options change how a wait judges objects.
type Options struct {
	// FailFast is Helm's wait with jobs. Under StrategyLegacy it ends the
	// wait with an error as soon as an object is Failed (a Job out of
	// retries); otherwise only the timeout ends a wait that is not ready.
	// Under StrategyPoller a Failed object always ends the wait, and
	// FailFast makes a Job ready only once Complete, as Helm 4's
	// WaitWithJobs (kstatus says Current once it started).
	FailFast bool
	// Strategy is which objects the caller hands and how they are judged;
	// the zero value is StrategyLegacy.
	Strategy Strategy
	// HealthCheckExprs judge the objects of their kinds instead of kstatus,
	// under StrategyPoller only (as Flux, which evaluates them only with
	// the poller); ignored under StrategyLegacy. An expression that does
	// not compile fails the wait at once with a *HealthCheckError.
	HealthCheckExprs []HealthCheckExpr
}

// pollInterval is how often an object the informers cannot see (its
// managed-by label was removed) is read directly: Helm's own interval.
const pollInterval = 2 * time.Second

// defaultIdle is how long an informer is kept after its last wait ended:
// waits come in waves, and a wave should not restart the watch per release.
// Within a wave, and between chained layers, waits follow each other within
// a second; past the wave, the informer holds every Helm object of its kind
// (a few MiB at 1000 releases) for nothing.
const defaultIdle = 10 * time.Second

// Tracker waits for objects of one cluster. It is safe for concurrent use.
type Tracker struct {
	client dynamic.Interface
	idle   time.Duration

	mu    sync.Mutex
	kinds map[informerKey]*kind
	// closed says the tracker's cluster is no longer used (Close): an
	// informer stops as soon as its last wait ends, not t.idle later.
	closed bool
	// namespaced says, per resource probed, whether the operator may not
	// list it cluster-wide (Roles in some namespaces only): it is then
	// watched per namespace.
	namespacedMu sync.Mutex
	namespaced   map[schema.GroupVersionResource]bool
}

// informerKey names an informer: a resource, cluster-wide ("") or in one
// namespace, its objects slimmed or whole.
type informerKey struct {
	resource  schema.GroupVersionResource
	namespace string
	// whole keeps the objects as they are, but for their managed fields:
	// a health check expression may read any field. Only the kinds that
	// tenants judge with expressions pay for it.
	whole bool
}

// kind is the informer of one resource and the waits that listen to it.
type kind struct {
	key      informerKey
	informer cache.SharedIndexInformer
	stop     context.CancelFunc
	waiters  map[string]map[*waiter]struct{}
	users    int
	idle     *time.Timer
}

// waiter is one Wait call, woken when an object it waits for changes.
type waiter struct {
	wake chan struct{}
}

func (w *waiter) notify() {
	select {
	case w.wake <- struct{}{}:
	default: // already woken; the waiter reads every object again anyway
	}
}

// NewTracker returns a tracker of the cluster client talks to.
func NewTracker(client dynamic.Interface) *Tracker {
	return &Tracker{client: client, idle: defaultIdle, kinds: map[informerKey]*kind{},
		namespaced: map[schema.GroupVersionResource]bool{}}
}

// pending is an object not yet ready, and why.
type pending struct {
	Object
	// polled objects are read directly: the informer does not list them.
	polled bool
	// checked says the object was looked for outside the informer once.
	checked bool
	// since is when the wait for it began.
	since time.Time
	// informer is the informer listing it.
	informer *kind
	// check judges it instead of kstatus: a health check expression of
	// its kind, under the poller.
	check *healthCheck
	why   string
}

// Wait blocks until every object is ready by kstatus (Current) or by its
// health check expression, timeout has passed (an error naming each object
// not ready and why), or ctx ends. See Options for what ends it sooner.
func (t *Tracker) Wait(ctx context.Context, objs []Object, timeout time.Duration, opts Options) error {
	now := time.Now()
	todo, err := t.pendingOf(objs, now, opts)
	if err != nil || len(todo) == 0 {
		return err
	}
	all := append([]*pending(nil), todo...)
	w := &waiter{wake: make(chan struct{}, 1)}
	// The informers' first sync counts against the timeout: an informer
	// that cannot sync fails the wait at its deadline, not never.
	syncCtx, cancel := context.WithTimeout(ctx, max(timeout, time.Second))
	err = t.listen(syncCtx, w, all)
	cancel()
	defer t.unlisten(w, all)
	if err != nil {
		return err
	}
	deadline := time.NewTimer(max(timeout-time.Since(now), 0))
	defer deadline.Stop()
	poll := time.NewTicker(pollInterval)
	defer poll.Stop()
	for {
		todo, err = t.judge(ctx, todo, opts)
		if err != nil || len(todo) == 0 {
			return err
		}
		select {
		case <-w.wake:
		case <-poll.C:
			// Objects read directly, and ones the informer has not shown,
			// are looked at again; the others come with their events.
		case <-deadline.C:
			// One last look: an event may have come with the deadline.
			if todo, err = t.judge(ctx, todo, opts); err != nil || len(todo) == 0 {
				return err
			}
			return &TimeoutError{Timeout: timeout, NotReady: describe(todo)}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// TimeoutError is a wait that ended at its timeout.
type TimeoutError struct {
	Timeout  time.Duration
	NotReady []string
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("timed out after %s waiting for the condition: %s", e.Timeout, strings.Join(e.NotReady, "; "))
}

func describe(todo []*pending) []string {
	out := make([]string, 0, len(todo))
	for _, p := range todo {
		out = append(out, p.String()+": "+p.why)
	}
	sort.Strings(out)
	return out
}

// pendingOf are the objects a wait must watch: those of statusless kinds
// are left out (ready once applied; only the poller's caller hands them)
// unless an expression judges them, and under the poller the others get
// their kind's expression. Expressions that do not compile are refused here,
// before anything is watched, even with no object to judge.
func (t *Tracker) pendingOf(objs []Object, now time.Time, opts Options) ([]*pending, error) {
	var checks healthChecks
	if opts.Strategy.poller() {
		var err error
		if checks, err = compileHealthChecks(opts.HealthCheckExprs); err != nil {
			return nil, err
		}
	}
	todo := make([]*pending, 0, len(objs))
	for _, o := range objs {
		gk := o.groupKind()
		check := checks.of(gk)
		if check == nil && statusless[gk] {
			continue
		}
		todo = append(todo, &pending{Object: o, since: now, check: check})
	}
	return todo, nil
}

// judge returns the objects still not ready; an error for a failed object
// when opts.FailFast or under the poller, or for an expression that cannot
// judge.
func (t *Tracker) judge(ctx context.Context, todo []*pending, opts Options) ([]*pending, error) {
	left := todo[:0]
	for _, p := range todo {
		u, err := t.current(ctx, p.informer, p)
		if err != nil {
			return nil, err
		}
		if u == nil {
			left = append(left, p)
			continue
		}
		if p.Generation > 0 && u.GetGeneration() < p.Generation {
			p.why = fmt.Sprintf("generation %d not yet seen", p.Generation)
			left = append(left, p)
			continue
		}
		status, message, err := p.status(ctx, u, opts)
		var unjudgeable *HealthCheckError
		switch {
		case errors.As(err, &unjudgeable):
			return nil, err
		case err != nil:
			p.why = err.Error()
			left = append(left, p)
			continue
		}
		switch {
		case status == kstatus.CurrentStatus:
			continue
		case status == kstatus.FailedStatus && (opts.FailFast || opts.Strategy.poller()):
			return nil, fmt.Errorf("%s failed: %s", p.Object, message)
		}
		p.why = strings.TrimSpace(status.String() + ": " + message)
		left = append(left, p)
	}
	return left, nil
}

// status judges u: by its health check expression, by Helm 4's rule for
// Jobs in a poller's wait with jobs, or by kstatus.
func (p *pending) status(ctx context.Context, u *unstructured.Unstructured, opts Options) (kstatus.Status, string, error) {
	switch {
	case p.check != nil:
		return p.check.judge(ctx, u, p.String())
	case opts.Strategy.poller() && opts.FailFast && p.groupKind() == jobKind:
		status, message := completedJob(u)
		return status, message, nil
	}
	res, err := kstatus.Compute(u)
	if err != nil {
		return "", "", err
	}
	return res.Status, res.Message, nil
}

// current is the object as the informer has it, or as read directly when
// the informer cannot list it; nil when it is not there (yet).
func (t *Tracker) current(ctx context.Context, k *kind, p *pending) (*unstructured.Unstructured, error) {
	if !p.polled {
		obj, exists, err := k.informer.GetStore().GetByKey(p.key())
		if err != nil {
			return nil, err
		}
		if exists {
			return obj.(*unstructured.Unstructured), nil
		}
		if p.checked || time.Since(p.since) < pollInterval {
			// Just written: its event is on the way.
			p.why = "not found"
			return nil, nil
		}
	}
	// Not in the informer a while after the wait began: without Helm's
	// label (someone removed it), or not there. One read tells which.
	p.checked = true
	u, err := t.client.Resource(p.Resource).Namespace(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		p.why = "not found"
		return nil, nil
	case err != nil:
		p.why = err.Error()
		return nil, nil //nolint:nilerr // an unreachable API server is waited out like a not-ready object
	}
	p.polled = u.GetLabels()[ManagedByLabel] != ManagedByHelm
	return u, nil
}
