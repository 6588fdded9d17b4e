package canon

// CheckFast runs only the allocation-free pass of CheckCanonical.
func CheckFast(in []byte) bool {
	c := checker{in: in, maxDepth: DefaultMaxDepth}
	return len(in) <= DefaultMaxBytes && c.value(0) && c.pos == len(in)
}
