package rollout

import (
	"context"
	"errors"
	"fmt"
	"sync"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"
	"github.com/google/cel-go/interpreter"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// HealthCheckExpr judges the objects of one kind with CEL expressions
// instead of kstatus, as Flux's healthCheckExprs (kustomize.CustomHealthCheck)
// do. Each expression sees the object's top-level fields as variables
// (metadata, spec, status…) and must give a bool. A field that is not there
// is an evaluation error, and the object is waited for with that error as
// its reason: guard with has() (has(status.conditions)) to say otherwise.
type HealthCheckExpr struct {
	// APIVersion and Kind select the objects: the group of APIVersion and
	// Kind, whatever the version. An empty Kind selects every kind of the
	// group; an expression for the kind wins over one for its group.
	APIVersion string
	Kind       string
	// Current, required, is true when the object is ready.
	Current string
	// InProgress, optional, is true when it is not ready yet, whatever
	// Current says.
	InProgress string
	// Failed, optional, is true when it failed: the wait ends with an error.
	Failed string
}

// Bounds on a tenant's expressions: they are evaluated in the operator, on
// every change of every object they select.
const (
	// MaxExprLength is the longest expression, in code points.
	MaxExprLength = 4096
	// ExprCostLimit bounds the work of one evaluation, in CEL's cost units
	// (about one per operation and per element a list macro visits): ample
	// for filtering the conditions of an object, not for a loop over a
	// large list in a list.
	ExprCostLimit = 100_000
	// programCacheSize bounds the compiled expressions kept between waits:
	// a release's expressions are compiled once, not per wait.
	programCacheSize = 512
)

// HealthCheckError is an expression that cannot judge: it does not compile
// (Wait returns it before waiting), or an evaluation went past
// ExprCostLimit or gave something else than a bool. Retrying does not help:
// the expression must change.
type HealthCheckError struct {
	// Field names the expression: healthCheckExprs[i].current…
	Field string
	// Object is the object being judged, empty for a compile error.
	Object string
	Err    error
}

func (e *HealthCheckError) Error() string {
	if e.Object == "" {
		return fmt.Sprintf("%s: %v", e.Field, e.Err)
	}
	return fmt.Sprintf("%s: judging %s: %v", e.Field, e.Object, e.Err)
}

func (e *HealthCheckError) Unwrap() error { return e.Err }

// ValidateHealthCheckExprs compiles exprs and returns the first problem (a
// *HealthCheckError), so that a caller can report it before acting instead of
// at the wait.
func ValidateHealthCheckExprs(exprs []HealthCheckExpr) error {
	_, err := compileHealthChecks(exprs)
	return err
}

// healthChecks are compiled expressions by the kinds they select; a Kind
// of "" selects the group.
type healthChecks map[schema.GroupKind]*healthCheck

type healthCheck struct {
	// in order of evaluation: inProgress, failed, current (Flux's RFC 0009).
	steps []healthStep
}

type healthStep struct {
	field  string
	status kstatus.Status
	prog   cel.Program
	source string
}

func compileHealthChecks(exprs []HealthCheckExpr) (healthChecks, error) {
	if len(exprs) == 0 {
		return nil, nil
	}
	out := make(healthChecks, len(exprs))
	for i, e := range exprs {
		field := fmt.Sprintf("healthCheckExprs[%d]", i)
		gk := schema.FromAPIVersionAndKind(e.APIVersion, e.Kind).GroupKind()
		if _, dup := out[gk]; dup {
			return nil, &HealthCheckError{Field: field, Err: fmt.Errorf("a second health check for %s", describeGroupKind(gk))}
		}
		if e.Current == "" {
			return nil, &HealthCheckError{Field: field + ".current", Err: errors.New("required")}
		}
		hc := &healthCheck{}
		for _, s := range []struct {
			name, source string
			status       kstatus.Status
		}{
			{"inProgress", e.InProgress, kstatus.InProgressStatus},
			{"failed", e.Failed, kstatus.FailedStatus},
			{"current", e.Current, kstatus.CurrentStatus},
		} {
			if s.source == "" {
				continue
			}
			prog, err := program(s.source)
			if err != nil {
				return nil, &HealthCheckError{Field: field + "." + s.name, Err: err}
			}
			hc.steps = append(hc.steps, healthStep{field: field + "." + s.name, status: s.status, prog: prog, source: s.source})
		}
		out[gk] = hc
	}
	return out, nil
}

func describeGroupKind(gk schema.GroupKind) string {
	if gk.Kind == "" {
		return "every kind of group " + gk.Group
	}
	return gk.String()
}

// of is the health check of the objects of gk, nil if none: kstatus judges
// them.
func (h healthChecks) of(gk schema.GroupKind) *healthCheck {
	if hc := h[gk]; hc != nil {
		return hc
	}
	return h[schema.GroupKind{Group: gk.Group}]
}

// judge is the object's status by the expressions. An object whose
// controller has not seen its latest generation is InProgress whatever they
// say. An expression that cannot be evaluated on this object (a field not
// there yet) leaves it InProgress with the error as the reason; one that
// goes past the cost limit or gives no bool is a *HealthCheckError.
func (hc *healthCheck) judge(ctx context.Context, u *unstructured.Unstructured, object string) (kstatus.Status, string, error) {
	observed, found, err := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	if err == nil && found && observed != u.GetGeneration() {
		return kstatus.InProgressStatus, fmt.Sprintf("generation %d not yet observed (at %d)", u.GetGeneration(), observed), nil
	}
	for _, s := range hc.steps {
		val, _, err := s.prog.ContextEval(ctx, u.Object)
		var cancelled interpreter.EvalCancelledError
		switch {
		case errors.As(err, &cancelled) && cancelled.Cause == interpreter.CostLimitExceeded:
			return "", "", &HealthCheckError{Field: s.field, Object: object,
				Err: fmt.Errorf("the expression costs more than the limit of %d", ExprCostLimit)}
		case err != nil:
			return kstatus.InProgressStatus, fmt.Sprintf("%s: %v", s.field, err), nil
		}
		b, ok := val.(types.Bool)
		if !ok {
			return "", "", &HealthCheckError{Field: s.field, Object: object,
				Err: fmt.Errorf("the expression gives a %s, not a bool", val.Type().TypeName())}
		}
		if b {
			return s.status, fmt.Sprintf("%s is true: %s", s.field, s.source), nil
		}
	}
	return kstatus.InProgressStatus, "no health check expression is true", nil
}

// celEnv is the environment of every expression, Flux's: the expressions
// are parsed, not type-checked, since custom resources do not all have the
// five usual top-level fields, and the object's fields are bound at
// evaluation.
var celEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.HomogeneousAggregateLiterals(),
		cel.EagerlyValidateDeclarations(true),
		cel.DefaultUTCTimeZone(true),
		cel.CrossTypeNumericComparisons(true),
		cel.OptionalTypes(),
		ext.Strings(),
		ext.Sets(),
		ext.Encoders(),
		cel.ParserExpressionSizeLimit(MaxExprLength),
	)
})

