//go:build !unix

package main

// restrictUmask has no umask to set on this system; the store still fixes the
// data folder's modes when it opens it.
func restrictUmask() {}
