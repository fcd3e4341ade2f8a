package service

import (
	"context"

	"github.com/drovehq/drove/planner/nodes"
)

// decideNodes runs planner/nodes' pass first, so that a node declared
// lost or marked offline is seen by the requests' and migrations' passes
// that follow: they end the moves it takes part in.
func (l *loop) decideNodes(ctx context.Context) error {
	env := nodes.Env{Inv: l.st.inv, Emptying: l.st.reqs.Emptying, Apply: l.st.applyDecision,
		Lease: max(l.svc.cfg.NodeLease, 0), Producer: l.svc.cfg.Producer}
	evs := nodes.Decide(env, l.st.nodes)
	if len(evs) == 0 {
		return nil
	}
	if err := l.append(ctx, messages(evs)); err != nil {
		return err
	}
	for _, e := range evs {
		l.svc.log.Info("node decided", "type", e.Type, "why", e.Reason.Why)
	}
	return nil
}
