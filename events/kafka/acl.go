package kafka

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/drovehq/drove/events/retry"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ACL is one grant of the brokers' authorizer: Principal may do
// Operations on a resource. Names are as Drove gives them; ApplyACLs puts
// the Config's Namespace in front, as it does for every topic, group and
// transactional id it names, so the grants of one installation on a
// shared cluster cover that installation's names only.
type ACL struct {
	Principal  string   // "User:planner"
	Resource   string   // "topic", "group", "transactional-id" or "cluster"
	Name       string   // the resource's name; ignored for the cluster
	Prefixed   bool     // Name is a prefix: every resource whose name starts with it
	Operations []string // READ, WRITE, DESCRIBE, DESCRIBE_CONFIGS, CREATE, IDEMPOTENT_WRITE, ...
}

// String is the grant as one line: principal, operations, resource.
func (a ACL) String() string {
	name := a.Name
	if a.Resource == "cluster" {
		name = "kafka-cluster"
	} else if a.Prefixed {
		name += "*"
	}
	return fmt.Sprintf("%-16s %-36s %s %s", a.Principal, strings.Join(a.Operations, ","), a.Resource, name)
}

// ApplyACLs creates acls on the brokers (creating one that exists is a
// no-op). cfg's principal must be allowed to alter the cluster: a super
// user. Every grant is checked before anything is sent, so a typo in a
// table creates nothing.
func ApplyACLs(ctx context.Context, cfg Config, acls []ACL) error {
	if err := cfg.validate(false); err != nil {
		return err
	}
	cfg = cfg.withDefaults()
	req := kmsg.NewPtrCreateACLsRequest()
	for _, a := range acls {
		cs, err := cfg.creations(a)
		if err != nil {
			return err
		}
		req.Creations = append(req.Creations, cs...)
	}
	cl, err := NewClient(cfg)
	if err != nil {
		return err
	}
	defer cl.Close()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("kafka: create ACLs: %w", cfg.explain(translate(err)))
	}
	var errs []error
	for i, r := range resp.Results {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			c := req.Creations[i]
			errs = append(errs, fmt.Errorf("kafka: ACL %s %s on %s: %w (%s)", c.Principal, c.Operation, c.ResourceName,
				translate(err), deref(r.ErrorMessage)))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return waitACLsServed(ctx, cl, req.Creations)
}

// aclKey names one grant, as created and as described alike.
type aclKey struct {
	rt        kmsg.ACLResourceType
	name      string
	pattern   kmsg.ACLResourcePatternType
	principal string
	op        kmsg.ACLOperation
}

// waitACLsServed returns once every broker's authorizer holds every one
// of want. The controller acknowledges a creation once it is in the
// metadata log; each broker applies it a moment later, and until then it
// refuses the service the grant is for (seen: a projector refused
// reading a topic right after "drove acls apply" returned).
func waitACLsServed(ctx context.Context, cl *kgo.Client, want []kmsg.CreateACLsRequestCreation) error {
	quick := retry.Backoff{Initial: 20 * time.Millisecond, Max: 500 * time.Millisecond}
	return quick.Do(ctx, nil, func(int) error {
		meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		if err != nil {
			return fmt.Errorf("kafka: list brokers: %w", translate(err))
		}
		for _, b := range meta.Brokers {
			if err := aclsServedBy(ctx, cl.Broker(int(b.NodeID)), want); err != nil {
				return fmt.Errorf("kafka: broker %d: %w", b.NodeID, err)
			}
		}
		return nil
	}, nil)
}

// aclsServedBy checks that broker b describes every grant of want.
func aclsServedBy(ctx context.Context, b *kgo.Broker, want []kmsg.CreateACLsRequestCreation) error {
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAllow
	raw, err := b.Request(ctx, req)
	if err != nil {
		return fmt.Errorf("describe ACLs: %w", translate(err))
	}
	resp := raw.(*kmsg.DescribeACLsResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return fmt.Errorf("describe ACLs: %w", translate(err))
	}
	have := map[aclKey]bool{}
	for _, r := range resp.Resources {
		for _, a := range r.ACLs {
			have[aclKey{r.ResourceType, r.ResourceName, r.ResourcePatternType, a.Principal, a.Operation}] = true
		}
	}
	for _, c := range want {
		if !have[aclKey{c.ResourceType, c.ResourceName, c.ResourcePatternType, c.Principal, c.Operation}] {
			return fmt.Errorf("ACL %s %s on %s is not applied yet", c.Principal, c.Operation, c.ResourceName)
		}
	}
	return nil
}

// creations are the requests' entries of a: one per operation.
func (c Config) creations(a ACL) ([]kmsg.CreateACLsRequestCreation, error) {
	rt, err := kmsg.ParseACLResourceType(a.Resource)
	if err != nil || rt == kmsg.ACLResourceTypeAny || rt == kmsg.ACLResourceTypeUnknown {
		return nil, fmt.Errorf("%w: ACL %v: resource %q", ErrInvalidConfig, a, a.Resource)
	}
	name := c.wire(a.Name)
	pattern := kmsg.ACLResourcePatternTypeLiteral
	switch {
	case rt == kmsg.ACLResourceTypeCluster:
		name = "kafka-cluster"
	case a.Prefixed:
		pattern = kmsg.ACLResourcePatternTypePrefixed
	}
	if !strings.HasPrefix(a.Principal, "User:") || name == "" || len(a.Operations) == 0 {
		return nil, fmt.Errorf("%w: ACL %v: want a User: principal, a name and operations", ErrInvalidConfig, a)
	}
	var out []kmsg.CreateACLsRequestCreation
	for _, o := range a.Operations {
		op, err := kmsg.ParseACLOperation(o)
		if err != nil || op == kmsg.ACLOperationAny || op == kmsg.ACLOperationUnknown {
			return nil, fmt.Errorf("%w: ACL %v: operation %q", ErrInvalidConfig, a, o)
		}
		e := kmsg.NewCreateACLsRequestCreation()
		e.ResourceType, e.ResourceName, e.ResourcePatternType = rt, name, pattern
		e.Principal, e.Host, e.Operation, e.PermissionType = a.Principal, "*", op, kmsg.ACLPermissionTypeAllow
		out = append(out, e)
	}
	return out, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
