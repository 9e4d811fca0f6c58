// Command image builds the operator, bundle and catalog images as OCI image
// layouts without a container engine, and pushes them (`make image
// bundle-image catalog-image`, IMAGE_REGISTRY=... to push; docs/olm.md):
//
//	image operator --out bin/images/operator --image IMG [--platforms linux/amd64,linux/arm64] [--push]
//	image bundle   --out bin/images/bundle --image BUNDLE_IMG --operator-layout bin/images/operator --operator-image IMG [--push]
//	image catalog  --out bin/images/catalog --image CATALOG_IMG --bundle-layout bin/images/bundle --bundle-image BUNDLE_IMG \
//	               --operator-layout bin/images/operator --operator-image IMG [--push]
//	image push     --layout DIR --image REF
//
// The bundle and catalog images carry bundle/ and catalog/ with the operator
// and bundle images pinned to the digests of the layouts given; --image and
// --operator-image/--bundle-image name them where they are (or will be)
// pushed. It runs from the repository's root and records its Git commit.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/kraan-io/kraan-operator/hack/image/imagebuild"
)

// source is the repository the images' org.opencontainers.image.source names.
const source = "https://github.com/kraan-io/kraan-operator"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the command; it returns the exit code. Every error is one line on
// stderr, and "pushed" is printed only for a push that completed.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		_, _ = fmt.Fprintln(stderr, "image: want a command: operator, bundle, catalog or push")
		return 2
	}
	var err error
	switch args[0] {
	case "operator":
		err = runOperator(ctx, args[1:], stdout)
	case "bundle":
		err = runBundle(ctx, args[1:], stdout)
	case "catalog":
		err = runCatalog(ctx, args[1:], stdout)
	case "push":
		err = runPush(ctx, args[1:], stdout)
	default:
		err = fmt.Errorf("unknown command %q: want operator, bundle, catalog or push", args[0])
	}
	if errors.Is(err, flag.ErrHelp) {
		return 2
	}
	if err != nil {
		_, _ = fmt.Fprintln(stderr, "image:", err)
		return 1
	}
	return 0
}

// common are the flags every build command takes.
type common struct {
	out, image, version string
	push                bool
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.out, "out", "", "OCI layout directory to write (replaced)")
	fs.StringVar(&c.image, "image", "", "the image's reference by tag, where it is pushed")
	fs.StringVar(&c.version, "version", "0.1.0", "the operator's version (org.opencontainers.image.version)")
	fs.BoolVar(&c.push, "push", false, "push the image to --image after building it")
}

func (c *common) check() error {
	if c.out == "" || c.image == "" {
		return errors.New("--out and --image are required")
	}
	return nil
}

