// Package kit is what every reconciler of the operator shares, so that each
// kind's package holds only its own steps and conditions:
//
//   - RunSteps runs a reconcile as a list of steps, each returning a result
//     and an error, and stops at the first that halts;
//   - ResultOf turns the classes of internal/outcome (terminal, waiting,
//     transient: whether a failure stalls until the user changes something,
//     waits for something else, or is retried with back-off) into what
//     controller-runtime is told;
//   - Summary derives Ready from a declared, ordered table of the conditions a
//     kind owns, the way Flux's source-controller declares its owned
//     conditions;
//   - Patcher writes status as a merge patch against what was last written, at
//     the end of a reconcile and before long actions (progress);
//   - Events records events whose reasons equal the condition reasons, and
//     Register shares metric series between managers of one process;
//   - IntervalFloor raises the periods objects ask to be reconciled at to
//     --min-reconcile-interval, and SlimObjectMeta is what every cache keeps
//     of the metadata of an object the operator did not create.
package kit
