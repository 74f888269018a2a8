"""What `nsode predict` prints about a pick besides the law itself: constants to the digits that
can be read, times and noise levels in words, how far the fits the data cannot tell apart part
beyond the data, and the notes a reader of the pick must know (glitches, a record that turns, a
law that misses its data).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass
class Pick:
    """The search's pick as `nsode predict` reports it (`read_pick`). `law` is the law written
    with the digits the data support; `fit` holds the constants and y0 with their standard errors
    (None when the pick has no fit: the paper's selection); `sigma` is the noise level the errors
    are read at and `misfit` the pick's root mean square miss in those levels (about 1 for a law,
    far above for a curve fit). `as_dict()` is what `nsode predict --json` writes of it."""
    law: str
    t0: float
    sigma: float = math.nan
    misfit: float = math.nan
    profile: Any = None  # the noise's growth with |y|, where the choice weighed each point by it
    chosen: Any = None  # the pick in its identifiable form (nsode.search.fits.Found)
    fit: Any = None  # nsode.search.digits.Supported
    clean: bool = False  # the noise level is the floor of what the numbers can hold

    def as_dict(self) -> dict:
        out: dict = {"law": self.law}
        if self.fit:
            out["initial_value"] = {"t": self.t0, "value": self.chosen.y0, "error": self.fit.y0_error}
            if self.fit.constants:
                form, constants = numbered_as_read(self.chosen.template.expr, self.chosen.template.params,
                                                   self.fit.constants)
                out |= {"form": form, "constants": constant_rows(constants)}
            out["noise"] = {"sigma": self.sigma, "at_floor": self.clean, "grows_with_y": self.profile is not None,
                            "misfit": self.misfit}
        return out


def constant_rows(constants: list[tuple[float, float]]) -> list[dict]:
    """The fitted constants c0, c1, ... as JSON rows: name, value, standard error."""
    return [{"name": f"c{k}", "value": v, "error": e} for k, (v, e) in enumerate(constants)]


def read_pick(result, t, y, search=None) -> Pick:
    """What `nsode predict` reports of `result` (a `Prediction` of the record t, y, read by a
    predictor with `search` settings): the law to the digits the data support, its constants and
    initial value with standard errors, the noise level and the pick's misfit. From Python:
    `read_pick(found, t, y, predictor.search).as_dict()` is the --json reading's law part."""
    from odecore.noise import noise_floor, noise_level
    from nsode.data.tokens import to_infix
    from nsode.search.choice import choice_profile
    from nsode.search.digits import identifiable_form, supported
    from nsode.search.fits import misfit

    aside = result.info.get("set_aside", [])
    t, y = np.delete(np.asarray(t, dtype=float), aside), np.delete(np.asarray(y, dtype=float), aside)
    if result.chosen is None:  # the paper's selection: the law as the beam wrote it
        return Pick(shown(result.expression) if result.expression else "", float(t[0]))
    # the noise alone, curvature removed: the search's own level also covers its integral form's
    # trapezoid error, which on a dozen clean points would make every printed error wide; where the
    # choice weighed each point by its own noise, the level that weighting is relative to
    profile = choice_profile(t, y, search) if search and result.info.get("noise_profile") else None
    sigma = noise_level(t, y, curvature=True, profile=profile)
    chosen = identifiable_form(result.chosen, t, y, sigma)
    fit = supported(chosen, t, y, sigma, profile)
    return Pick(to_infix(fit.expr), float(t[0]), sigma, misfit(result.chosen, t, y, sigma, profile), profile, chosen,
                fit, sigma <= noise_floor(y))  # noise_level never reads below the floor


def shown(expression: str, digits: int = 4) -> str:
    """The expression with its constants rounded to `digits` significant digits, for reading."""
    from odecore.expressions import parse, rounded
    from nsode.data.tokens import EncodingError, parse_infix

    try:
        expr = parse_infix(expression)  # products kept as the model wrote them
    except EncodingError:  # outside the model's vocabulary (abs from the search's variants)
        expr = parse(expression)
    return rounded(expr, digits)


def numbered_as_read(expr, params, constants) -> tuple[str, list]:
    """The fitted form as text with its constants renamed c0, c1, ... in the order they are read
    (`c0 + c1*y`, not `c1 + c0*y`), and the (value, error) pairs in that order."""
    import sympy

    from odecore.expressions import to_string

    text = to_string(expr)
    position = {p: m.start() for p in params for m in [re.search(rf"\b{p}\b", text)] if m}
    order = sorted(range(len(params)), key=lambda i: position.get(params[i], len(text)))
    renamed = expr.xreplace({params[i]: sympy.Symbol(f"c{k}", real=True) for k, i in enumerate(order)})
    return to_string(renamed), [constants[i] for i in order]


