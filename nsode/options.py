"""The search's settings as command-line options: one table gives each `nsode.search.settings.Settings` field
its flag and help, for `python -m nsode predict` and `benchmarks/nsode_quality.py` alike, so a
new setting is written once (its default stays in Settings); `search_settings` builds Settings from
named values, the method's parameters included."""
from __future__ import annotations

import argparse
from dataclasses import asdict, fields

import numpy as np

from odecore import protocol
from odecore.arguments import nonnegative_number, positive_number, share, whole_number
from nsode.search.settings import Settings

# field: (argparse type, a tuple of choices, or bool for an on/off switch; help). A switch whose
# default is on is written --no-FIELD.
SEARCH_OPTIONS = {
    "max_points": (whole_number(protocol.MIN_POINTS), "a longer record is searched through the means of N "
                                                      "consecutive groups of its observations (the search's time "
                                                      "and memory grow with the points it reads)"),
    "glitches": (bool, "set aside, before the model reads the record and the fitter fits it, single points that "
                       "stand apart from their neighbours' course (a glitch bends a least-squares fit; "
                       "odecore.noise.isolated_glitches)"),
    "top_k": (whole_number(1), "skeletons whose constants and initial value are all fitted"),
    "node_listed": (whole_number(0), "also fit the N best skeletons by the cheap score plus the node cost per node of "
                                     "the skeleton (0: none)"),
    "refit": (whole_number(0), "of those, fitted by least squares on the integrated trajectory"),
    "max_nfev": (whole_number(1), "trajectory evaluations per least-squares fit"),
    "first_start": (bool, "start that fit from the first observation where its trajectory misses less than from "
                          "the integral form's initial value (records spanning many decades)"),
    "combine": (whole_number(0), "distinct beam terms recombined into new sums (0: only the beam's own sums)"),
    "combine_size": (whole_number(1), "beam terms per recombined sum at most, besides a constant term"),
    "basis": (whole_number(0), "powers y, ..., y**N recombined beside the beam's terms (0: none)"),
    "misfit_powers": (whole_number(0), "where the pick misses the data by more than --misfit-gate noise levels, "
                      "a second look that also recombines the powers y, ..., y**N (0: none)"),
    "misfit_gate": (positive_number, "noise levels (root mean square) the pick must miss the data by for that"),
    "clean_powers": (whole_number(0), "on a record read as free of noise, that second look with the powers y, ..., "
                     "y**N whatever the pick's miss (0: none)"),
    "per_capita": (whole_number(0), "the first N beam expressions g also read as y' = y*g (0: none)"),
    "read_log": (whole_number(0), "the model also reads log|y| of a record that keeps one sign; the first N laws "
                                  "it writes for it, written back in y (z' = g(z) is y' = y*g(log(y))), are proposed "
                                  "too (0: none)"),
    "read_reciprocal": (whole_number(0), "likewise for 1/y (z' = g(z) is y' = -y**2*g(1/y)), where max|y| / min|y| "
                                         "stays below 1000 (0: none)"),
    "denominators": (whole_number(0), "beam expressions with a polynomial denominator (y/(y + K)) also read with it "
                                      "fitted to the data, for the first N sets of numerators (the model's K may put "
                                      "the pole on the far side of the data; 0: none)"),
    "snap": (bool, "read beam exponents near an integer or +-1/2 also as that exponent"),
    "snap_fitted": (bool, "refit fitted candidates with their exponents near an integer or +-1/2 snapped to it"),
    "prune": (whole_number(0), "the N best fitted sums are also refitted with each term dropped in turn (0: none)"),
    "prune_rounds": (whole_number(1), "rounds of that pruning at most, each on the best fits so far, until one adds "
                                      "nothing (a law under two spare terms needs two)"),
    "snap_pruned": (bool, "snap each pruning round's new fits too, as snap_fitted does the first fits"),
    "bracket": (whole_number(0), "the N best fits with a free exponent are also refitted with it at the integer "
                                 "below, the integer above and the half-integer between (0: none)"),
    "noise_growth": (bool, "count each residual, in the choice, in its own point's noise level where the noise "
                           "evidently grows with |y| (relative noise on a record that falls or rises manyfold)"),
    "drift": (bool, "also consider y' = c (zero-order kinetics); off by default because a slow relaxation whose "
                    "curvature is below the noise then reads as a straight line"),
    "robust": (bool, "reject fits whose solution fails from a perturbed initial value or on twice the span"),
    "stability_noise": (bool, "in that check, perturb the initial value by the noise level with the trajectory's "
                              "curvature removed (few observations)"),
    "keep_sign": (bool, "leave out, in that check, a perturbed initial value on the other side of 0 from "
                        "observations that never cross it (sparse records of populations or concentrations)"),
    "rest_in_noise": (bool, "make that check's start from 0 only when the initial value lies within the noise of "
                            "0, not merely within the law's motion over one sampling interval"),
    "rest_limit": (bool, "pass, in that check, the start from 0 of a law that is not a number at 0 but tends to 0 "
                         "there (Gompertz's y log y): what starts empty stays empty"),
    "hidden_pause": (bool, "reject, in that check, a fit whose law nearly stops between two consecutive "
                           "observations of its own course (|f| there below a quarter of |f| at both): a pause the "
                           "samples cannot see, which buys a time shift rather than a law"),
    "start_scaled_bound": (bool, "let, in that check, a course started at c times the fitted initial value go c "
                                 "times as far, as the course of a law linear in y does (exponential growth from a "
                                 "first value smaller than the noise at its large values)"),
    "growth_bound": (bool, "let, in that check, a course go G^2 times the observations' size where the record "
                           "itself grew G > 100 fold (exponential growth over many decades continues as it grew)"),
    "turn_back": (bool, "reject, in that check, a fit whose course from a perturbed initial value moves against "
                        "the course from the fitted one by more than twice the perturbation (an unstable "
                        "equilibrium within the start's uncertainty)"),
    "origin": (bool, "perturb, in that check, the initial value by the law's motion since t = 0 too, where the "
                     "first observation follows 0 by at most a tenth of the record's span (the record most likely "
                     "began at 0)"),
    "lead_added": (bool, "with origin, add the record's motion over that lead to the initial value's own "
                         "uncertainty (noise, the fit's miss of the first observation) instead of taking the larger"),
    "decade_weights": (bool, "weigh, on a record that grew more than 100-fold, each residual of the fits and of "
                             "the choice by its own point's noise level, unclipped (relative noise over many decades)"),
    "decade_reweight": (bool, "fit that record's noise levels with each point's squared miss in its own level "
                              "(reweighted least squares), not in the largest values' (which hide the small values' "
                              "quiet behind a floor)"),
    "criterion": (("bic", "rss"), "what ranks the fits: an information criterion (bic) or the residual alone (rss: "
                                  "no parsimony)"),
    "forecast": (nonnegative_number, "fits within X of the best criterion compete on forecasting the last 30%% "
                                     "of the data (0: the lowest criterion wins)"),
    "forecast_score": (("squared", "predictive"), "the forecast error: squared, or predictive (allowing for what "
                                                  "the first 70%% leaves uncertain)"),
    "node_cost": (nonnegative_number, "in that comparison, criterion units charged per node of the expression"),
    "nesting_cost": (nonnegative_number, "and per function nested in another's argument, as in sin(cos(y))"),
    "sqrt_nodes": (bool, "count, in that comparison, sqrt(y) as one function, as log(y), not as a power and its "
                         "exponent 1/2"),
    "unit_cost": (nonnegative_number, "criterion units charged, at every stage, to a law that fixes the unit of y: "
                                      "a function of y with no scale inside, as in sin(y) or exp(y)"),
    "agreement": (share, "in that comparison only the fits whose course over twice the span the most "
                         "tied fits follow to R^2 X compete, votes weighted by likelihood (0: off; "
                         "0.99 was measured and not kept)"),
    "course_tolerance": (nonnegative_number, "in that comparison each tied fit votes, weighted by its likelihood, "
                                             "for every course over twice the span it follows within X times "
                                             "the course's spread; the cheapest fit on the heaviest course wins "
                                             "(0: no vote; 0.1 was measured and not kept)"),
    "multiplicity": (nonnegative_number, "charge 2 X log(how many skeletons with as many constants "
                                         "were scored) on every criterion (0: plain BIC)"),
}


