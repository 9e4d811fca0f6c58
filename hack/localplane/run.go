package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/kraan-io/kraan-operator/test/localplane"
)

// run starts the plane in the foreground, marks it ready, and stops it on
// SIGINT or SIGTERM. The components are tied to this process: they also die
// if it is killed outright (see test/localplane's process lifetime notes).
func run(args []string) error {
	f, err := parseFlags("run", "Run the control plane in the foreground until SIGINT or SIGTERM.", args, 3*time.Minute)
	if err != nil {
		return err
	}
	if p, ok := runningPlane(f.dir); ok && p.pid != os.Getpid() {
		return fmt.Errorf("a plane already runs in %s (pid %d)", f.dir, p.pid)
	}
	if err := os.MkdirAll(f.dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", f.dir, err)
	}
	_ = os.Remove(filepath.Join(f.dir, readyFile))
	if err := writePIDFile(f.dir); err != nil {
		return err
	}
	defer removeStateFiles(f.dir)

	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	return serve(ctx, f)
}

// serve starts the plane, writes the ready file, and waits for ctx.
func serve(ctx context.Context, f commonFlags) error {
	log.SetPrefix("localplane: ")
	log.Printf("starting in %s (component logs: %s/*.log)", f.dir, f.dir)
	began := time.Now()
	startCtx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	plane, err := localplane.Start(startCtx, localplane.Options{AssetsDir: f.assets, Dir: f.dir})
	if err != nil {
		return err
	}
	log.Printf("ready in %v: export KUBECONFIG=%s", time.Since(began).Round(time.Millisecond), plane.Kubeconfig())
	if err := os.WriteFile(filepath.Join(f.dir, readyFile), []byte(plane.Kubeconfig()+"\n"), 0o600); err != nil {
		return errors.Join(fmt.Errorf("write ready file: %w", err), plane.Stop())
	}
	<-ctx.Done()
	log.Printf("stopping")
	began = time.Now()
	if err := plane.Stop(); err != nil {
		return err
	}
	log.Printf("stopped in %v", time.Since(began).Round(time.Millisecond))
	return nil
}
