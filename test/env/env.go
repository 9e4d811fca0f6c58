package env

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kraan-io/kraan-operator/test/localplane"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

const (
	// FluxNamespace holds the GitRepository and HelmRepository.
	FluxNamespace = "flux-system"
	// GitRepositoryName is the GitRepository serving the environment's Git repository.
	GitRepositoryName = "addons"
	// HelmRepositoryName is the HelmRepository serving the environment's charts.
	HelmRepositoryName = "charts"
)

// Options configure Start.
type Options struct {
	// Dir holds everything: the plane, Git repositories, storage and logs.
	Dir string
	// SourceController is the source-controller binary ($KRAAN_SOURCE_CONTROLLER).
	SourceController string
	// SourceCRDs is the directory of Flux's source CRDs ($KRAAN_SOURCE_CRDS).
	SourceCRDs string
	// Progress, when set, is told about each step as it starts.
	Progress func(step string)
}

// Env is a running environment. Stop it exactly once.
type Env struct {
	// Sources serve the Git and Helm repositories; Env.Commit and
	// Env.AddChart are theirs.
	*Sources
	// Dir is Options.Dir.
	Dir string
	// Kubeconfig is the admin kubeconfig of the control plane.
	Kubeconfig string
	// Client talks to the control plane with the operator's and Flux's types.
	Client client.WithWatch

	cfg   *rest.Config
	stops []func() error // run in reverse order by Stop
}

// OptionsFromEnv fills SourceController and SourceCRDs from the variables
// `make` exports, failing with a message naming `make` when they are unset,
// and checks KUBEBUILDER_ASSETS, which the local plane reads.
func OptionsFromEnv(dir string) (Options, error) {
	o := Options{Dir: dir, SourceController: os.Getenv("KRAAN_SOURCE_CONTROLLER"), SourceCRDs: os.Getenv("KRAAN_SOURCE_CRDS")}
	var missing []error
	for name, v := range map[string]string{"KRAAN_SOURCE_CONTROLLER": o.SourceController,
		"KRAAN_SOURCE_CRDS": o.SourceCRDs, "KUBEBUILDER_ASSETS": os.Getenv("KUBEBUILDER_ASSETS")} {
		if v == "" {
			missing = append(missing, fmt.Errorf("%s is not set: run through `make demo` or `make test`, which build the tools and set it", name))
		}
	}
	return o, errors.Join(missing...)
}

func (o Options) progress(step string) {
	if o.Progress != nil {
		o.Progress(step)
	}
}

// Start brings everything up. ctx bounds start-up only; the environment runs
// until Stop. On error, whatever was started is stopped again.
func Start(ctx context.Context, o Options) (e *Env, err error) {
	e = &Env{Dir: o.Dir}
	defer func() {
		if err != nil {
			err = errors.Join(err, e.Stop())
			e = nil
		}
	}()
	if err := e.startPlane(ctx, o); err != nil {
		return nil, err
	}
	if e.Sources, err = StartSources(ctx, SourcesOptions{Dir: o.Dir, SourceController: o.SourceController,
		Kubeconfig: e.Kubeconfig, Client: e.Client, Progress: o.Progress}); err != nil {
		return nil, err
	}
	e.stops = append(e.stops, e.Sources.Stop)
	o.progress("starting the operator")
	stop, err := startOperator(e.cfg, o.Dir)
	if err != nil {
		return nil, err
	}
	e.stops = append(e.stops, stop)
	return e, nil
}

// startPlane starts the local control plane and installs the CRDs.
func (e *Env) startPlane(ctx context.Context, o Options) error {
	o.progress("starting the local control plane (etcd, kube-apiserver, controller-manager, scheduler, kwok)")
	plane, err := localplane.Start(ctx, localplane.Options{Dir: filepath.Join(o.Dir, "plane")})
	if err != nil {
		return err
	}
	e.stops = append(e.stops, plane.Stop)
	e.Kubeconfig = plane.Kubeconfig()
	e.cfg = plane.RESTConfig()
	o.progress("installing the CRDs")
	root, err := testenv.RepoRoot()
	if err != nil {
		return err
	}
	if _, err := envtest.InstallCRDs(plane.RESTConfig(), envtest.CRDInstallOptions{
		Paths: []string{filepath.Join(root, "config", "crd", "bases"), o.SourceCRDs}, ErrorIfPathMissing: true}); err != nil {
		return fmt.Errorf("installing CRDs: %w", err)
	}
	e.Client, err = client.NewWithWatch(plane.RESTConfig(), client.Options{Scheme: testenv.Scheme})
	return err
}

// Stop stops every component in the reverse order of starting and returns
// all their errors.
func (e *Env) Stop() error {
	var errs []error
	for i := len(e.stops) - 1; i >= 0; i-- {
		errs = append(errs, e.stops[i]())
	}
	e.stops = nil
	return errors.Join(errs...)
}
