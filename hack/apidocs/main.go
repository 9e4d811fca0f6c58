// Command apidocs writes docs/api-reference.md (`make docs`): for each kind of
// the API packages named on the command line and each type a kind uses, a
// table of fields with their JSON name, type, required or optional, default
// (+kubebuilder:default), simple validation (+kubebuilder:validation) and
// comment. It reads the packages' source with go/parser, so the reference
// says exactly what the Go types and their markers say, in a stable order.
//
//	go run ./hack/apidocs -out docs/api-reference.md api/v1alpha1 api/habitat/v1alpha1
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "apidocs: %v\n", err)
		os.Exit(1)
	}
}

// run parses the flags, reads the packages and writes the reference.
func run(args []string) error {
	fs := flag.NewFlagSet("apidocs", flag.ContinueOnError)
	out := fs.String("out", "docs/api-reference.md", "the Markdown file to write")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return errors.New("no API package directory given (usage: apidocs [-out FILE] DIR...)")
	}
	pkgs := make([]*Package, 0, fs.NArg())
	for _, dir := range fs.Args() {
		p, err := loadPackage(filepath.Clean(dir))
		if err != nil {
			return err
		}
		pkgs = append(pkgs, p)
	}
	return writeFile(*out, render(pkgs, cleanAll(fs.Args())))
}

// cleanAll cleans paths for display: `./api/` and `api` read the same.
func cleanAll(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = filepath.ToSlash(filepath.Clean(p))
	}
	return out
}

// writeFile writes under a temporary name and renames, so that an
// interrupted run never leaves half a reference behind.
func writeFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".apidocs-*")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
