package bench

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/test/bench/report"
	"github.com/kraan-io/kraan-operator/test/chartrepo"
)

// Phases of the operator's measurement.
const (
	operatorNamespace = "operator"
	// idleWindow is how long idle CPU is measured after all are Ready.
	idleWindow = 30 * time.Second
	// creators create the HelmReleases in parallel, so that n of them
	// exist "at once" rather than at the pace of one client.
	creators = 8
	// minPhaseTimeout bounds each waiting phase at small sizes; the bench
	// reports, it does not judge, but it must end.
	minPhaseTimeout = 45 * time.Minute
)

// phaseTimeout bounds a waiting phase of n releases: at least
// minPhaseTimeout, and 0.6 s per release above that (the local plane rolls
// out about 4 releases a second; 10,000 take ~40 min raw).
func phaseTimeout(n int) time.Duration {
	return max(minPhaseTimeout, time.Duration(n)*600*time.Millisecond)
}

// operatorRun is one size's operator measurement in progress.
type operatorRun struct {
	c       client.WithWatch
	bin     string
	dir     string
	n       int
	proxy   *countingProxy
	kubecfg string
	op      *operatorProcess
	res     report.Operator
	// planePIDs are the plane's processes, whose CPU time is measured
	// beside the operator's.
	planePIDs []int
}

// measureOperator runs the operator binary through the counting proxy and
// measures the install of n HelmReleases, the idle cost, a forced resync and
// a cold start after SIGKILL.
func measureOperator(ctx context.Context, p *planeEnv, bin string, n int) (res report.Operator, err error) {
	repo := chartrepo.NewHTTPRepo(p.tb, chartrepo.ChartDir("small"))
	proxy, err := startProxy(p.cfg)
	if err != nil {
		return res, err
	}
	defer proxy.stop()
	r := &operatorRun{c: p.client, bin: bin, dir: p.dir, n: n, proxy: proxy, kubecfg: filepath.Join(p.dir, "operator.kubeconfig"),
		planePIDs: p.plane.PIDs()}
	if err := proxy.writeKubeconfig(r.kubecfg); err != nil {
		return res, err
	}
	if err := r.createRepository(ctx, repo.URL); err != nil {
		return res, err
	}
	if r.op, err = startOperator(ctx, bin, r.kubecfg, p.dir, "operator-1"); err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, r.op.stop()) }()
	steps := []struct {
		name string
		run  func(context.Context) error
	}{
		{"install", r.install}, {"idle", r.idle}, {"resync", r.resync}, {"cold start", r.coldStart},
	}
	for _, s := range steps {
		progressf("  operator, %d releases: %s", n, s.name)
		if err := s.run(ctx); err != nil {
			return r.res, fmt.Errorf("operator %s: %w\n%s", s.name, err, r.op.proc.LogTail(30))
		}
	}
	return r.res, nil
}

func (r *operatorRun) createRepository(ctx context.Context, url string) error {
	if err := r.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNamespace}}); err != nil {
		return err
	}
	return r.c.Create(ctx, &sourcev1.HelmRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "charts", Namespace: operatorNamespace},
		Spec:       sourcev1.HelmRepositorySpec{URL: url, Interval: metav1.Duration{Duration: time.Hour}},
	})
}

func releaseName(i int) string { return fmt.Sprintf("r%d", i) }

// install creates the n HelmReleases at once and waits until all are Ready.
func (r *operatorRun) install(ctx context.Context) error {
	before, err := r.op.scrape(ctx)
	if err != nil {
		return err
	}
	requests := r.proxy.counts.snapshot()
	cpuBefore, planeBefore, err := r.cpuTimes()
	if err != nil {
		return err
	}
	sampling, stopSampling := context.WithCancel(ctx)
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		r.op.sampleInstall(sampling, filepath.Join(r.dir, fmt.Sprintf("heap-peak-%d.pprof", r.n)), &r.res.Pacing, r.planePIDs)
	}()
	progress := &curve{}
	at, start, err := r.whileWatching(ctx, isReady, progress, func(ctx context.Context) error {
		return parallel(r.n, creators, func(i int) error {
			return r.c.Create(ctx, &kraanv1.HelmRelease{
				ObjectMeta: metav1.ObjectMeta{Name: releaseName(i), Namespace: operatorNamespace},
				Spec: kraanv1.HelmReleaseSpec{Chart: &kraanv1.HelmChartTemplate{Spec: kraanv1.HelmChartTemplateSpec{
					Chart: "small", SourceRef: &kraanv1.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "charts"},
				}}},
			})
		})
	})
	stopSampling()
	<-sampled
	if err != nil {
		return err
	}
	r.res.Install = r.proxy.counts.since(requests)
	r.res.Seconds = at.Sub(start).Seconds()
	cpuAfter, planeAfter, err := r.cpuTimes()
	if err != nil {
		return err
	}
	r.res.CPUSeconds, r.res.PlaneCPUSeconds = (cpuAfter - cpuBefore).Seconds(), (planeAfter - planeBefore).Seconds()
	r.res.Curve = progress.secondsSince(start)
	after, err := r.op.scrape(ctx)
	if err != nil {
		return err
	}
	r.res.HelmActionsInstall = after.helmActions() - before.helmActions()
	r.res.StatusWritesInstall = map[string]float64{}
	for _, cause := range []string{"queued", "progress", "reconcile"} {
		r.res.StatusWritesInstall[cause] = after.statusWrites(cause) - before.statusWrites(cause)
	}
	r.res.PeakRSSMiB, r.res.ReadyRSSMiB, err = r.op.memoryMiB()
	return err
}

