package store

// Page sizes of the list queries (rows).
const (
	DefaultListLimit = 50  // used when TraceFilter.Limit or a list limit is <= 0
	MaxListLimit     = 500 // larger limits are clamped to this
)

// ClampLimit returns the effective row limit of a list call: DefaultListLimit for
// n <= 0, MaxListLimit for n above it, n otherwise.
func ClampLimit(n int) int {
	switch {
	case n <= 0:
		return DefaultListLimit
	case n > MaxListLimit:
		return MaxListLimit
	}
	return n
}
