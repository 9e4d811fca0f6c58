package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// settingsConfigMap is the ConfigMap of the operator's namespace whose keys
// set flags, for installs that can pass the operator neither arguments nor
// environment (OLM v1's ClusterExtension has no Subscription, so no
// spec.config.env). A key is a flag's name (`max-render-memory: 512Mi`).
// The command line wins, then KRAAN_* variables, then this ConfigMap, then
// the flag's default.
const settingsConfigMap = "kraan-operator-settings"

// settingsPollInterval is how often the running operator reads the
// ConfigMap again; a change stops the operator, which its Deployment
// restarts with the new settings.
var settingsPollInterval = 30 * time.Second

// ownNamespace is the operator's namespace: $RUNTIME_NAMESPACE, else
// --leader-election-namespace, else the pod's; "" outside a cluster.
func (o *options) ownNamespace() string {
	if ns := os.Getenv("RUNTIME_NAMESPACE"); ns != "" {
		return ns
	}
	if o.leaderElectionNamespace != "" {
		return o.leaderElectionNamespace
	}
	if data, err := os.ReadFile(inClusterNamespaceFile); err == nil {
		return strings.TrimSpace(string(data))
	}
	return ""
}

// settings are the ConfigMap's data as read, and a digest to tell a change.
type settings struct {
	namespace string
	data      map[string]string
	digest    string
}

// readSettings reads the settings ConfigMap of namespace: none when it does
// not exist, or the operator may not read it.
func readSettings(ctx context.Context, cfg *rest.Config, namespace string) (settings, error) {
	s := settings{namespace: namespace}
	if namespace == "" {
		return s, nil
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return s, err
	}
	cm, err := cs.CoreV1().ConfigMaps(namespace).Get(ctx, settingsConfigMap, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err), apierrors.IsForbidden(err):
		return s, nil
	case err != nil:
		return s, fmt.Errorf("reading ConfigMap %s/%s: %w", namespace, settingsConfigMap, err)
	}
	s.data = cm.Data
	s.digest = digestOf(cm.Data)
	return s, nil
}

// digestOf is a digest of data, keys sorted.
func digestOf(data map[string]string) string {
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%d:%s=%d:%s;", len(k), k, len(data[k]), data[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// setFlagsFromSettings sets every flag of fs set neither on the command line
// nor from the environment (fromEnv) from data. It refuses a key that names
// no flag, or a value the flag refuses, naming the key. It returns the keys
// it used, sorted (names only: values are not logged).
func setFlagsFromSettings(fs *flag.FlagSet, fromEnv []string, data map[string]string) ([]string, error) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, env := range fromEnv {
		set[strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(env, envPrefix), "_", "-"))] = true
	}
	var used []string
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		if fs.Lookup(key) == nil {
			return nil, fmt.Errorf("key %q of ConfigMap %s names no flag of the operator", key, settingsConfigMap)
		}
		if set[key] {
			continue
		}
		if err := fs.Set(key, data[key]); err != nil {
			return nil, fmt.Errorf("invalid value for key %q of ConfigMap %s (--%s): %w", key, settingsConfigMap, key, err)
		}
		used = append(used, key)
	}
	return used, nil
}

// parseOptionsWithSettings is parseOptionsEnv with the settings ConfigMap's
// data between the environment and the defaults.
func parseOptionsWithSettings(args []string, output io.Writer, lookup func(string) (string, bool), data map[string]string) (*options, error) {
	opts := &options{}
	fs := newFlagSet(opts, output)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	var err error
	if opts.fromEnv, err = setFlagsFromEnv(fs, lookup); err != nil {
		return nil, err
	}
	if opts.fromSettings, err = setFlagsFromSettings(fs, opts.fromEnv, data); err != nil {
		return nil, err
	}
	if err := opts.check(); err != nil {
		return nil, err
	}
	return opts, nil
}

// withSettings returns opts with the settings ConfigMap applied, and the
// settings read. A ConfigMap the operator cannot use (a key naming no flag,
// a value a flag refuses, settings that fail the flags' checks) is logged and
// left out whole: a mistake in the cluster's data must not stop the operator.
func withSettings(ctx context.Context, log logr.Logger, args []string, output io.Writer, opts *options) (*options, settings) {
	cfg, err := restConfig(opts.kubeconfig)
	if err != nil {
		return opts, settings{}
	}
	s, err := readSettings(ctx, cfg, opts.ownNamespace())
	if err != nil {
		log.Error(err, "Not reading the settings ConfigMap")
		return opts, s
	}
	if len(s.data) == 0 {
		return opts, s
	}
	withData, err := parseOptionsWithSettings(args, output, os.LookupEnv, s.data)
	if err != nil {
		log.Error(err, "Ignoring the settings ConfigMap", "configMap", s.namespace+"/"+settingsConfigMap)
		return opts, s
	}
	if len(withData.fromSettings) > 0 {
		log.Info("Flags set from the settings ConfigMap", "configMap", s.namespace+"/"+settingsConfigMap, "keys", withData.fromSettings)
	}
	return withData, s
}

// settingsWatch stops the operator when the settings ConfigMap changes, so
// that its Deployment restarts it with them. Every replica runs it, leader
// or not.
type settingsWatch struct {
	cfg     *rest.Config
	read    settings
	restart context.CancelFunc
	log     logr.Logger
}

// errSettingsChanged is why the operator stopped on a settings change.
var errSettingsChanged = errors.New("the settings ConfigMap changed")

// Start polls the ConfigMap until ctx ends.
func (w *settingsWatch) Start(ctx context.Context) error {
	if w.read.namespace == "" {
		return nil
	}
	tick := time.NewTicker(settingsPollInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		now, err := readSettings(ctx, w.cfg, w.read.namespace)
		if err != nil || now.digest == w.read.digest {
			continue
		}
		w.log.Info("The settings ConfigMap changed: stopping, to be restarted with them",
			"configMap", w.read.namespace+"/"+settingsConfigMap, "reason", errSettingsChanged.Error())
		w.restart()
		return nil
	}
}

// NeedLeaderElection is false: every replica applies the settings.
func (w *settingsWatch) NeedLeaderElection() bool { return false }
