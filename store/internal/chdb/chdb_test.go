package chdb

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFindLibrary(t *testing.T) {
	dir := t.TempDir()
	lib := filepath.Join(dir, "libchdb.so")
	if err := os.WriteFile(lib, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "nope", "libchdb.so")
	tests := []struct {
		name     string
		env      string
		defaults []string
		want     string // "" means ErrLibraryMissing
	}{
		{"env wins", lib, []string{missing}, lib},
		{"env missing falls back", missing, []string{lib}, lib},
		{"default", "", []string{missing, lib}, lib},
		{"directory is not a library", "", []string{dir}, ""},
		{"none", missing, []string{missing}, ""},
	}
	for _, tc := range tests {
		got, err := findLibrary(tc.env, tc.defaults)
		if tc.want == "" {
			if !errors.Is(err, ErrLibraryMissing) || !strings.Contains(err.Error(), missing) && tc.name == "none" {
				t.Errorf("%s: err = %v; want ErrLibraryMissing naming the paths", tc.name, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: got %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}
