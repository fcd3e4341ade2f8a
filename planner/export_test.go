package planner

// ComputeExhaustive is Compute with every target group of a change-group
// searched, without the bounds of groupbound.go.
func ComputeExhaustive(c *Cluster, r Request, o Options) (*Plan, error) {
	return compute(c, r, o, func(s *state) { s.exhaustiveGroups = true })
}
