package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// secureDataDir makes the embedded store's folder dir, created if absent, and
// everything in it private to the process's user before the engine opens it:
// folders 0700 and files 0600 (the group and other bits are cleared; links
// are not followed). The files the engine writes later get the process's
// umask, which `conductor-shadow` sets to 077 at start; this mends folders
// written before (by an older version, or another umask). A file whose mode
// cannot be changed is an error naming it.
func secureDataDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("store: create data folder: %w", err)
	}
	// A running engine (another store on the same folder) removes files while
	// the walk goes: a file gone is no error.
	gone := func(err error) bool { return errors.Is(err, fs.ErrNotExist) }
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if gone(err) {
				return nil
			}
			return fmt.Errorf("store: data folder: %w", err)
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			if gone(err) {
				return nil
			}
			return fmt.Errorf("store: data folder: %w", err)
		}
		mode := info.Mode().Perm()
		if mode&0o077 == 0 {
			return nil
		}
		if err := os.Chmod(p, mode&^0o077); err != nil && !gone(err) {
			return fmt.Errorf("store: data folder: make %s private: %w", p, err)
		}
		return nil
	})
}
