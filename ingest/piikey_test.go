package ingest

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestPIISecretKeptInDataFolder: two opens of one data folder (two process
// lifetimes) hash a subject the same; another folder hashes it differently;
// the environment's secret wins over the file.
func TestPIISecretKeptInDataFolder(t *testing.T) {
	const env = "CONDUCTOR_SHADOW_TEST_PII_SECRET"
	t.Setenv(env, "")
	dir := filepath.Join(t.TempDir(), "data")
	first, err := LoadPIISecret(env, dir)
	if err != nil {
		t.Fatal(err)
	}
	if !first.Created || first.Source != filepath.Join(dir, PIIKeyFile) {
		t.Errorf("first open: created=%v source=%q; want the key file created", first.Created, first.Source)
	}
	fi, err := os.Stat(filepath.Join(dir, PIIKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %s; want 0600", fi.Mode().Perm())
	}
	second, err := LoadPIISecret(env, dir)
	if err != nil {
		t.Fatal(err)
	}
	if second.Created {
		t.Error("second open created the key again")
	}
	if a, b := SubjectHash(first.Key, "alice@example.com"), SubjectHash(second.Key, "alice@example.com"); a != b {
		t.Errorf("subject hash changed between opens of one data folder: %s then %s", a, b)
	}
	other, err := LoadPIISecret(env, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if SubjectHash(other.Key, "alice@example.com") == SubjectHash(first.Key, "alice@example.com") {
		t.Error("two data folders drew the same key")
	}
	t.Setenv(env, "from-the-environment")
	fromEnv, err := LoadPIISecret(env, dir)
	if err != nil {
		t.Fatal(err)
	}
	if string(fromEnv.Key) != "from-the-environment" || fromEnv.Source != "$"+env {
		t.Errorf("with $%s set: key %q from %q; want the environment's", env, fromEnv.Key, fromEnv.Source)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("data folder holds %d entries; want only %s (no temporary files left)", len(entries), PIIKeyFile)
	}
}

// TestPIISecretConcurrentCreation: processes starting together on one empty
// folder all end with the same key.
func TestPIISecretConcurrentCreation(t *testing.T) {
	dir := t.TempDir()
	keys := make([]string, 8)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() {
			s, err := LoadPIISecret("", dir)
			if err != nil {
				t.Error(err)
				return
			}
			keys[i] = string(s.Key)
		})
	}
	wg.Wait()
	for _, k := range keys[1:] {
		if k != keys[0] {
			t.Fatalf("concurrent opens drew different keys: %q", keys)
		}
	}
}

func TestPIISecretBadFiles(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		mode          os.FileMode
		want          string
	}{
		{"readable by others", strings.Repeat("k", 64), 0o644, "readable by others"},
		{"too short", "short", 0o600, "at least 16"},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, PIIKeyFile), []byte(tc.content), tc.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(dir, PIIKeyFile), tc.mode); err != nil {
			t.Fatal(err)
		}
		_, err := LoadPIISecret("", dir)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v; want one saying %q", tc.name, err, tc.want)
		}
	}
}