def flag(name: str) -> str:
    """The option that sets field `name`: --top-k, or --no-snap for a switch that is on by default."""
    kind = SEARCH_OPTIONS[name][0]
    negated = kind is bool and getattr(Settings, name)
    return f"--{'no-' if negated else ''}{name.replace('_', '-')}"


def metavar(kind) -> str:
    """N for a whole number, X for any other number."""
    return "X" if kind in (nonnegative_number, positive_number, share) else "N"


def add_search_arguments(parser: argparse.ArgumentParser) -> None:
    """Every SEARCH_OPTIONS flag, in a group of its own, defaulting to Settings' value."""
    group = parser.add_argument_group("search settings", "the defaults are the shipped search; the others "
                                      "are kept so that each measured alternative is one flag away")
    for name, (kind, text) in SEARCH_OPTIONS.items():
        default = getattr(Settings, name)
        if kind is bool:
            action = "store_false" if default else "store_true"
            group.add_argument(flag(name), dest=name, action=action, help=f"do not {text}" if default else text)
        elif isinstance(kind, tuple):
            group.add_argument(flag(name), dest=name, choices=kind, default=default,
                               help=f"{text}; default %(default)s")
        else:
            group.add_argument(flag(name), dest=name, type=kind, default=default, metavar=metavar(kind),
                               help=f"{text}; default %(default)g")


