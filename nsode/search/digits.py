"""What the data support of a fitted law: its numbers rounded at their standard errors, and the
law written with constants the data determine one by one. What `nsode predict` prints and plots;
the search itself keeps the model's form."""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import sympy

from odecore.expressions import Y, evaluate
from odecore.fitting import Template, abstract
from odecore.uncertainty import round_to_error, standard_errors
from nsode.search.fits import Found, trajectory_score
from nsode.search.terms import split


@dataclass
class Supported:
    """A fitted candidate as the data support it: constants and y0 rounded at their standard errors."""
    expr: sympy.Expr  # the right-hand side with each constant rounded
    y0: float
    y0_error: float
    constants: tuple[tuple[float, float], ...]  # (fitted value, standard error) per constant
    extra: int = 0  # digits kept beyond the standard errors so that the rounded law still fits


def supported(found: Found, t, y, sigma: float, profile: np.ndarray | None = None) -> Supported:
    """`found` with every number rounded to the digits the observations (t, y) with noise `sigma`
    support (odecore.uncertainty.standard_errors, round_to_error), and to as many more as it takes for
    the rounded law to fit within one noise variance of the unrounded one: constants that move
    together (c and p of c*y**p) each have a large error alone, yet rounding both at it would
    change the law. With the choice's noise `profile` (`nsode.search.choice.choice_profile`), each point
    counts in its own noise, as in the choice, and the errors are those of the fit as it was made
    (weighed by the profile or not: `Found.weighted`). What is printed and plotted."""
    if found.template is None:
        return Supported(found.expr, found.y0, math.inf, ())
    t, y = np.asarray(t, float), np.asarray(y, float)
    errors = standard_errors(found.template, found.values, found.y0, t, sigma, profile=profile, weighted=found.weighted)
    unrounded = trajectory_score(found.template, found.values, found.y0, t, y, sigma, profile)[1]  # at this sigma
    for extra in range(17):  # same constants, so a criterion 1 higher is a residual one noise variance higher
        values = [round_to_error(v, e, extra=extra) for v, e in zip(found.values, errors[1:])]
        y0 = round_to_error(found.y0, errors[0], extra=extra)
        if trajectory_score(found.template, values, y0, t, y, sigma, profile)[1] <= unrounded + 1:
            break
    return Supported(found.template.substitute(values), y0, float(errors[0]),
                     tuple(zip(found.values, map(float, errors[1:]))), extra)


def identifiable(rest: sympy.Expr) -> sympy.Expr:
    """`rest` without the numbers that only rescale it (a term's coefficient does that): in
    y/(1190 + 246*y) the denominator fixes one ratio, not two (y/(4.84 + y)); in exp(2 + 3*y) the 2
    is a factor e**2. Only factors of `rest` are rewritten (a denominator inside sin(...) is
    structure). Used for showing a pick; the search itself keeps the model's form (reading the
    beam so was measured level and not kept: docs/search.md, "Session 34")."""
    factors = []
    for factor in sympy.Mul.make_args(rest):
        if factor.is_Pow and factor.base.is_Add and factor.exp.is_Integer and factor.exp < 0:
            scales = [term.as_coeff_Mul()[0] for term in sympy.Add.make_args(factor.base) if term.has(Y)]
            lead = scales[0] if scales else sympy.S.One
            if lead.is_Number and lead not in (0, 1):
                parts = (term.as_coeff_Mul() for term in sympy.Add.make_args(factor.base))
                factor = sympy.Pow(sympy.Add(*(r if c == lead else (c / lead) * r for c, r in parts)), factor.exp)
        elif isinstance(factor, sympy.exp) and factor.args[0].is_Add:
            number = sum(a for a in factor.args[0].args if a.is_Number)
            if number != 0:
                factor = sympy.exp(factor.args[0] - number)
        factors.append(factor)
    return sympy.Mul(*factors).as_coeff_Mul()[1]  # a number split off above joins the coefficient


def log_scales_split(expr: sympy.Expr) -> sympy.Expr:
    """`expr` with a number inside a log factor of a term split off where another term absorbs
    it: b*y*log(c*y) is b*log(|c|)*y + b*y*log(+-y), so that c0*y + c1*y*log(c2*y) reads as two
    constants the data fix (c0 + c1*log(c2) and c1) instead of three, two of which trade off
    exactly. The same function where the log is real (c*y > 0). A term without such a partner
    keeps its scale (b*y*log(c*y) alone is Gompertz's law with its capacity 1/c); `expr` itself
    when nothing is split."""
    terms = sympy.Add.make_args(expr)
    rests = [term.as_coeff_Mul()[1] for term in terms]
    out, changed = [], False
    for k, term in enumerate(terms):
        scaled = [f for f in sympy.Mul.make_args(term) if isinstance(f, sympy.log) and abs(f.args[0].as_coeff_Mul()[0]) != 1]
        others = term / scaled[0] if scaled else None
        if others is None or others.as_coeff_Mul()[1] not in rests[:k] + rests[k + 1:]:
            out.append(term)
            continue
        scale, inner = scaled[0].args[0].as_coeff_Mul()
        out += [others * sympy.log(abs(scale)), others * sympy.log(sympy.sign(scale) * inner)]
        changed = True
    return sympy.Add(*out) if changed else expr


def identifiable_expression(expr: sympy.Expr, y) -> sympy.Expr:
    """`expr` with every term `identifiable` and the scales inside its logs split off
    (`log_scales_split`): the same function of y, each dropped scale moved into its term's
    coefficient (read at the observed values `y`); `expr` itself when nothing changes."""
    split_logs = log_scales_split(expr)
    terms, changed = [], split_logs is not expr
    for coefficient, rest in split(split_logs):
        simpler = identifiable(rest)
        if simpler != rest:  # rest / simpler is a number: read it where both are finite
            with np.errstate(all="ignore"):
                ratio = np.asarray(evaluate(rest, y), float) / np.asarray(evaluate(simpler, y), float)
            ratio = ratio[np.isfinite(ratio)]
            if not len(ratio):
                return expr
            coefficient, changed = coefficient * float(np.median(ratio)), True
        terms.append((coefficient, simpler))
    return sympy.Add(*(c * r for c, r in terms)) if changed else expr


def identifiable_template(expr: sympy.Expr, template: Template, y) -> tuple[Template, list[float]] | None:
    """The fitted law `expr` (of `template`) as `identifiable_expression` writes it, parametrised
    anew, with its values; None when that changes nothing. Numbers the fitted law has already
    merged (c0*cos(c1) is one number, c0*exp(c1)*y one coefficient) are one constant here too."""
    written = identifiable_expression(expr, y)
    params: list[sympy.Symbol] = []
    start: list[float] = []
    rewritten = Template(abstract(written, params, start), tuple(params))
    if written is expr and len(params) >= len(template.params):
        return None
    return rewritten, start


def identifiable_form(found: Found, t, y, sigma: float) -> Found:
    """`found` with constants the data can determine one by one (`identifiable_template`), so that
    their standard errors mean something; `found` itself when nothing changes."""
    rewritten = found.template and identifiable_template(found.expr, found.template, y)
    if not rewritten:
        return found
    template, start = rewritten
    r2_value, ic = trajectory_score(template, start, found.y0, t, y, sigma)
    return replace(found, expr=template.substitute(start), template=template, values=tuple(start), ic=ic,
                   constants=len(start), r2=r2_value)
