package main

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	. "github.com/onsi/gomega"
)

func TestCgroupMemoryLimit(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  int64
		ok    bool
	}{
		{name: "cgroup v2 limit", files: map[string]string{"memory.max": "536870912\n"}, want: 536870912, ok: true},
		{name: "cgroup v2 without limit", files: map[string]string{"memory.max": "max\n"}},
		{name: "cgroup v1 limit", files: map[string]string{"memory/memory.limit_in_bytes": "268435456\n"}, want: 268435456, ok: true},
		{name: "cgroup v1 without limit", files: map[string]string{"memory/memory.limit_in_bytes": "9223372036854771712\n"}},
		{name: "no cgroup", files: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			for name, content := range tt.files {
				g.Expect(os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755)).To(Succeed())
				g.Expect(os.WriteFile(filepath.Join(root, name), []byte(content), 0o600)).To(Succeed())
			}
			limit, ok := cgroupMemoryLimit(root)
			g.Expect(ok).To(Equal(tt.ok))
			g.Expect(limit).To(Equal(tt.want))
		})
	}
}

func TestSetMemoryLimitFromCgroup(t *testing.T) {
	g := NewWithT(t)
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	t.Setenv("GOMEMLIMIT", "")
	root := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(root, "memory.max"), []byte("1000000000"), 0o600)).To(Succeed())
	g.Expect(setMemoryLimitFromCgroup(root, 0)).To(Equal(int64(900000000)))
	g.Expect(debug.SetMemoryLimit(-1)).To(Equal(int64(900000000)))
	// The render workers' share is not the heap's; a quarter stays.
	g.Expect(setMemoryLimitFromCgroup(root, 400000000)).To(Equal(int64(540000000)))
	g.Expect(setMemoryLimitFromCgroup(root, 2000000000)).To(Equal(int64(225000000)))

	// GOMEMLIMIT set by the user wins.
	debug.SetMemoryLimit(before)
	t.Setenv("GOMEMLIMIT", "100MiB")
	g.Expect(setMemoryLimitFromCgroup(root, 0)).To(BeZero())
	g.Expect(debug.SetMemoryLimit(-1)).To(Equal(before))
}

// The heap grows by half between collections unless GOGC says otherwise.
func TestSetGCPercent(t *testing.T) {
	g := NewWithT(t)
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	t.Setenv("GOGC", "")
	g.Expect(setGCPercent()).To(Equal(defaultGCPercent))
	g.Expect(debug.SetGCPercent(100)).To(Equal(defaultGCPercent))

	// GOGC set by the user wins: the runtime read it at start.
	debug.SetGCPercent(80)
	t.Setenv("GOGC", "80")
	g.Expect(setGCPercent()).To(Equal(80))
	g.Expect(debug.SetGCPercent(100)).To(Equal(80))
}
