// Command olmv1rbac prints the RBAC of the ServiceAccount a cluster admin
// gives a ClusterExtension (OLM v1) to install the operator's bundle,
// derived from the bundle's CSV and manifests: what OLM v1 creates for a
// registry+v1 bundle, and nothing else. docs/olm.md holds its output for
// the shipped bundle; a test proves, on a real API server, that the account
// can create every object of the bundle with it.
//
//	go run ./hack/olmv1rbac [-bundle bundle] [-namespace kraan-system] [-extension kraan-operator]
package main

import (
	"flag"
	"fmt"
	"os"

	"sigs.k8s.io/yaml"
)

func main() {
	dir := flag.String("bundle", "bundle", "the registry+v1 bundle directory")
	namespace := flag.String("namespace", "kraan-system", "the ClusterExtension's spec.namespace")
	extension := flag.String("extension", "kraan-operator", "the ClusterExtension's name")
	flag.Parse()
	b, err := readBundle(*dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, obj := range installerRBAC(b, *namespace, *extension) {
		out, err := yaml.Marshal(obj)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("---\n%s", out)
	}
}
