package store

import (
	"os"
	"path/filepath"
	"testing"
)

// TestEmbeddedStoreIn: a folder the engine created a database in holds a
// store; an empty folder, a missing one and another database do not, and
// asking creates nothing.
func TestEmbeddedStoreIn(t *testing.T) {
	s := openTestStore(t)
	empty := t.TempDir()
	missing := filepath.Join(empty, "typo")
	for _, tt := range []struct {
		name, folder, db string
		want             bool
	}{
		{"the engine's folder and database", testEngine.dir, s.dbName, true},
		{"the engine's folder, a database never created", testEngine.dir, "never_created", false},
		{"an empty folder", empty, "", false},
		{"a folder that does not exist", missing, "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := EmbeddedStoreIn(tt.folder, tt.db)
			if err != nil || got != tt.want {
				t.Fatalf("EmbeddedStoreIn(%s, %q) = %v, %v; want %v", tt.folder, tt.db, got, err, tt.want)
			}
		})
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatalf("asking created %s: %v", missing, err)
	}
}
