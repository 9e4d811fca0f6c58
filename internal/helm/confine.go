package helm

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/kube"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/resource"
	"sigs.k8s.io/yaml"
)

// AnyGroup, as the group of a GroupKind in Bounds.Kinds, allows the kind in
// every API group: a chart template whose apiVersion is itself templated
// (chosen by a Capabilities check, say) declares the kind but not its group.
const AnyGroup = "*"

// Bounds are what the release of a namespaced object may create, whatever
// values it is given: objects of Namespace only, of Kinds only, and
// cluster-scoped objects only when ClusterScoped says so. They confine a
// chart-backed kind to its own object's namespace, independently of the
// identity the actions run as: a value that escapes the chart's quoting
// cannot make the operator create a ClusterRoleBinding.
type Bounds struct {
	// Owner names the object the release belongs to in messages, e.g.
	// "Habitat shop/web".
	Owner string
	// Namespace is the only namespace the release may create objects in.
	Namespace string
	// Kinds the release may create; a group of AnyGroup allows the kind in
	// any group.
	Kinds []schema.GroupKind
	// ClusterScoped allows cluster-scoped objects of Kinds.
	ClusterScoped bool
}

// OutOfBoundsError says which rendered object a release may not create, and
// why. It names the object by kind, namespace and name, never its content.
type OutOfBoundsError struct {
	Owner     string
	Kind      schema.GroupKind
	Namespace string
	Name      string
	Why       string
}

func (e *OutOfBoundsError) Error() string {
	where := e.Name
	if e.Namespace != "" {
		where = e.Namespace + "/" + e.Name
	}
	return fmt.Sprintf("the chart rendered %s %s, which %s may not create: %s", kindName(e.Kind), where, e.Owner, e.Why)
}

// kindName is Kind, or Kind.group outside the core group.
func kindName(gk schema.GroupKind) string {
	if gk.Group == "" {
		return gk.Kind
	}
	return gk.Kind + "." + gk.Group
}

// allowsKind reports whether gk is one of the bounds' kinds.
func (b *Bounds) allowsKind(gk schema.GroupKind) bool {
	return slices.ContainsFunc(b.Kinds, func(k schema.GroupKind) bool {
		return k.Kind == gk.Kind && (k.Group == gk.Group || k.Group == AnyGroup)
	})
}

// check refuses an object of kind gk named namespace/name, namespace empty
// for a cluster-scoped object.
func (b *Bounds) check(gk schema.GroupKind, namespaced bool, namespace, name string) error {
	refuse := func(why string) error {
		return &OutOfBoundsError{Owner: b.Owner, Kind: gk, Namespace: namespace, Name: name, Why: why}
	}
	switch {
	case !b.allowsKind(gk):
		return refuse(fmt.Sprintf("its chart declares no %s (the kinds it may create are %s)", kindName(gk), b.kindList()))
	case !namespaced && !b.ClusterScoped:
		return refuse("it is cluster-scoped, and its watches.yaml entry does not set allowClusterScoped")
	case namespaced && namespace != b.Namespace:
		return refuse(fmt.Sprintf("objects may only be created in its own namespace %s", b.Namespace))
	}
	return nil
}

func (b *Bounds) kindList() string {
	names := make([]string, 0, len(b.Kinds))
	for _, k := range b.Kinds {
		names = append(names, kindName(k))
	}
	return strings.Join(names, ", ")
}

// BoundsPostRenderer refuses a rendered manifest holding an object outside
// Bounds, before Helm applies anything, then hands it to Next. Hooks reach
// it only under the combined and separate post-render strategies
// (Target.PostRenderStrategy; chart-backed kinds keep nohooks): whatever the
// strategy, the guard of configFor refuses a hook outside Bounds when it is
// created.
type BoundsPostRenderer struct {
	// Bounds the release must keep.
	Bounds *Bounds
	// Mapper tells namespaced kinds from cluster-scoped ones.
	Mapper meta.RESTMapper
	// Next runs after the check, when set.
	Next interface {
		Run(*bytes.Buffer) (*bytes.Buffer, error)
	}
}

// Run checks every rendered object; the manifest goes on unchanged.
func (p *BoundsPostRenderer) Run(rendered *bytes.Buffer) (*bytes.Buffer, error) {
	manifests := releaseutil.SplitManifests(rendered.String())
	for _, key := range sortedKeys(manifests) {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(manifests[key]), &obj.Object); err != nil {
			return nil, fmt.Errorf("checking the rendered objects of %s: %w", p.Bounds.Owner, err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		if err := p.Bounds.CheckObject(obj, p.Mapper); err != nil {
			return nil, err
		}
	}
	if p.Next == nil {
		return rendered, nil
	}
	return p.Next.Run(rendered)
}

// CheckObject refuses obj when it is outside the bounds. An object without
// a namespace goes to the release namespace, the owner's, when its kind is
// namespaced; mapper tells which kinds are.
func (b *Bounds) CheckObject(obj *unstructured.Unstructured, mapper meta.RESTMapper) error {
	gvk := obj.GroupVersionKind()
	namespace := obj.GetNamespace()
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		if !b.allowsKind(gvk.GroupKind()) {
			// Refused by its kind alone; the cluster may not even serve it.
			return b.check(gvk.GroupKind(), true, namespace, obj.GetName())
		}
		return fmt.Errorf("checking %s %s rendered for %s: %w", kindName(gvk.GroupKind()), obj.GetName(), b.Owner, err)
	}
	namespaced := mapping.Scope.Name() == meta.RESTScopeNameNamespace
	if namespaced && namespace == "" {
		namespace = b.Namespace
	}
	return b.check(gvk.GroupKind(), namespaced, namespace, obj.GetName())
}

