package figure

// Coverage returns part / of, the share (0..1) of the production exchanges
// of one stage that reached the next — shadowed / recorded, judged /
// answered — as the live verdict's coverage check and the overview count it
// (store.CoverageCell); 0 when of is 0.
func Coverage(part, of int64) float64 {
	if of <= 0 {
		return 0
	}
	return float64(part) / float64(of)
}