func parse(name string, args []string, c *common, more func(*flag.FlagSet)) error {
	fs := flag.NewFlagSet("image "+name, flag.ContinueOnError)
	c.register(fs)
	if more != nil {
		more(fs)
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	return c.check()
}

func metadata(ctx context.Context, c common) (imagebuild.Metadata, error) {
	return imagebuild.GitMetadata(ctx, ".", source, c.version)
}

func runOperator(ctx context.Context, args []string, stdout io.Writer) error {
	var c common
	var platforms string
	if err := parse("operator", args, &c, func(fs *flag.FlagSet) {
		fs.StringVar(&platforms, "platforms", "linux/amd64,linux/arm64", "comma-separated os/arch list")
	}); err != nil {
		return err
	}
	ps, err := imagebuild.ParsePlatforms(platforms)
	if err != nil {
		return err
	}
	m, err := metadata(ctx, c)
	if err != nil {
		return err
	}
	if imagebuild.Uncommitted(ctx, ".") {
		_, _ = fmt.Fprintf(stdout, "note: building commit %s; uncommitted changes are not in the image\n", m.Revision)
	}
	res, err := imagebuild.BuildOperator(ctx, imagebuild.OperatorOptions{
		ModuleDir: ".", Out: c.out, Ref: c.image, Platforms: ps, Meta: m,
	})
	if err != nil {
		return err
	}
	for _, s := range res.SBOMs {
		_, _ = fmt.Fprintln(stdout, "wrote SBOM", s)
	}
	return finish(ctx, res, c.push, stdout)
}

func runBundle(ctx context.Context, args []string, stdout io.Writer) error {
	var c common
	var bundleDir, opLayout, opImage string
	if err := parse("bundle", args, &c, func(fs *flag.FlagSet) {
		fs.StringVar(&bundleDir, "bundle-dir", "bundle", "the bundle directory")
		fs.StringVar(&opLayout, "operator-layout", "", "the operator image's OCI layout (make image)")
		fs.StringVar(&opImage, "operator-image", "", "the operator image's reference by tag, where it is pushed")
	}); err != nil {
		return err
	}
	m, err := metadata(ctx, c)
	if err != nil {
		return err
	}
	from, err := imagebuild.OperatorImageRef(bundleDir)
	if err != nil {
		return err
	}
	op, err := layoutPin(from, opLayout, opImage)
	if err != nil {
		return err
	}
	res, err := imagebuild.BuildBundle(bundleDir, op, c.out, c.image, m)
	if err != nil {
		return err
	}
	_, _ = fmt.Fprintln(stdout, "pinned", op.From, "to", op.To)
	return finish(ctx, res, c.push, stdout)
}

func runCatalog(ctx context.Context, args []string, stdout io.Writer) error {
	var c common
	var catalogDir, bundleDir, bLayout, bImage, opLayout, opImage string
	if err := parse("catalog", args, &c, func(fs *flag.FlagSet) {
		fs.StringVar(&catalogDir, "catalog-dir", "catalog", "the file-based catalog directory")
		fs.StringVar(&bundleDir, "bundle-dir", "bundle", "the bundle directory the catalog was rendered from")
		fs.StringVar(&bLayout, "bundle-layout", "", "the bundle image's OCI layout (make bundle-image)")
		fs.StringVar(&bImage, "bundle-image", "", "the bundle image's reference by tag, where it is pushed")
		fs.StringVar(&opLayout, "operator-layout", "", "the operator image's OCI layout (make image)")
		fs.StringVar(&opImage, "operator-image", "", "the operator image's reference by tag, where it is pushed")
	}); err != nil {
		return err
	}
	m, err := metadata(ctx, c)
	if err != nil {
		return err
	}
	bundleName, err := imagebuild.BundleName(bundleDir)
	if err != nil {
		return err
	}
	bundleFrom, err := imagebuild.CatalogBundleImage(catalogDir, bundleName)
	if err != nil {
		return err
	}
	bundle, err := layoutPin(bundleFrom, bLayout, bImage)
	if err != nil {
		return err
	}
	opFrom, err := imagebuild.OperatorImageRef(bundleDir)
	if err != nil {
		return err
	}
	op, err := layoutPin(opFrom, opLayout, opImage)
	if err != nil {
		return err
	}
	res, err := imagebuild.BuildCatalog(catalogDir, bundle, op, c.out, c.image, m)
	if err != nil {
		return err
	}
	_, _ = fmt.Fprintln(stdout, "pinned", bundle.From, "to", bundle.To)
	_, _ = fmt.Fprintln(stdout, "pinned", op.From, "to", op.To)
	return finish(ctx, res, c.push, stdout)
}

func runPush(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("image push", flag.ContinueOnError)
	dir := fs.String("layout", "", "the OCI layout to push")
	ref := fs.String("image", "", "where to push it: repository and tag")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || *ref == "" {
		return errors.New("--layout and --image are required")
	}
	pushed, err := imagebuild.Push(ctx, *dir, *ref)
	if err != nil {
		return err
	}
	_, _ = fmt.Fprintln(stdout, "pushed", pushed)
	return nil
}

// layoutPin pins from to the digest of the layout, in repository ref.
func layoutPin(from, layout, ref string) (imagebuild.Pin, error) {
	if layout == "" || ref == "" {
		return imagebuild.Pin{}, errors.New("the layout and reference of every image to pin are required")
	}
	d, err := imagebuild.LayoutDigest(layout)
	if err != nil {
		return imagebuild.Pin{}, err
	}
	return imagebuild.NewPin(from, ref, d)
}

func finish(ctx context.Context, res imagebuild.Result, push bool, stdout io.Writer) error {
	_, _ = fmt.Fprintf(stdout, "wrote OCI layout %s: %s@%s\n", res.Layout, res.Ref, res.Digest)
	if !push {
		return nil
	}
	pushed, err := imagebuild.Push(ctx, res.Layout, res.Ref)
	if err != nil {
		return err
	}
	_, _ = fmt.Fprintln(stdout, "pushed", pushed)
	return nil
}