def readable(expression: str, y) -> str:
    """The expression with numbers that only rescale a term folded into its coefficient
    (`nsode.search.digits.identifiable_expression`): y/(4.84 + y), not 246*y/(1190 + 246*y)."""
    from odecore.expressions import parse, to_string
    from nsode.search.digits import identifiable_expression

    try:
        return to_string(identifiable_expression(parse(expression), y))
    except (ValueError, TypeError):
        return expression


NUMBER = re.compile(r"(?<![\w.])\d+(\.\d*)?([eE][-+]?\d+)?")


def time_text(value: float, t: np.ndarray) -> str:
    """A time written to about 1e-4 of the observed span, however far from zero the clock starts
    (Unix seconds, years: 1.7e+09 would hide an hour of a month-long record)."""
    span = float(t[-1] - t[0])
    if span <= 0 or value == 0:
        return f"{value:.4g}"
    digits = max(4, math.floor(math.log10(abs(value))) - math.floor(math.log10(span)) + 5)
    return f"{value:.{min(digits, 17)}g}"


def noise_text(sigma: float, weighed: bool, clean: bool = False) -> str:
    """The noise level behind the printed errors, and whether the choice weighed each residual at its
    own point's level (version 22: noise that grows with |y|; the errors then allow for each point's
    own level, whether the fit weighed by it or not), which a user comparing fits should know.
    On `clean` data the level is the floor every criterion assumes (odecore.noise.NOISE_FLOOR of the
    data's scale), and what grows with |y| is the misses of a smooth curve through exact values."""
    from odecore.noise import NOISE_FLOOR  # with scipy: not at `nsode --help`'s start

    if clean:
        text = (f"(standard errors at the noise floor, sigma = {sigma:.3g} in units of y: the data read as free of "
                f"noise, and every fit is judged as if their noise were {NOISE_FLOOR:g} of their scale)")
        if weighed:
            text += ("\n(the points' misses of a smooth curve through them grow with |y|: the choice weighed each "
                     "point by them, and the errors allow for them)")
        return text
    text = f"(standard errors at the noise level read from the data: sigma = {sigma:.3g} in units of y)"
    if weighed:
        text = (f"(standard errors at the noise level read from the data: sigma = {sigma:.3g} in units of y at the "
                "record's root mean square)\n(the noise grows with |y| here: the choice weighed each point by its "
                "own noise level, and the errors allow for it)")
    return text


def beyond_the_data(result, t) -> tuple[np.ndarray, list[np.ndarray]]:
    """Print how far the fits the data cannot tell from the pick (`nsode.search.choice.rivals`) part from
    it over twice the observed span; returns their trajectories for the plot."""
    from odecore.metrics import r2
    from nsode.search.choice import RIVAL_WINDOW
    from nsode.search.fits import extrapolations

    grid, (pick, *paths) = extrapolations([result.chosen, *result.rivals], t)
    end = f"to t = {time_text(grid[-1], t)}"
    if not np.all(np.isfinite(pick)):
        print(f"beyond the data ({end}): this fit's solution does not reach it")
        return grid, []
    if result.info.get("all_rejected"):
        print(f"beyond the data ({end}): every fit failed the stability check, this one {result.chosen.rejected}; "
              "it is the best by the criterion, and its course beyond the data is not to be trusted")
        return grid, paths
    if not result.rivals:
        print(f"beyond the data ({end}): no other safe fit is statistically as good (criterion within {RIVAL_WINDOW:g})")
        return grid, paths
    agreement = [r2(path, pick) if np.all(np.isfinite(path)) else -np.inf for path in paths]
    far = int(np.argmin(agreement))
    reach = f"ends at y = {paths[far][-1]:.4g}" if np.isfinite(agreement[far]) else "fails to reach it"
    fits = "1 other fit is" if len(paths) == 1 else f"{len(paths)} other fits are"
    print(f"beyond the data ({end}): {fits} statistically as good (criterion within "
          f"{RIVAL_WINDOW:g}); the farthest from this one has R^2 {agreement[far]:.4f} against it and {reach} "
          f"(this one: {pick[-1]:.4g})")
    return grid, paths


