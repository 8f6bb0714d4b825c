package layout_test

import (
	"go/build"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/conductor-shadow/conductor-shadow/"

// rank of each top-level folder (see doc.go).
var rank = map[string]int{
	"cmd": 5, "regression-sets": 5,
	"web": 4, "dashboards": 4,
	"eval":   3,
	"ingest": 2,
	"shadow": 1,
	"store":  0,
}

func top(path string) string { return strings.SplitN(path, "/", 2)[0] }

// Every non-test import inside the module goes to a lower rank or stays in the
// importer's own top-level folder.
func TestDependenciesPointOneWay(t *testing.T) {
	checked := 0
	err := filepath.WalkDir("..", func(dir string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if name := d.Name(); dir != ".." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
			return filepath.SkipDir
		}
		pkg, err := build.ImportDir(dir, build.ImportComment)
		if err != nil {
			return nil // no Go files here
		}
		rel, _ := filepath.Rel("..", dir)
		from := top(filepath.ToSlash(rel))
		if from == "layout" || from == "." {
			return nil
		}
		r, ok := rank[from]
		if !ok {
			t.Errorf("%s: top-level folder %q has no rank in the layout rule", rel, from)
			return nil
		}
		checked++
		for _, imp := range pkg.Imports {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			to := top(strings.TrimPrefix(imp, module))
			if to == from {
				continue
			}
			if tr, ok := rank[to]; !ok || tr >= r {
				t.Errorf("%s imports %s: %s (rank %d) may import only lower ranks, %s has %d", rel, imp, from, r, to, tr)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 20 {
		t.Fatalf("checked %d packages; the walk missed the module", checked)
	}
}
