package imagebuild_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"

	"github.com/kraan-io/kraan-operator/hack/image/imagebuild"
)

// pushAll pushes the three layouts to the test registry and returns the
// references by digest the registry now serves.
func pushAll(t *testing.T, b built) (operator, bundle, catalog string) {
	t.Helper()
	ctx := context.Background()
	refs := make([]string, 0, 3)
	for _, r := range []imagebuild.Result{b.operator, b.bundle, b.catalog} {
		pushed, err := imagebuild.Push(ctx, r.Layout, r.Ref, tlsTransport())
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, pushed)
	}
	return refs[0], refs[1], refs[2]
}

// TestImages_RoundTripThroughRegistry pushes the operator, bundle and catalog
// images to a registry and reads them back with the tools a cluster's
// catalog pipeline uses: opm renders the bundle image and the catalog image
// to what bundle/ and catalog/ render to, with the operator and bundle images
// pinned by digest (the only difference), the bundle image passes the
// OperatorHub validation suite, and every reference by digest in them
// resolves in the registry.
func TestImages_RoundTripThroughRegistry(t *testing.T) {
	g := NewWithT(t)
	b := images(t)
	opRef, bundleImg, catalogImg := pushAll(t, b)
	g.Expect(opRef).To(Equal(b.operatorPin.To), "the bundle pins the operator image that was pushed")
	g.Expect(bundleImg).To(Equal(b.bundlePin.To), "the catalog pins the bundle image that was pushed")
	for _, ref := range []string{opRef, bundleImg, catalogImg} {
		d, err := name.NewDigest(ref)
		g.Expect(err).NotTo(HaveOccurred())
		desc, err := remote.Head(d, tlsTransport())
		g.Expect(err).NotTo(HaveOccurred(), "%s resolves in the registry", ref)
		g.Expect(desc.Digest.String()).To(Equal(d.DigestStr()))
	}

	env := toolEnv(t)
	opm := tool(t, "KRAAN_OPM")
	root := moduleRoot(t)

	// The bundle image renders as bundle/ does, pinned.
	fromDir := render(t, opm, env, filepath.Join(root, "bundle"))
	fromImage := render(t, opm, env, bundleImg)
	g.Expect(fromDir).To(HaveLen(1))
	want := pinnedBundle(fromDir[0], bundleImg, b.operatorPin)
	g.Expect(fromImage).To(Equal([]map[string]any{want}))

	// The catalog image renders as catalog/ does, the bundle of bundle/
	// pinned, and that bundle is what opm renders from the bundle image; the
	// earlier bundles of the channel are left as they were released.
	catalogFromDir := render(t, opm, env, filepath.Join(root, "catalog"))
	catalogFromImage := render(t, opm, env, catalogImg)
	wantCatalog := make([]map[string]any, 0, len(catalogFromDir))
	for _, doc := range catalogFromDir {
		if doc["schema"] == "olm.bundle" && doc["name"] == fromDir[0]["name"] {
			doc = pinnedBundle(doc, bundleImg, b.operatorPin)
			g.Expect(doc).To(Equal(fromImage[0]), "the catalog's bundle is the bundle image's")
		}
		wantCatalog = append(wantCatalog, doc)
	}
	g.Expect(catalogFromImage).To(Equal(wantCatalog))

	// The bundle image, unpacked as OLM unpacks it, passes what `operator-sdk
	// bundle validate --select-optional suite=operatorframework` checks; a
	// warning fails.
	problems, err := bundleProblems(unpackImage(t, bundleImg))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(problems).To(BeEmpty(), "the bundle image's validation")
}

// render runs `opm render` and decodes its JSON stream, each olm.bundle.object
// property's base64 data decoded into the object it holds (so that two
// encodings of the same manifest compare equal).
func render(t *testing.T, opm string, env []string, arg string) []map[string]any {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), opm, "render", "--output=json", arg)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("opm render %s: %v: %s", arg, err, stderr.String())
	}
	var docs []map[string]any
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("opm render %s: %v", arg, err)
		}
		decodeBundleObjects(t, doc)
		docs = append(docs, doc)
	}
	return docs
}

func decodeBundleObjects(t *testing.T, doc map[string]any) {
	props, _ := doc["properties"].([]any)
	for _, p := range props {
		prop := p.(map[string]any)
		if prop["type"] != "olm.bundle.object" {
			continue
		}
		value := prop["value"].(map[string]any)
		raw, err := base64.StdEncoding.DecodeString(value["data"].(string))
		if err != nil {
			t.Fatal(err)
		}
		var obj map[string]any
		if err := json.Unmarshal(raw, &obj); err != nil {
			t.Fatal(err)
		}
		value["data"] = obj
	}
}

// pinnedBundle is an olm.bundle rendered from bundle/ or catalog/ with
// exactly the substitution the images make: the bundle's image is the pinned
// bundle image, the CSV deploys the operator image by digest and lists it in
// relatedImages, and so does the bundle's relatedImages (after the bundle
// image itself, as opm lists them).
func pinnedBundle(doc map[string]any, bundleImg string, op imagebuild.Pin) map[string]any {
	doc["image"] = bundleImg
	for _, p := range doc["properties"].([]any) {
		prop := p.(map[string]any)
		if prop["type"] != "olm.bundle.object" {
			continue
		}
		obj := prop["value"].(map[string]any)["data"].(map[string]any)
		if obj["kind"] != "ClusterServiceVersion" {
			continue
		}
		replaceString(obj, op.From, op.To)
		obj["spec"].(map[string]any)["relatedImages"] = []any{
			map[string]any{"name": imagebuild.RelatedImageName, "image": op.To},
		}
	}
	doc["relatedImages"] = []any{
		map[string]any{"name": "", "image": bundleImg},
		map[string]any{"name": imagebuild.RelatedImageName, "image": op.To},
	}
	return doc
}

func replaceString(v any, from, to string) any {
	switch t := v.(type) {
	case string:
		if t == from {
			return to
		}
	case map[string]any:
		for k, e := range t {
			t[k] = replaceString(e, from, to)
		}
	case []any:
		for i, e := range t {
			t[i] = replaceString(e, from, to)
		}
	}
	return v
}
