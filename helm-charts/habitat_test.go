package helmcharts_test

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	release "helm.sh/helm/v4/pkg/release/v1"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
)

// rendered is what the chart produced for one set of values.
type rendered struct {
	statefulSet *appsv1.StatefulSet
	service     *corev1.Service
	others      []runtime.Object
}

// renderHabitat renders helm-charts/habitat as release "web" in namespace
// "shop", the way the chart reconciler installs it, without a cluster.
func renderHabitat(t *testing.T, values map[string]any) (*rendered, error) {
	t.Helper()
	chrt, err := loader.Load("habitat")
	if err != nil {
		t.Fatalf("loading the chart: %v", err)
	}
	install := action.NewInstall(&action.Configuration{})
	install.DryRunStrategy = action.DryRunClient
	install.ReleaseName = "web"
	install.Namespace = "shop"
	install.KubeVersion = &common.KubeVersion{Version: "v1.35.0", Major: "1", Minor: "35"}
	rel, err := install.Run(chrt, values)
	if err != nil {
		return nil, err
	}
	out := &rendered{}
	for _, doc := range releaseutil.SplitManifests(rel.(*release.Release).Manifest) {
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode([]byte(doc), nil, nil)
		if err != nil {
			t.Fatalf("decoding rendered object: %v\n%s", err, doc)
		}
		switch o := obj.(type) {
		case *appsv1.StatefulSet:
			out.statefulSet = o
		case *corev1.Service:
			out.service = o
		default:
			out.others = append(out.others, o)
		}
	}
	return out, nil
}

// habitatValues returns a minimal valid spec with the service changes applied.
func habitatValues(service map[string]any, extra map[string]any) map[string]any {
	svc := map[string]any{"name": "redis", "topology": "none"}
	for k, v := range service {
		svc[k] = v
	}
	values := map[string]any{"image": "core/redis:4", "count": int64(1), "service": svc}
	for k, v := range extra {
		values[k] = v
	}
	return values
}

func volumeByName(sts *appsv1.StatefulSet, name string) *corev1.Volume {
	for i := range sts.Spec.Template.Spec.Volumes {
		if sts.Spec.Template.Spec.Volumes[i].Name == name {
			return &sts.Spec.Template.Spec.Volumes[i]
		}
	}
	return nil
}

func mountByName(sts *appsv1.StatefulSet, name string) *corev1.VolumeMount {
	for i := range sts.Spec.Template.Spec.Containers[0].VolumeMounts {
		if sts.Spec.Template.Spec.Containers[0].VolumeMounts[i].Name == name {
			return &sts.Spec.Template.Spec.Containers[0].VolumeMounts[i]
		}
	}
	return nil
}

