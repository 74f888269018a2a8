"""The neutral core every part of the project imports: expressions (parser, printer, evaluators,
complexity), constant fitting, the protocol's constants, the solver, the metrics, the trajectory-file reader and
the child-process-with-deadline helper. It imports neither `bench` nor `nsode`, so the judge
(the harness) never borrows from a contestant (a method)."""
