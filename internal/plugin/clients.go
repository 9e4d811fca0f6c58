package plugin

import (
	"errors"
	"fmt"
	"strings"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	habitatv1 "github.com/kraan-io/kraan-operator/api/habitat/v1alpha1"
	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// scheme knows the kinds the plugin reads typed.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(kraanv1.AddToScheme(s))
	utilruntime.Must(habitatv1.AddToScheme(s))
	utilruntime.Must(sourcev1.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	return s
}()

// The kinds the commands are about, as messages name them.
const (
	layerKind   = "AddonsLayer"
	releaseKind = "HelmRelease"
)

// session is what one command talks to the cluster with.
type session struct {
	config *rest.Config
	client client.WithWatch
	mapper meta.RESTMapper
	// namespace is -n, or the kubeconfig context's namespace, or "default".
	namespace string
}

// connect builds the clients from kubectl's flags.
func (o *options) connect() (*session, error) {
	cfg, err := o.config.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = max(cfg.QPS, 50), max(cfg.Burst, 100)
	ns, _, err := o.config.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig: %w", err)
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme, Mapper: mapper, HTTPClient: httpClient})
	if err != nil {
		return nil, err
	}
	return &session{config: cfg, client: c, mapper: mapper, namespace: ns}, nil
}

// userMessage turns the errors users meet into a sentence that names the fix.
func userMessage(err error) string {
	var status apierrors.APIStatus
	switch {
	case missingAPI(err, kraanv1.GroupVersion.Group):
		return fmt.Sprintf("the cluster has no %s API (AddonsLayer, HelmRelease): install kraan-operator's CRDs, or check --context", kraanv1.GroupVersion.Group)
	case missingAPI(err, sourcev1.GroupVersion.Group):
		return fmt.Sprintf("the cluster has no Flux %s API: install Flux source-controller's CRDs", sourcev1.GroupVersion.Group)
	case errors.As(err, &status) && apierrors.IsForbidden(err):
		// The API server's message names the user, verb and resource.
		return strings.TrimSuffix(err.Error(), ".") + ": ask for that permission, or use --as with an identity that has it"
	case apierrors.IsUnauthorized(err):
		return "the cluster refused the credentials (Unauthorized): check --kubeconfig, --context or --token"
	}
	return err.Error()
}

// missingAPI reports whether err says the cluster does not serve group: a
// REST mapping without a match, or a discovery that found no such group.
func missingAPI(err error, group string) bool {
	var groupFailed *discovery.ErrGroupDiscoveryFailed
	switch {
	case errors.As(err, &groupFailed):
		for gv := range groupFailed.Groups {
			if gv.Group == group {
				return true
			}
		}
	case meta.IsNoMatchError(err):
		return strings.Contains(err.Error(), group)
	}
	return false
}