func TestHabitatChart_Render_LeaderWithBinds(t *testing.T) {
	g := NewWithT(t)
	out, err := renderHabitat(t, habitatValues(map[string]any{
		"topology": "leader", "group": "prod", "channel": "stable", "ring": "shop",
		"bind": []any{
			map[string]any{"name": "db", "service": "redis", "group": "prod"},
			map[string]any{"name": "cache", "service": "memcached", "group": "default"},
		},
	}, map[string]any{"count": int64(3)}))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.others).To(BeEmpty())
	sts := out.statefulSet
	g.Expect(sts).NotTo(BeNil())
	g.Expect(sts.Name).To(Equal("web"))
	g.Expect(sts.Namespace).To(Equal("shop"))
	g.Expect(*sts.Spec.Replicas).To(BeEquivalentTo(3))
	g.Expect(sts.Spec.PodManagementPolicy).To(Equal(appsv1.ParallelPodManagement))
	g.Expect(sts.Spec.UpdateStrategy.Type).To(Equal(appsv1.RollingUpdateStatefulSetStrategyType))
	g.Expect(sts.Spec.Template.Spec.Containers[0].Image).To(Equal("core/redis:4"))
	g.Expect(sts.Spec.Template.Spec.Containers[0].Args).To(Equal([]string{
		"--group", "prod", "--channel", "stable", "--topology", "leader",
		"--peer-watch-file", "/habitat-operator/peer-ip",
		"--bind", "db:redis.prod", "--bind", "cache:memcached.default",
		"--ring", "shop",
	}))
	g.Expect(sts.Spec.Template.Labels).To(HaveKeyWithValue("habitat.kraan.io/ring", "ring.shop"))
	g.Expect(sts.Spec.Selector.MatchLabels).To(HaveKeyWithValue("habitat.kraan.io/habitat", "web"))
	peers := volumeByName(sts, "peers")
	g.Expect(peers).NotTo(BeNil())
	g.Expect(peers.ConfigMap.Name).To(Equal("hab-peers.ring.shop"))
	g.Expect(peers.ConfigMap.Items).To(ConsistOf(corev1.KeyToPath{Key: "peer-watch-file", Path: "peer-ip"}))
	g.Expect(mountByName(sts, "peers").ReadOnly).To(BeTrue())
	g.Expect(mountByName(sts, "peers").MountPath).To(Equal("/habitat-operator"))

	svc := out.service
	g.Expect(svc).NotTo(BeNil())
	g.Expect(svc.Spec.ClusterIP).To(Equal(corev1.ClusterIPNone))
	ports := map[string]int32{}
	for _, p := range svc.Spec.Ports {
		ports[p.Name] = p.Port
	}
	g.Expect(ports).To(Equal(map[string]int32{"gossip": 9638, "gossip-udp": 9638, "http": 9631}))
}

func TestHabitatChart_Render_NoRingUsesOwnPeerList(t *testing.T) {
	g := NewWithT(t)
	out, err := renderHabitat(t, habitatValues(nil, nil))
	g.Expect(err).NotTo(HaveOccurred())
	args := out.statefulSet.Spec.Template.Spec.Containers[0].Args
	g.Expect(args).To(Equal([]string{"--peer-watch-file", "/habitat-operator/peer-ip"}))
	g.Expect(volumeByName(out.statefulSet, "peers").ConfigMap.Name).To(Equal("hab-peers.habitat.web"))
	g.Expect(volumeByName(out.statefulSet, "ring-key")).To(BeNil())
	g.Expect(out.statefulSet.Spec.VolumeClaimTemplates).To(BeEmpty())
}

func TestHabitatChart_Render_ConfigKeepsServiceDirectory(t *testing.T) {
	g := NewWithT(t)
	out, err := renderHabitat(t, habitatValues(map[string]any{"configSecretName": "user-toml"}, nil))
	g.Expect(err).NotTo(HaveOccurred())
	mount := mountByName(out.statefulSet, "user-config")
	g.Expect(mount).NotTo(BeNil())
	g.Expect(mount.MountPath).To(Equal("/hab/user/redis/config"))
	g.Expect(mount.SubPath).To(BeEmpty(), "a subPath mount would not see Secret edits")
	for _, m := range out.statefulSet.Spec.Template.Spec.Containers[0].VolumeMounts {
		g.Expect(m.MountPath).NotTo(HavePrefix("/hab/svc/"), "mount %s hides the service directory", m.Name)
	}
	vol := volumeByName(out.statefulSet, "user-config")
	g.Expect(vol.Secret.SecretName).To(Equal("user-toml"))
	g.Expect(vol.Secret.Items).To(ConsistOf(corev1.KeyToPath{Key: "user.toml", Path: "user.toml"}))
}

