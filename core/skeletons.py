"""The skeleton of a law: the terms of its expanded sum with every number abstracted, so that two
laws that differ only in their constants have one skeleton. The harness scores with it whether a
method found the form of the true law (`bench.scoring`, the `skeleton` score), the symbolic
recovery that symbolic-regression benchmarks report beside R^2.

Forms are compared after expansion (products over sums, logs of products, exponentials of
sums), so `0.8*y*log(12/y)` and `2.0*y - 0.8*y*log(y)`, or `r*y*(1 - y/K)` and `a*y - b*y**2`,
share a skeleton; equivalent forms that expansion does not bring together (a - b/(c + y) against
(a*y + d)/(c + y)) count as different, so the score is a lower bound of symbolic recovery.
Integer and half-integer exponents are structure (y**2 is not y**c), as the search reads them.
"""
from __future__ import annotations

import sympy

from core.expressions import Y, complexity
from core.fitting import abstract

SIZE_RATIO, SIZE_SLACK = 4, 20  # a prediction this much larger than the truth is not expanded to compare


def skeleton(expr: sympy.Expr) -> tuple[str, ...]:
    """The sorted distinct term forms of `expr` expanded, numbers abstracted (a constant term is '1';
    y' = 0 has none)."""
    if expr == 0:
        return ()
    expr = expr.replace(lambda e: e.is_Pow and e.exp.is_Float and float(2 * e.exp).is_integer(),
                        lambda e: sympy.Pow(e.base, sympy.Rational(round(2 * float(e.exp)), 2)))
    expr = sympy.expand(sympy.expand_log(expr, force=True), force=True)
    forms = set()
    for term in sympy.Add.make_args(expr):
        _, rest = term.as_independent(Y, as_Add=False)
        forms.add(sympy.srepr(abstract(rest, [], [], numbered=False)) if rest.has(Y) else "1")
    return tuple(sorted(forms))


def same_skeleton(prediction: sympy.Expr, truth: sympy.Expr) -> bool:
    """Whether `prediction` has the form of `truth`, whatever its constants. A prediction many times
    the truth's size is answered False unexpanded: expanding a large law can take very long (a power
    of a sum), and its skeleton would not be the truth's."""
    if complexity(prediction) > SIZE_RATIO * complexity(truth) + SIZE_SLACK:
        return False
    return skeleton(prediction) == skeleton(truth)
