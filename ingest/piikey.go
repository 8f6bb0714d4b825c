package ingest

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// PIIKeyFile is the name of the PII key kept in the data folder when no secret
// is given in the environment.
const PIIKeyFile = "pii.key"

// PIISecret is the HMAC key of pseudonyms and subject hashes, and where it
// came from.
type PIISecret struct {
	Key []byte
	// Source is "$NAME" for the environment variable, else the key file's path.
	Source string
	// Created is true when this call wrote the key file.
	Created bool
}

// LoadPIISecret returns the PII secret: $env when it is set (it always wins),
// else the key kept in dir/pii.key, which the first call creates: 32 random
// bytes (crypto/rand), hex, file mode 0600, written to a temporary file and
// linked into place, so a crash never leaves half a key and two processes
// starting together end with the one key the first of them linked. Subject
// hashes and pseudonyms then stay the same across restarts, so `forget` finds
// requests stored by earlier processes. Errors: the folder cannot be created,
// the file cannot be read or written, it is readable by group or others, or it
// holds fewer than 16 bytes.
func LoadPIISecret(env, dir string) (PIISecret, error) {
	if env != "" {
		if v := os.Getenv(env); v != "" {
			return PIISecret{Key: []byte(v), Source: "$" + env}, nil
		}
	}
	if dir == "" {
		return PIISecret{}, errors.New("ingest: pii key: no data folder to keep the key in and no secret in the environment")
	}
	path := filepath.Join(dir, PIIKeyFile)
	key, err := readPIIKey(path)
	if err == nil {
		return PIISecret{Key: key, Source: path}, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return PIISecret{}, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return PIISecret{}, fmt.Errorf("ingest: pii key: create data folder: %w", err)
	}
	raw := make([]byte, 32)
	_, _ = rand.Read(raw) // never fails (crypto/rand)
	tmp, err := os.CreateTemp(dir, ".pii.key-*")
	if err != nil {
		return PIISecret{}, fmt.Errorf("ingest: pii key: %w", err)
	}
	defer os.Remove(tmp.Name())
	// CreateTemp makes the file 0600.
	if _, err := tmp.WriteString(hex.EncodeToString(raw) + "\n"); err != nil {
		_ = tmp.Close()
		return PIISecret{}, fmt.Errorf("ingest: pii key: write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return PIISecret{}, fmt.Errorf("ingest: pii key: sync %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return PIISecret{}, fmt.Errorf("ingest: pii key: %w", err)
	}
	// Link, unlike rename, never replaces: a key another process linked first wins.
	created := true
	if err := os.Link(tmp.Name(), path); err != nil {
		if !errors.Is(err, fs.ErrExist) {
			return PIISecret{}, fmt.Errorf("ingest: pii key: create %s: %w", path, err)
		}
		created = false
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // the new name survives a crash
		_ = d.Close()
	}
	key, err = readPIIKey(path)
	if err != nil {
		return PIISecret{}, err
	}
	return PIISecret{Key: key, Source: path, Created: created}, nil
}

// readPIIKey reads a key file: its text without surrounding white space.
func readPIIKey(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("ingest: pii key: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("ingest: pii key: %s is readable by others (mode %s); chmod 600 it", path, fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("ingest: pii key: %w", err)
	}
	key := []byte(strings.TrimSpace(string(b)))
	if len(key) < 16 {
		return nil, fmt.Errorf("ingest: pii key: %s holds %d bytes; want at least 16", path, len(key))
	}
	return key, nil
}
