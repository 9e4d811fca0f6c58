// Package localplane runs a small but real Kubernetes control plane on the
// loopback interface, for tests and for people: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler and kwok, which fakes one worker
// Node (kwok-node-0) and the Pods scheduled onto it. Deployments and
// StatefulSets therefore roll out for real (ready replicas, pod IPs), without
// a container runtime, an image registry or network access.
//
// Unlike controller-runtime's envtest (etcd and kube-apiserver only), the
// controllers that turn a Deployment into running Pods are present, so tests
// can check what an operator's resources do, not only that they were written.
//
// The binaries come from one "assets" directory, by default
// $KUBEBUILDER_ASSETS, holding etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, kwok and kwok-stages.yaml (`make tools` builds them). The
// same directory serves envtest.
//
// Typical use in a test:
//
//	plane, err := localplane.Start(ctx, localplane.Options{Dir: t.TempDir()})
//	if err != nil {
//		t.Fatal(err)
//	}
//	t.Cleanup(func() { _ = plane.Stop() })
//	cfg := plane.RESTConfig()
//
// # Process lifetime
//
// Every component runs in its own process group so that Stop can signal the
// whole group. Each is also started with the Linux parent-death signal
// (SysProcAttr.Pdeathsig = SIGKILL), so the components die with the process
// that started them even when that process is SIGKILLed and never reaches
// Stop (for example when `go test` times out). The kernel sends that signal
// when the *thread* that forked the child exits, not the process, and the Go
// runtime may end a thread while the process lives on (it does so when a
// goroutine exits while locked to its thread). That would kill the plane at a
// random moment, so all children of a Plane are forked from one goroutine
// that is locked to its OS thread and stays alive until Stop has reaped them
// (see golang/go#27505).
//
// Plane.RestartAPIServer restarts kube-apiserver in place (same port,
// certificates and etcd), for tests of how clients ride out an outage.
//
// StartProcess runs another program the same way, for tests that run a
// program under test (an operator binary, say) beside the plane; each such
// Process has a locked thread of its own until it has been reaped.
package localplane