// programs caches compiled expressions by their source: cel.Program is
// safe for concurrent use.
var programs = struct {
	sync.Mutex
	bySource map[string]cel.Program
}{bySource: map[string]cel.Program{}}

// program compiles source, or returns it from the cache.
func program(source string) (cel.Program, error) {
	programs.Lock()
	prog, ok := programs.bySource[source]
	programs.Unlock()
	if ok {
		return prog, nil
	}
	env, err := celEnv()
	if err != nil {
		return nil, err
	}
	ast, issues := env.Parse(source)
	if issues.Err() != nil {
		return nil, issues.Err()
	}
	prog, err = env.Program(ast,
		cel.EvalOptions(cel.OptOptimize),
		cel.CostLimit(ExprCostLimit),
		// ctx is checked every 100 iterations of a comprehension, as the
		// API server does: a wait that ends stops its evaluations.
		cel.InterruptCheckFrequency(100),
	)
	if err != nil {
		return nil, err
	}
	programs.Lock()
	defer programs.Unlock()
	if len(programs.bySource) >= programCacheSize {
		// Full: forget one at random (map order); the next wait that
		// needs it compiles it again.
		for s := range programs.bySource {
			delete(programs.bySource, s)
			break
		}
	}
	programs.bySource[source] = prog
	return prog, nil
}

// EvalBool evaluates a tenant's expression that must give a bool, with vars
// bound as its variables (Flux's dependsOn readyExpr binds `dep` and
// `self`), within ExprCostLimit. A field that is not there is an error the
// caller may wait on; an expression that does not compile, costs too much
// or gives no bool is a *HealthCheckError naming field: it must change.
func EvalBool(ctx context.Context, field, source string, vars map[string]any) (bool, error) {
	prog, err := program(source)
	if err != nil {
		return false, &HealthCheckError{Field: field, Err: err}
	}
	val, _, err := prog.ContextEval(ctx, vars)
	var cancelled interpreter.EvalCancelledError
	switch {
	case errors.As(err, &cancelled) && cancelled.Cause == interpreter.CostLimitExceeded:
		return false, &HealthCheckError{Field: field, Err: fmt.Errorf("the expression costs more than the limit of %d", ExprCostLimit)}
	case err != nil:
		return false, fmt.Errorf("%s: %w", field, err)
	}
	b, ok := val.(types.Bool)
	if !ok {
		return false, &HealthCheckError{Field: field, Err: fmt.Errorf("the expression gives a %s, not a bool", val.Type().TypeName())}
	}
	return bool(b), nil
}
