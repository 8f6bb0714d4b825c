package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/conductor-shadow/conductor-shadow/cmd/internal/platform"
)

// errSetNotAllowed marks a regression set that POST /api/suite-runs refuses
// before opening anything: not a name or path of the allowed sets (setDirs).
var errSetNotAllowed = errors.New("regression set not allowed")

// setDirs are the folders whose regression sets the server runs on request:
// the folder of suite.set and of every scheduled suite's set (setsInUse),
// absolute with symbolic links resolved. Folders missing on this machine are
// left out.
func setDirs(cfg platform.Config) []string {
	var dirs []string
	for _, p := range setsInUse(cfg) {
		dir, err := filepath.Abs(filepath.Dir(p))
		if err != nil {
			continue
		}
		if dir, err = filepath.EvalSymlinks(dir); err != nil {
			continue
		}
		if !slices.Contains(dirs, dir) {
			dirs = append(dirs, dir)
		}
	}
	return dirs
}

// allowedSetNames are the regression sets a request may name: the file names
// without ".jsonl" of the JSONL files in setDirs that resolve inside them
// (a link out of the folders is not offered), sorted, duplicates once.
func allowedSetNames(dirs []string) []string {
	var names []string
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			name, ok := strings.CutSuffix(e.Name(), ".jsonl")
			if !ok || slices.Contains(names, name) {
				continue
			}
			if _, ok := inside(dirs, filepath.Join(dir, e.Name())); ok { // links out are not offered
				names = append(names, name)
			}
		}
	}
	slices.Sort(names)
	return names
}

// resolveRequestedSet turns the set of a suite-run request into the file to
// load, without reading any file outside the allowed folders (setDirs):
//
//   - "" stays "": the configured suite.set;
//   - a name without a path separator ("gsm8k-150" or "gsm8k-150.jsonl") is
//     that JSONL file in the first allowed folder holding it;
//   - a path is cleaned, made absolute (relative to the server's folder) and
//     its symbolic links resolved; it must be a .jsonl file inside an allowed
//     folder.
//
// Anything else is errSetNotAllowed with the allowed names; the error never
// says whether the refused path exists.
func resolveRequestedSet(cfg platform.Config, set string) (string, error) {
	set = strings.TrimSpace(set)
	if set == "" {
		return "", nil
	}
	dirs := setDirs(cfg)
	if !strings.ContainsAny(set, `/\`) && set != "." && set != ".." {
		name := strings.TrimSuffix(set, ".jsonl")
		for _, dir := range dirs {
			if p, ok := inside(dirs, filepath.Join(dir, name+".jsonl")); ok {
				return p, nil
			}
		}
		return "", refuseSet(dirs)
	}
	if p, ok := inside(dirs, set); ok {
		return p, nil
	}
	return "", refuseSet(dirs)
}

// inside resolves p (Clean, Abs, EvalSymlinks) and reports whether it is a
// regular .jsonl file within one of dirs.
func inside(dirs []string, p string) (string, bool) {
	abs, err := filepath.Abs(filepath.Clean(p))
	if err != nil {
		return "", false
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil || !strings.HasSuffix(real, ".jsonl") {
		return "", false
	}
	for _, dir := range dirs {
		rel, err := filepath.Rel(dir, real)
		if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
			continue
		}
		if fi, err := os.Stat(real); err == nil && fi.Mode().IsRegular() {
			return real, true
		}
	}
	return "", false
}

// refuseSet is the error of a set outside the allowed folders.
func refuseSet(dirs []string) error {
	names := allowedSetNames(dirs)
	if len(names) == 0 {
		return fmt.Errorf("%w: the server runs only the regression sets in the folders of suite.set and the scheduled suites' sets, and none is configured here", errSetNotAllowed)
	}
	return fmt.Errorf("%w: give one of the server's regression sets by name: %s (the JSONL files beside suite.set and the scheduled suites' sets)",
		errSetNotAllowed, strings.Join(names, ", "))
}