// cpuTimes are the operator's and the plane's CPU time so far.
func (r *operatorRun) cpuTimes() (operator, plane time.Duration, err error) {
	if operator, err = r.op.cpuTime(); err != nil {
		return 0, 0, err
	}
	plane, err = planeCPUTime(r.planePIDs)
	return operator, plane, err
}

// whileWatching runs act while watching the operator's HelmReleases, and
// returns when act started and when done first held for all n of them;
// progress (nil for none) records the way there.
func (r *operatorRun) whileWatching(ctx context.Context, done func(client.Object) bool, progress *curve,
	act func(context.Context) error) (at, start time.Time, err error) {
	ctx, cancel := context.WithTimeout(ctx, phaseTimeout(r.n))
	defer cancel()
	result := make(chan watchResult, 1)
	go func() {
		at, err := watchCount(ctx, r.c, &kraanv1.HelmReleaseList{}, &kraanv1.HelmRelease{}, operatorNamespace, nil, progress, done, r.n)
		result <- watchResult{at, err}
	}()
	start = time.Now()
	if err := act(ctx); err != nil {
		return at, start, err
	}
	res := <-result
	return res.at, start, res.err
}

func isReady(o client.Object) bool {
	hr, ok := o.(*kraanv1.HelmRelease)
	return ok && apimeta.IsStatusConditionTrue(hr.Status.Conditions, kraanv1.ReadyCondition)
}

// idle measures the process's CPU time over idleWindow right after all
// were Ready, which still holds the wave's end (the memory handed back
// 5 s after the last run, the rollout informers stopping 10 s after the
// last wait), then over the idleWindow after it: the settled steady state.
func (r *operatorRun) idle(ctx context.Context) error {
	var err error
	r.res.IdleCPUPercent, r.res.IdleReconciles, r.res.IdleWindowSeconds, err = r.cpuOver(ctx, idleWindow)
	if err != nil {
		return err
	}
	if _, r.res.IdleRSSMiB, err = r.op.memoryMiB(); err != nil {
		return err
	}
	if r.res.IdleAnonMiB, r.res.IdleFileMiB, err = r.op.residentSplitMiB(); err != nil {
		return err
	}
	r.res.SettledCPUPercent, r.res.SettledReconciles, _, err = r.cpuOver(ctx, idleWindow)
	if err != nil {
		return err
	}
	// The heap profile of the steady state, for `go tool pprof` (where the
	// RSS goes); taken last, as its GC changes the resident set.
	r.res.IdleHeapMiB, err = r.op.saveHeapProfile(ctx, filepath.Join(r.dir, fmt.Sprintf("heap-%d.pprof", r.n)))
	return err
}

// cpuOver measures the process's CPU time over window, in % of one core,
// and the HelmRelease reconciles in it.
func (r *operatorRun) cpuOver(ctx context.Context, window time.Duration) (percent, reconciles, seconds float64, err error) {
	reconcileCount := func() (float64, error) {
		m, err := r.op.scrape(ctx)
		return m.sum("controller_runtime_reconcile_total", map[string]string{"controller": "helmrelease"}), err
	}
	reconcilesBefore, err := reconcileCount()
	if err != nil {
		return 0, 0, 0, err
	}
	before, err := r.op.cpuTime()
	if err != nil {
		return 0, 0, 0, err
	}
	began := time.Now()
	time.Sleep(window) // the measurement window itself, not a wait for something
	after, err := r.op.cpuTime()
	if err != nil {
		return 0, 0, 0, err
	}
	took := time.Since(began)
	reconcilesAfter, err := reconcileCount()
	if err != nil {
		return 0, 0, 0, err
	}
	return 100 * (after - before).Seconds() / took.Seconds(), reconcilesAfter - reconcilesBefore, took.Seconds(), nil
}