// checkResources refuses the first resource outside the bounds.
func (b *Bounds) checkResources(resources kube.ResourceList) error {
	for _, info := range resources {
		if err := b.checkInfo(info); err != nil {
			return err
		}
	}
	return nil
}

func (b *Bounds) checkInfo(info *resource.Info) error {
	if info.Mapping == nil {
		return fmt.Errorf("%s %s rendered for %s has no known kind", info.Object.GetObjectKind().GroupVersionKind().Kind, info.Name, b.Owner)
	}
	namespaced := info.Mapping.Scope.Name() == meta.RESTScopeNameNamespace
	return b.check(info.Mapping.GroupVersionKind.GroupKind(), namespaced, info.Namespace, info.Name)
}

// withinBounds are the resources the bounds allow: what a delete may touch.
func (b *Bounds) withinBounds(resources kube.ResourceList) kube.ResourceList {
	return resources.Filter(func(info *resource.Info) bool { return b.checkInfo(info) == nil })
}

// helmKubeClient is every interface Helm's actions look for on their kube
// client: the guard must keep them all, or Helm would silently take
// another path (a waiter of its own).
type helmKubeClient interface {
	kube.Interface
	kube.InterfaceWaitOptions
}

// guard returns kc confined to b: creating or updating an object outside
// the bounds fails before anything is sent, hooks included, and deletes
// leave out-of-bounds objects alone (a release record edited outside the
// operator cannot make it delete them). A nil b returns kc unchanged.
func (b *Bounds) guard(kc helmKubeClient) kube.Interface {
	if b == nil {
		return kc
	}
	return &boundedClient{helmKubeClient: kc, bounds: b}
}

// boundedClient is a Helm kube client that keeps its Bounds.
type boundedClient struct {
	helmKubeClient
	bounds *Bounds
}

// Create creates resources when all are within the bounds.
func (c *boundedClient) Create(resources kube.ResourceList, opts ...kube.ClientCreateOption) (*kube.Result, error) {
	if err := c.bounds.checkResources(resources); err != nil {
		return nil, err
	}
	return c.helmKubeClient.Create(resources, opts...)
}

// Update applies target when all of it is within the bounds; of original,
// only what is within them may be deleted as no longer rendered.
func (c *boundedClient) Update(original, target kube.ResourceList, opts ...kube.ClientUpdateOption) (*kube.Result, error) {
	if err := c.bounds.checkResources(target); err != nil {
		return nil, err
	}
	return c.helmKubeClient.Update(c.bounds.withinBounds(original), target, opts...)
}

// Delete deletes the resources within the bounds. When none is, nothing is
// sent and nothing fails: Helm deletes a hook before creating it, and the
// creation is what must fail, naming the object.
func (c *boundedClient) Delete(resources kube.ResourceList, policy metav1.DeletionPropagation) (*kube.Result, []error) {
	within := c.bounds.withinBounds(resources)
	if len(within) == 0 && len(resources) > 0 {
		return &kube.Result{}, nil
	}
	return c.helmKubeClient.Delete(within, policy)
}

// Literal top-level lines of a template: `kind: X` and `apiVersion: g/v`,
// optionally quoted, optionally followed by a comment.
var (
	templateKindLine       = regexp.MustCompile(`^kind:\s*["']?([A-Za-z][A-Za-z0-9]*)["']?\s*(#.*)?$`)
	templateAPIVersionLine = regexp.MustCompile(`^apiVersion:\s*["']?([A-Za-z0-9.\-]+/)?([A-Za-z0-9]+)["']?\s*(#.*)?$`)
	templateDocumentStart  = regexp.MustCompile(`^---`)
)

// ChartKinds are the kinds a chart declares: every literal `kind: X` line at
// the top level of a template of the chart or of its subcharts, in the group
// of the literal `apiVersion:` line of the same document (AnyGroup when that
// line is templated). Nested kinds (a reference's `kind:`) are indented and
// not counted; a kind that only a value could name is not declared.
func ChartKinds(c *Chart) []schema.GroupKind {
	var kinds []schema.GroupKind
	add := func(gk schema.GroupKind) {
		if !slices.Contains(kinds, gk) {
			kinds = append(kinds, gk)
		}
	}
	var walk func(*Chart)
	walk = func(c *Chart) {
		for _, f := range c.Templates {
			for _, gk := range templateKinds(f.Data) {
				add(gk)
			}
		}
		for _, dep := range c.Dependencies() {
			walk(dep)
		}
	}
	walk(c)
	return kinds
}

// templateKinds reads the literal kinds of one template, document by document.
func templateKinds(data []byte) []schema.GroupKind {
	var kinds []schema.GroupKind
	var pending []string
	group := AnyGroup
	flush := func() {
		for _, kind := range pending {
			kinds = append(kinds, schema.GroupKind{Group: group, Kind: kind})
		}
		pending, group = nil, AnyGroup
	}
	lines := bufio.NewScanner(bytes.NewReader(data))
	lines.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for lines.Scan() {
		line := strings.TrimRight(lines.Text(), " \t\r")
		switch {
		case templateDocumentStart.MatchString(line):
			flush()
		case templateKindLine.MatchString(line):
			pending = append(pending, templateKindLine.FindStringSubmatch(line)[1])
		case templateAPIVersionLine.MatchString(line):
			group = strings.TrimSuffix(templateAPIVersionLine.FindStringSubmatch(line)[1], "/")
		}
	}
	flush()
	return kinds
}