func TestHabitatChart_Render_RingKeys(t *testing.T) {
	tests := []struct {
		name       string
		service    map[string]any
		wantSecret string
		wantItems  []corev1.KeyToPath
		wantRing   string
	}{
		{
			name:       "user-provided key",
			service:    map[string]any{"ringSecretName": "example-encrypted-ring-20170829113029"},
			wantSecret: "example-encrypted-ring-20170829113029",
			wantItems:  []corev1.KeyToPath{{Key: "ring-key", Path: "example-encrypted-ring-20170829113029.sym.key"}},
			wantRing:   "example-encrypted-ring",
		},
		{
			name:       "generated key",
			service:    map[string]any{"ring": "shop", "generateRingKey": true},
			wantSecret: "hab-ring-key.shop",
			wantRing:   "shop",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			out, err := renderHabitat(t, habitatValues(tt.service, nil))
			g.Expect(err).NotTo(HaveOccurred())
			vol := volumeByName(out.statefulSet, "ring-key")
			g.Expect(vol).NotTo(BeNil())
			g.Expect(vol.Secret.SecretName).To(Equal(tt.wantSecret))
			g.Expect(vol.Secret.Items).To(Equal(tt.wantItems))
			g.Expect(mountByName(out.statefulSet, "ring-key").MountPath).To(Equal("/hab/cache/keys"))
			args := out.statefulSet.Spec.Template.Spec.Containers[0].Args
			g.Expect(args[len(args)-2:]).To(Equal([]string{"--ring", tt.wantRing}))
		})
	}
}

func TestHabitatChart_Render_StorageEnvResources(t *testing.T) {
	g := NewWithT(t)
	out, err := renderHabitat(t, habitatValues(nil, map[string]any{
		"persistentStorage": map[string]any{"size": "1Gi", "mountPath": "/hab/svc/redis/data", "storageClassName": "fast"},
		"env":               []any{map[string]any{"name": "HAB_REDIS", "value": `{ "port": "6999" }`}},
		"resources":         map[string]any{"limits": map[string]any{"memory": "256Mi"}},
	}))
	g.Expect(err).NotTo(HaveOccurred())
	sts := out.statefulSet
	g.Expect(sts.Spec.VolumeClaimTemplates).To(HaveLen(1))
	claim := sts.Spec.VolumeClaimTemplates[0]
	g.Expect(claim.Name).To(Equal("persistent"))
	g.Expect(*claim.Spec.StorageClassName).To(Equal("fast"))
	g.Expect(claim.Spec.Resources.Requests.Storage().String()).To(Equal("1Gi"))
	g.Expect(mountByName(sts, "persistent").MountPath).To(Equal("/hab/svc/redis/data"))
	c := sts.Spec.Template.Spec.Containers[0]
	g.Expect(c.Env).To(ConsistOf(corev1.EnvVar{Name: "HAB_REDIS", Value: `{ "port": "6999" }`}))
	g.Expect(c.Resources.Limits.Memory().String()).To(Equal("256Mi"))
}

func TestHabitatChart_Render_SchemaRejectsInvalidValues(t *testing.T) {
	tests := []struct {
		name    string
		values  map[string]any
		message string
	}{
		{"missing image", map[string]any{"service": map[string]any{"name": "redis"}}, "image"},
		{"unknown topology", habitatValues(map[string]any{"topology": "mesh"}, nil), "topology"},
		{"malformed bind", habitatValues(map[string]any{"bind": []any{map[string]any{"name": "db", "service": "redis.x", "group": "g"}}}, nil), "bind"},
		{"bad ring secret name", habitatValues(map[string]any{"ringSecretName": "ring"}, nil), "ringSecretName"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := renderHabitat(t, tt.values)
			g.Expect(err).To(HaveOccurred())
			g.Expect(strings.ToLower(err.Error())).To(ContainSubstring(strings.ToLower(tt.message)))
		})
	}
}

func TestHabitatChart_Render_SchemaEnforcesCELRules(t *testing.T) {
	tests := []struct {
		name   string
		values map[string]any
	}{
		{"leader with count 1", habitatValues(map[string]any{"topology": "leader"}, nil)},
		{"generated key without ring", habitatValues(map[string]any{"generateRingKey": true}, nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := renderHabitat(t, tt.values)
			g.Expect(err).To(MatchError(ContainSubstring("values don't meet the specifications of the schema")))
		})
	}
}
