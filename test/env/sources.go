package env

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// SourcesOptions configure StartSources.
type SourcesOptions struct {
	// Dir holds the Git repositories (<Dir>/git), the charts (<Dir>/helm)
	// and source-controller's storage (<Dir>/source-controller) and log
	// (<Dir>/source-controller.log).
	Dir string
	// SourceController is the source-controller binary ($KRAAN_SOURCE_CONTROLLER).
	SourceController string
	// Kubeconfig and Client reach the cluster whose sources these are; its
	// CRDs must include Flux's source CRDs.
	Kubeconfig string
	Client     client.Client
	// Progress, when set, is told about each step as it starts.
	Progress func(step string)
}

// Sources are what an operator reads layers and charts from: a Git server
// and a Helm chart repository on loopback, a real Flux source-controller,
// and, in FluxNamespace, the GitRepository GitRepositoryName (branch main)
// and the HelmRepository HelmRepositoryName pointing at them. Env starts them
// beside an operator in its process; suites that run the operator binary
// start them alone.
type Sources struct {
	// GitURL and HelmURL are the loopback URLs of the Git and Helm repositories.
	GitURL, HelmURL string

	dir    string
	client client.Client
	git    *gitServer
	helm   *helmRepo
	stops  []func() error // run in reverse order by Stop
}

// StartSources starts the Git server, the Helm repository and
// source-controller, and creates the namespace and the two source objects.
// ctx bounds start-up only. On error, whatever was started is stopped again.
func StartSources(ctx context.Context, o SourcesOptions) (s *Sources, err error) {
	s = &Sources{dir: o.Dir, client: o.Client}
	defer func() {
		if err != nil {
			err = errors.Join(err, s.Stop())
			s = nil
		}
	}()
	progress(o.Progress, "starting the Git server and the Helm repository")
	if s.git, err = startGitServer(ctx, filepath.Join(o.Dir, "git")); err != nil {
		return nil, err
	}
	s.stops = append(s.stops, s.git.stop)
	s.GitURL = s.git.url
	if s.helm, err = startHelmRepo(ctx, filepath.Join(o.Dir, "helm")); err != nil {
		return nil, err
	}
	s.stops = append(s.stops, s.helm.stop)
	s.HelmURL = s.helm.url
	progress(o.Progress, "starting Flux source-controller")
	sc, err := StartSourceController(o.SourceController, o.Kubeconfig, filepath.Join(o.Dir, "source-controller"))
	if err != nil {
		return nil, err
	}
	s.stops = append(s.stops, func() error { return sc.Stop(10 * time.Second) })
	return s, s.createObjects(ctx)
}

func progress(f func(string), step string) {
	if f != nil {
		f(step)
	}
}

// createObjects creates the flux-system namespace, the GitRepository of the
// Git server (branch main) and the HelmRepository of the Helm repository.
func (s *Sources) createObjects(ctx context.Context) error {
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: FluxNamespace}},
		&sourcev1.GitRepository{
			ObjectMeta: metav1.ObjectMeta{Namespace: FluxNamespace, Name: GitRepositoryName},
			Spec: sourcev1.GitRepositorySpec{URL: s.GitURL, Interval: metav1.Duration{Duration: time.Hour},
				Reference: &sourcev1.GitRepositoryRef{Branch: "main"}},
		},
		&sourcev1.HelmRepository{
			ObjectMeta: metav1.ObjectMeta{Namespace: FluxNamespace, Name: HelmRepositoryName},
			Spec:       sourcev1.HelmRepositorySpec{URL: s.HelmURL, Interval: metav1.Duration{Duration: time.Hour}},
		},
	}
	for _, o := range objs {
		if err := s.client.Create(ctx, o); err != nil {
			return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}

// AddChart packages the chart directory once per version given (none: the
// version of its Chart.yaml) and publishes it in the Helm repository.
func (s *Sources) AddChart(dir string, versions ...string) error { return s.helm.add(dir, versions...) }

// Stop stops the servers and source-controller, in the reverse order of
// starting, and returns all their errors.
func (s *Sources) Stop() error {
	var errs []error
	for i := len(s.stops) - 1; i >= 0; i-- {
		errs = append(errs, s.stops[i]())
	}
	s.stops = nil
	return errors.Join(errs...)
}
