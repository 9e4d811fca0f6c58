package chart

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"testing"

	. "github.com/onsi/gomega"
)

// TestExpansion_checkArchive_neverDecompressesPastTheCap: 40 MiB of
// files, each under the file cap, are refused having decompressed no more
// than the cap and one byte.
func TestExpansion_checkArchive_neverDecompressesPastTheCap(t *testing.T) {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	tw := tar.NewWriter(zw)
	for i := range 40 { // 40 files of 1 MiB: each under the file cap, 40 MiB in all
		if err := tw.WriteHeader(&tar.Header{Name: "c/" + string(rune('a'+i)), Size: 1 << 20, Mode: 0o644}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(make([]byte, 1<<20)); err != nil {
			t.Fatal(err)
		}
	}
	_ = tw.Close()
	_ = zw.Close()
	g := NewWithT(t)
	lim := expansionLimits{maxBytes: 4 << 20, maxFileBytes: 2 << 20, maxEntries: 100}
	x := newExpansion(lim, "chart archive x")

	err := x.checkArchive(buf.Bytes())

	var limit *LimitError
	g.Expect(errors.As(err, &limit)).To(BeTrue(), "got %v", err)
	g.Expect(limit.Flag).To(Equal(FlagMaxDecompressedChartSize))
	g.Expect(x.inflated).To(BeNumerically("<=", lim.maxBytes+1))
}

// TestInflateCounter_stopsOneBytePastTheCap: whatever the buffer size, the
// reader below is asked for no more than the cap and one byte.
func TestInflateCounter_stopsOneBytePastTheCap(t *testing.T) {
	g := NewWithT(t)
	x := newExpansion(expansionLimits{maxBytes: 1000}, "chart archive x")
	source := &countingReader{r: io.LimitReader(zeroReader{}, 1<<20)}

	_, err := io.Copy(io.Discard, &inflateCounter{r: source, x: x})

	g.Expect(err).To(MatchError(errInflateLimit))
	g.Expect(source.n).To(Equal(int64(1001)))
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func TestIsSubchartArchive(t *testing.T) {
	for name, want := range map[string]bool{
		"charts/sub.tgz":                        true,
		"charts/sub/charts/deeper.tgz":          true,
		"charts/_skipped.tgz":                   false,
		"charts/.hidden.tgz":                    false,
		"charts/sub.tgz.prov":                   false,
		"charts/sub/templates/not-a.tgz":        false,
		"templates/charts/x.tgz":                false,
		"files/x.tgz":                           false,
		"charts/sub/charts/_skipped/x.tgz":      false,
		"charts/sub/charts/deeper/charts/y.tgz": true,
	} {
		if got := isSubchartArchive(name); got != want {
			t.Errorf("isSubchartArchive(%q) = %v, want %v", name, got, want)
		}
	}
}
