//go:build unix

package main

import "syscall"

// restrictUmask makes every file and folder this process creates readable by
// its user only (umask 077: folders 0700, files 0600): the embedded engine's
// part files, the PII key, reports and logs. Called first thing in main,
// before anything opens the store.
func restrictUmask() { syscall.Umask(0o077) }