# a monotone record's noise reverses it by up to this many noise levels times sqrt(2 log n), the
# growth of the largest of n noise draws (measured: at most 9.8 levels, n 256, on 8256 records of
# the built-in datasets at sigma up to 0.05, where 6 sqrt(2 log n) is 20)
REVERSAL_NOISES = 6.0
# y' = 0 on a noisy flat record is its mean (R^2 0); on a record flat to solver error R^2 reads 1
STEADY_R2 = 0.5


def turning_note(t, y) -> str | None:
    """Why no law y' = f(y) reproduces the record, when it rises and falls back (or falls and rises)
    by more than its noise explains (a solution of a scalar autonomous ODE never turns); else None."""
    from odecore.noise import noise_level
    from odecore.trajectories import largest_reversal

    turn, level = largest_reversal(y), noise_level(t, y)
    if turn > REVERSAL_NOISES * math.sqrt(2 * math.log(len(y))) * level:
        return (f"the record rises and falls back (or falls and rises) by {turn:.3g} ({turn / level:.0f} times its "
                "noise): a solution of y' = f(y) never turns, so no law of this form reproduces it")
    return None


def fit_notes(result, t, y, missed: float, write) -> list[str]:
    """What a reader of the pick must know besides its R^2: that single points stand apart from the
    record's course (glitches bend a least-squares fit); that the record turns, which no law
    y' = f(y) does (read by Predictor.predict into `result.info["notes"]`); that y' = 0 on a record
    flat within its noise (`missed` within MISFIT_NOISES) scores R^2 0 by definition; that the pick
    misses the data beyond their noise; and then, when a better fit was set aside as unstable beyond
    the data, which one (written by `write`, as listed) and why. `missed` is the pick's misfit in
    noise levels (nsode.search.fits.misfit), which the caller also reports."""
    from odecore.noise import isolated_glitches
    from nsode.search.settings import MISFIT_NOISES

    notes = []
    glitches = isolated_glitches(t, y)
    if glitches:
        several = len(glitches) > 1
        notes.append(f"note: {len(glitches)} point{'s stand' if several else ' stands'} apart from "
                     f"{'their' if several else 'its'} neighbours' course (t = {times_text(t[glitches])}): a "
                     "glitch bends the fit and raises the noise level read from the data; if they are glitches, "
                     "remove them and fit again")
    notes += [f"note: {note}" for note in result.info.get("notes", [])]  # Predictor.predict's (turning_note)
    if result.expression == "0" and result.r2 < STEADY_R2 and missed <= MISFIT_NOISES:  # flat within its noise
        notes.append("note: the record holds its level within its noise, read as y' = 0 (a steady state): its "
                     "course is the record's mean, whose R^2 on the data is 0 by definition, not a poor fit")
    look = result.info.get("second_look")
    if look and look["gate"] == "misfit":
        notes.append(f"note: the model's proposals missed the data by {look['missed']:.3g} times their noise, so sums "
                     f"with the powers y, ..., y**{look['powers']} were fitted too (a second look)")
    elif look and look["changed"]:
        notes.append(f"note: the data read as free of noise, so sums with the powers y, ..., y**{look['powers']} were "
                     f"fitted too (a second look), which changed the pick from {write(look['first'])}")
    if result.r2 < 0 and missed <= MISFIT_NOISES and result.expression != "0":  # nor can the noise level read
        notes.append("note: this law's course follows the data less well than their mean does (R^2 below 0): it "
                     "does not describe them, though it misses them by no more than the noise level read from "
                     "them, which is then misread too")
    if missed > MISFIT_NOISES:
        notes.append(f"note: this law misses the data by {missed:.3g} times their noise (root mean square): it "
                     "approximates them and may not be the law behind them")
        # the first (by the criterion) fit set aside that leaves a quarter of the pick's misses or less
        better = [(text, r2) for text, r2 in result.candidates
                  if text in result.rejected and 1 - r2 <= (1 - result.r2) / 4]
        if better:
            text, r2 = better[0]
            notes.append(f"note: {write(text)} fits better (R^2 {r2_text(r2)}) but was set aside as "
                         f"unstable beyond the data: {result.rejected[text]}")
    return notes


def times_text(times, shown: int = 5) -> str:
    """The first `shown` times of a few points, to four digits."""
    return ", ".join(f"{v:.4g}" for v in times[:shown]) + (", ..." if len(times) > shown else "")


def r2_text(value: float) -> str:
    """R^2 to six decimals, or in scientific notation when a fit is far off (-1.6e+270)."""
    return f"{value:.6f}" if abs(value) < 1e6 else f"{value:.3g}"
