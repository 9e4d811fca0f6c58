package helm

import (
	"bytes"
	"fmt"
	"strings"

	"helm.sh/helm/v4/pkg/postrenderer"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/resid"
	"sigs.k8s.io/yaml"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// chain runs post-renderers in order; nil ones are skipped.
type chain []postrenderer.PostRenderer

func (c chain) Run(rendered *bytes.Buffer) (*bytes.Buffer, error) {
	var err error
	for _, p := range c {
		if rendered, err = p.Run(rendered); err != nil {
			return nil, err
		}
	}
	return rendered, nil
}

// postRendererFor is what Helm runs over a release's rendered manifest, in
// Flux's order: spec.postRenderers, then spec.commonMetadata, then last, the
// caller's own (owner references), which nil skips.
func postRendererFor(pr PostRender, last postrenderer.PostRenderer) postrenderer.PostRenderer {
	var c chain
	for i, k := range pr.Kustomize {
		if k != nil {
			c = append(c, &kustomizePostRenderer{index: i, spec: k})
		}
	}
	if pr.CommonMetadata != nil {
		c = append(c, &commonMetadataPostRenderer{pr.CommonMetadata})
	}
	if last != nil {
		c = append(c, last)
	}
	if len(c) == 0 {
		return nil
	}
	return c
}

// kustomizePostRenderer builds a kustomization whose only resource is the
// rendered manifest, with the post-renderer's patches and images, in memory.
type kustomizePostRenderer struct {
	index int
	spec  *kraanv1.KustomizePostRenderer
}

const renderedFile = "rendered.yaml"

func (k *kustomizePostRenderer) Run(rendered *bytes.Buffer) (*bytes.Buffer, error) {
	fs := filesys.MakeFsInMemory()
	if err := fs.WriteFile(renderedFile, rendered.Bytes()); err != nil {
		return nil, k.wrap(err)
	}
	kustomization := kustypes.Kustomization{
		TypeMeta:  kustypes.TypeMeta{APIVersion: kustypes.KustomizationVersion, Kind: kustypes.KustomizationKind},
		Resources: []string{renderedFile},
	}
	for _, p := range k.spec.Patches {
		patch := kustypes.Patch{Patch: p.Patch}
		if t := p.Target; t != nil {
			patch.Target = &kustypes.Selector{
				ResId: resid.ResId{
					Gvk:       resid.Gvk{Group: t.Group, Version: t.Version, Kind: t.Kind},
					Name:      t.Name,
					Namespace: t.Namespace,
				},
				LabelSelector:      t.LabelSelector,
				AnnotationSelector: t.AnnotationSelector,
			}
		}
		kustomization.Patches = append(kustomization.Patches, patch)
	}
	for _, img := range k.spec.Images {
		kustomization.Images = append(kustomization.Images, kustypes.Image{
			Name: img.Name, NewName: img.NewName, NewTag: img.NewTag, Digest: img.Digest,
		})
	}
	data, err := yaml.Marshal(kustomization)
	if err != nil {
		return nil, k.wrap(err)
	}
	if err := fs.WriteFile("kustomization.yaml", data); err != nil {
		return nil, k.wrap(err)
	}
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, ".")
	if err != nil {
		return nil, k.wrap(err)
	}
	out, err := resources.AsYaml()
	if err != nil {
		return nil, k.wrap(err)
	}
	return bytes.NewBuffer(out), nil
}

// wrap names the post-renderer in err, so the user knows which entry to fix.
func (k *kustomizePostRenderer) wrap(err error) error {
	if strings.Contains(err.Error(), duplicateIDError) {
		// Helm 4 users meet it with a chart whose hook and template are one
		// object (a ServiceAccount a pre-install hook needs, say).
		return fmt.Errorf("spec.postRenderers[%d].kustomize: %w (when one of the two is a hook, spec.postRenderStrategy separate post-renders hooks apart from the templates)", k.index, err)
	}
	return fmt.Errorf("spec.postRenderers[%d].kustomize: %w", k.index, err)
}

// duplicateIDError is what kustomize says when two resources of its input
// share a kind, namespace and name.
const duplicateIDError = "may not add resource with an already registered id"

// commonMetadataPostRenderer sets spec.commonMetadata's labels and
// annotations on every rendered object, overriding the chart's.
type commonMetadataPostRenderer struct {
	meta *kraanv1.CommonMetadata
}

func (c *commonMetadataPostRenderer) Run(rendered *bytes.Buffer) (*bytes.Buffer, error) {
	return eachObject(rendered, func(obj *unstructured.Unstructured) error {
		obj.SetLabels(merged(obj.GetLabels(), c.meta.Labels))
		obj.SetAnnotations(merged(obj.GetAnnotations(), c.meta.Annotations))
		return nil
	})
}

func merged(base, over map[string]string) map[string]string {
	if len(over) == 0 {
		return base
	}
	if base == nil {
		base = map[string]string{}
	}
	for k, v := range over {
		base[k] = v
	}
	return base
}

// eachObject calls fn on every object of a rendered manifest stream and
// writes them back in their order; empty documents are dropped.
func eachObject(rendered *bytes.Buffer, fn func(*unstructured.Unstructured) error) (*bytes.Buffer, error) {
	out := &bytes.Buffer{}
	manifests := releaseutil.SplitManifests(rendered.String())
	for _, key := range sortedKeys(manifests) {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(manifests[key]), &obj.Object); err != nil {
			return nil, fmt.Errorf("post-rendering: %w", err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		if err := fn(obj); err != nil {
			return nil, err
		}
		doc, err := yaml.Marshal(obj.Object)
		if err != nil {
			return nil, fmt.Errorf("post-rendering: %w", err)
		}
		out.WriteString("---\n")
		out.Write(doc)
	}
	return out, nil
}