def settings_from(args: argparse.Namespace) -> Settings:
    """The Settings the parsed flags ask for (fields without a flag keep their default)."""
    return search_settings({name: getattr(args, name) for name in SEARCH_OPTIONS})


def search_settings(params: dict) -> Settings:
    """The search's Settings from named values (a method's parameters, parsed flags): each value
    named as a Settings field, converted to that field's type (a method parameter read from a file
    or a command line may be text)."""
    return Settings(**{f.name: setting_value(f.name, type(f.default), params[f.name])
                       for f in fields(Settings) if f.name in params})


def checked(settings: Settings) -> Settings:
    """`settings` as given from Python, each value checked as its flag checks it (ValueError
    naming a field out of range: top_k=0 would search nothing)."""
    if not isinstance(settings, Settings):
        raise TypeError(f"search settings must be a Settings (nsode.search.settings.Settings), not "
                        f"{type(settings).__name__}: Settings(top_k=8), not {{'top_k': 8}}")
    return search_settings(asdict(settings))


def setting_value(name: str, kind: type, value):
    """`value` as `kind`, checked as its flag checks it (ValueError naming it if it is out of range
    or not among the choices); text for a switch must say true or false (bool('false') would be True)."""
    if kind is bool:
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        if not isinstance(value, (bool, np.bool_)):  # None, 0 or 5 would pass as a switch
            raise ValueError(f"{name}={value!r}: expected True or False")
        return bool(value)
    option = SEARCH_OPTIONS.get(name, (None,))[0]  # None: a field without a flag, checked as a number >= 0
    if option is None and kind in (int, float):
        option = whole_number(0) if kind is int else nonnegative_number
    if isinstance(option, tuple) and value not in option:
        raise ValueError(f"{name}={value!r}: use one of {', '.join(option)}")
    if callable(option) and option is not bool and not isinstance(value, bool):
        try:
            option(str(value))
        except argparse.ArgumentTypeError as err:
            raise ValueError(f"{name}={value!r}: {err}") from None
    try:
        return kind(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name}={value!r}: expected {kind.__name__}") from None


def changed_flags(args: argparse.Namespace, *, values: bool = False) -> list[str]:
    """The search flags given a value other than the default, as the user wrote them (with
    `values`, each followed by its value: "--top-k 32")."""
    out = []
    for name, (kind, _) in SEARCH_OPTIONS.items():
        value = getattr(args, name)
        if value == getattr(Settings, name):
            continue
        if kind is bool or not values:
            out.append(flag(name))
        else:
            out.append(f"{flag(name)} {_as_typed(value)}")
    return out


def _as_typed(value) -> str:
    """A flag's value as one would type it back: whole numbers in full (1000000, which the flag reads,
    not 1e+06), other numbers short where that is exact (2, not 2.0) and in full otherwise."""
    if isinstance(value, float):
        short = f"{value:g}"
        return short if float(short) == value else repr(value)
    return str(value)
