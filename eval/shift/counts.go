package shift

// CompareCounts compares two mixes of one categorical figure — reference
// counts (an earlier day, an earlier version) and current counts — with the
// figures Compare computes per segment dimension: PSI (Siddiqi 2006) with its
// band, and Pearson's chi-square of the current counts against the
// reference's shares with its p-value. Bins are by current count, then
// reference count, then value. A side with no counts gives band "no data".
func CompareCounts(name string, reference map[string]int, current map[string]int64) Dimension {
	return compareDim(name, reference, current)
}
