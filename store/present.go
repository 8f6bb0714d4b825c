package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// EmbeddedStoreIn reports whether folder holds an embedded store with
// database: the engine keeps one metadata file per database
// (metadata/<database>.sql), written when Open first creates the database.
// It reads the folder only, never creates anything, and is false for a
// folder that does not exist. An error means the folder could not be read
// (permissions), not that it holds no store.
func EmbeddedStoreIn(folder, database string) (bool, error) {
	if database == "" {
		database = NewDefaultConfig().Database
	}
	_, err := os.Stat(filepath.Join(folder, "metadata", database+".sql"))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	default:
		return false, fmt.Errorf("store: read data folder %s: %w", folder, err)
	}
}