// resync asks for a reconcile of every HelmRelease (Flux's
// reconcile.fluxcd.io/requestedAt) and counts what it cost until each has
// handled the request: nothing changed, so nothing should be done.
func (r *operatorRun) resync(ctx context.Context) error {
	revisions, err := r.revisions(ctx)
	if err != nil {
		return err
	}
	before, err := r.op.scrape(ctx)
	if err != nil {
		return err
	}
	requests := r.proxy.counts.snapshot()
	token := strconv.FormatInt(time.Now().UnixNano(), 10)
	handled := func(o client.Object) bool {
		hr, ok := o.(*kraanv1.HelmRelease)
		return ok && hr.Status.LastHandledReconcileAt == token
	}
	at, start, err := r.whileWatching(ctx, handled, nil, func(ctx context.Context) error {
		return parallel(r.n, creators, func(i int) error {
			hr := &kraanv1.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: releaseName(i), Namespace: operatorNamespace}}
			patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, "reconcile.fluxcd.io/requestedAt", token)
			return r.c.Patch(ctx, hr, client.RawPatch("application/merge-patch+json", patch))
		})
	})
	if err != nil {
		return err
	}
	r.res.Resync.Requests = r.proxy.counts.since(requests)
	r.res.Resync.SecretLists = r.res.Resync.Requests.ByKind["LIST secrets"]
	r.res.Resync.Seconds = at.Sub(start).Seconds()
	after, err := r.op.scrape(ctx)
	if err != nil {
		return err
	}
	r.res.Resync.HelmActions = after.helmActions() - before.helmActions()
	now, err := r.revisions(ctx)
	r.res.Resync.NewRevisions = now - revisions
	return err
}

// revisions counts the Helm release revisions in storage (Secrets labelled
// owner=helm) of the operator's namespace.
func (r *operatorRun) revisions(ctx context.Context) (int, error) {
	secrets := &metav1.PartialObjectMetadataList{}
	secrets.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	err := r.c.List(ctx, secrets, client.InNamespace(operatorNamespace), client.MatchingLabels{"owner": "helm"})
	return len(secrets.Items), err
}

// coldStart SIGKILLs the operator and times a new process from its start
// until it has confirmed every HelmRelease: at least n reconciles of the
// helmrelease controller, its queue empty and no worker busy, and every
// HelmRelease Ready. Its metrics are polled every 100 ms (a short poll with
// a deadline: they have no watch).
func (r *operatorRun) coldStart(ctx context.Context) error {
	revisions, err := r.revisions(ctx)
	if err != nil {
		return err
	}
	if err := r.op.kill(); err != nil {
		return err
	}
	requests := r.proxy.counts.snapshot()
	op, err := startOperator(ctx, r.bin, r.kubecfg, r.dir, "operator-2")
	if err != nil {
		return err
	}
	r.op = op // the killed one needs no stopping
	cs := &r.res.ColdStart
	cs.ReadyzSeconds = r.op.readyz.Sub(r.op.started).Seconds()
	ctx, cancel := context.WithTimeout(ctx, phaseTimeout(r.n))
	defer cancel()
	controller := map[string]string{"controller": "helmrelease"}
	for {
		m, err := r.op.scrape(ctx)
		if err != nil {
			return err
		}
		cs.Reconciles = m.sum("controller_runtime_reconcile_total", controller)
		if cs.Reconciles >= float64(r.n) && m.sum("workqueue_depth", map[string]string{"name": "helmrelease"}) == 0 &&
			m.sum("controller_runtime_active_workers", controller) == 0 {
			confirmed := time.Now()
			ready, err := r.countReady(ctx)
			if err != nil {
				return err
			}
			if ready == r.n {
				cs.Seconds = confirmed.Sub(r.op.started).Seconds()
				cs.HelmActions = m.helmActions()
				if cs.PeakRSSMiB, cs.RSSMiB, err = r.op.memoryMiB(); err != nil {
					return err
				}
				break
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not confirmed after %v (%.0f reconciles): %w", phaseTimeout(r.n), cs.Reconciles, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	cs.Requests = r.proxy.counts.since(requests)
	now, err := r.revisions(ctx)
	cs.NewRevisions = now - revisions
	return err
}

func (r *operatorRun) countReady(ctx context.Context) (int, error) {
	list := &kraanv1.HelmReleaseList{}
	if err := r.c.List(ctx, list, client.InNamespace(operatorNamespace)); err != nil {
		return 0, err
	}
	ready := 0
	for _, hr := range list.Items {
		if apimeta.IsStatusConditionTrue(hr.Status.Conditions, kraanv1.ReadyCondition) {
			ready++
		}
	}
	return ready, nil
}

// parallel runs f(0..n-1) on `workers` goroutines and returns the first
// errors of each.
func parallel(n, workers int, f func(int) error) error {
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				if err := f(i); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
