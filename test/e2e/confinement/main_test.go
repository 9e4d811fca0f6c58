// Package confinement_test proves, on the local control plane, that a
// tenant's chart-backed object cannot make the operator act outside the
// tenant's namespace (issue #26): the Habitat CRD refuses the mountPath
// injection; a chart that does print a value unquoted still cannot create a
// cluster-scoped object, an object of another namespace or of a kind its
// chart does not declare, hooks included; and a watch naming a
// ServiceAccount runs every Helm action of its objects, uninstall included,
// as that account of the object's namespace.
package confinement_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kraan-io/kraan-operator/internal/controller/kit"
	"github.com/kraan-io/kraan-operator/internal/operator"
	"github.com/kraan-io/kraan-operator/internal/watches"
	"github.com/kraan-io/kraan-operator/test/e2e/suite"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

// habitatServiceAccount is the ServiceAccount the Habitat watch names: its
// releases impersonate it in each Habitat's namespace.
const habitatServiceAccount = "habitat-deployer"

var (
	// k8s is the admin client of the plane.
	k8s client.Client
	// adminConfig is its configuration, for impersonating clients.
	adminConfig *rest.Config
)

func TestMain(m *testing.M) {
	os.Exit(suite.Run(m, suite.Options{InstallCRDs: true}, func(s *suite.Suite) error {
		k8s, adminConfig = s.Client, s.Config
		if _, err := envtest.InstallCRDs(s.Config, envtest.CRDInstallOptions{
			Paths: []string{filepath.Join("testdata", "crds")}, ErrorIfPathMissing: true,
		}); err != nil {
			return err
		}
		return startOperator(s)
	}))
}

// chartKinds are the repository's watches.yaml, its Habitat entry naming
// habitatServiceAccount, and the test's Widget kind, which names none.
func chartKinds() ([]watches.Watch, error) {
	file, err := testenv.WatchesFile()
	if err != nil {
		return nil, err
	}
	repo, err := watches.Load(file)
	if err != nil {
		return nil, err
	}
	for i := range repo {
		if repo[i].Kind == "Habitat" {
			repo[i].ServiceAccountName = habitatServiceAccount
		}
	}
	widget, err := watches.Load(filepath.Join("testdata", "watches.yaml"))
	if err != nil {
		return nil, err
	}
	return append(repo, widget...), nil
}

// startOperator runs the operator's manager in the test process, wired as
// cmd/main.go wires it, until the suite's cleanups run.
func startOperator(s *suite.Suite) error {
	kinds, err := chartKinds()
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(s.Config, ctrl.Options{
		Scheme: testenv.Scheme, Cache: operator.CacheOptions(nil),
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
	})
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	artifacts, err := os.MkdirTemp("", "kraan-e2e-confinement-")
	if err != nil {
		return err
	}
	s.Cleanup(func(int) { _ = os.RemoveAll(artifacts) })
	if err := operator.SetupAll(mgr, operator.Options{
		ControllerOptions: kit.ControllerOptions{MaxConcurrentReconciles: 4},
		Watches:           kinds, ChartArtifactsDir: artifacts,
		RecordKey: testenv.RecordKey,
	}); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(s.Context())
	stopped := make(chan error, 1)
	go func() { stopped <- mgr.Start(ctx) }()
	s.Cleanup(func(int) {
		cancel()
		if err := <-stopped; err != nil {
			fmt.Fprintln(os.Stderr, "operator:", err)
		}
	})
	return nil
}
