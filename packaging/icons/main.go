// Command icons writes the app icon at the hicolor theme's sizes: icons SRC.png OUTDIR makes
// OUTDIR/SIZExSIZE/apps/codexrelay.png for each size (the .deb's and the macOS icon set's inputs).
package main

import (
	"flag"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"

	"golang.org/x/image/draw"
)

var sizes = []int{16, 24, 32, 48, 64, 128, 256}

func main() {
	flag.Usage = func() { fmt.Fprintln(os.Stderr, "usage: icons SRC.png OUTDIR"); flag.PrintDefaults() }
	flag.Parse()
	if flag.NArg() != 2 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(flag.Arg(0), flag.Arg(1)); err != nil {
		fmt.Fprintln(os.Stderr, "icons:", err)
		os.Exit(1)
	}
}

func run(src, out string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	for _, n := range sizes {
		dst := image.NewNRGBA(image.Rect(0, 0, n, n))
		draw.CatmullRom.Scale(dst, dst.Bounds(), img, img.Bounds(), draw.Src, nil)
		p := filepath.Join(out, fmt.Sprintf("%dx%d", n, n), "apps", "codexrelay.png")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		w, err := os.Create(p)
		if err != nil {
			return err
		}
		if err := png.Encode(w, dst); err != nil {
			w.Close()
			return err
		}
		if err := w.Close(); err != nil {
			return err
		}
	}
	return nil
}
