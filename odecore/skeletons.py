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

import math

import sympy

from odecore.expressions import Y, complexity
from odecore.fitting import abstract

SIZE_RATIO, SIZE_SLACK = 4, 20  # a prediction this much larger than the truth is not expanded to compare
MAX_EXPANDED_TERMS = 2000  # nor one whose expansion would hold more terms than this (a power of a sum)


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


def expanded_terms(expr: sympy.Expr, cap: int = MAX_EXPANDED_TERMS) -> int:
    """How many terms expanding `expr` writes before like terms are collected, at most `cap` + 1
    (the most terms of any sum within it, function arguments included): a count of nodes misses
    the cost of a power of a sum, (1 + y)**100000 is five nodes and a hundred thousand terms."""
    def count(e: sympy.Expr) -> tuple[int, int]:  # (terms of e, most terms of any part)
        if not e.args:
            return 1, 1
        parts = [count(a) for a in e.args]
        widest = max(w for _, w in parts)
        if e.is_Add:
            n = sum(k for k, _ in parts)
        elif e.is_Mul:
            n = math.prod(k for k, _ in parts)
        elif e.is_Pow and e.exp.is_Number and float(2 * e.exp).is_integer() and abs(e.exp) >= 1:
            k, power = parts[0][0], int(abs(e.exp))  # the integer part is multiplied out (`skeleton`)
            n = math.comb(k + power - 1, power) if k > 1 else 1
        else:  # a function: its arguments expand inside it
            n = 1
        n = min(n, cap + 1)
        return n, min(max(n, widest), cap + 1)

    return count(expr)[1]


def same_skeleton(prediction: sympy.Expr, truth: sympy.Expr) -> bool:
    """Whether `prediction` has the form of `truth`, whatever its constants. A prediction many times
    the truth's size, or whose expansion would write more than MAX_EXPANDED_TERMS terms, is answered
    False unexpanded (as is any prediction when the truth's expansion is that large): expanding it
    could take hours (a power of a sum), and its skeleton would not be the truth's."""
    if complexity(prediction) > SIZE_RATIO * complexity(truth) + SIZE_SLACK:
        return False
    if max(expanded_terms(prediction), expanded_terms(truth)) > MAX_EXPANDED_TERMS:
        return False
    return skeleton(prediction) == skeleton(truth)
