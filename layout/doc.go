// Package layout holds no code: its test checks the module's dependency rule.
//
// The top-level packages are ranked, and a package imports only packages of a
// lower rank or of its own top-level folder:
//
//	cmd, regression-sets (tools)      5
//	web, dashboards (readers)         4
//	eval                              3
//	ingest                            2
//	shadow                            1
//	store                             0
//
// It is DESIGN.md's `cmd` → (`web`, `eval`, `ingest`) → `shadow` → `store` with the
// siblings put in order: pages show the figures eval defines (verdicts, shift,
// running verdicts) so a page and a report compute each figure once, and eval
// segments regression cases with the segmenter the tap uses. Nothing imports
// cmd or web, store imports none of the others, and no two packages import
// each other.
//
// The production binary (cmd/conductor-shadow) links no stand-in, test helper
// or simulator: `go list -deps` names none of them (binary_test.go).
package layout
