"""Inference: trajectory -> beam of candidate ODEs -> selection by R^2, or (with `search`) the
skeleton search of nsode/search/funnel.py: constants and y0 refitted, unsafe fits rejected, parsimony.

`Predictor` holds a loaded model and the decoding settings; `predict(t, y)` returns a
`Prediction` with the chosen expression, its R^2 on the data, all candidates best first and the
time spent in each stage. Used by `python -m nsode predict` and by the harness methods.
"""
from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import sympy
import torch
from scipy.interpolate import CubicSpline

from odecore import protocol
from odecore.arguments import is_finite_number, is_whole
from odecore.expressions import Y
from odecore.fitting import bin_means
from odecore.noise import isolated_glitches
from odecore.trajectories import observed
from nsode import SCALED_CHECKPOINT, SEARCH_CHECKPOINT, default_checkpoint
from nsode.search.choice import rivals
from nsode.data.tokens import to_infix
from nsode.decode import CPU_DEFAULT_BEAM, GPU_DEFAULT_BEAM, beam_search, sample_search, to_expression
from nsode.encoding import encode_observations
from nsode.search.fits import Found, distinct_laws, restate
from nsode.model import NSODEModel, load, resolve_device
from nsode.options import checked
from nsode.report import turning_note
from nsode.scaling import Scale, in_raw_range
from nsode.search.funnel import MAX_BEAM, SEARCH_BEAM, SEARCH_BRANCHES, search
from nsode.search.readings import transformed, written_back
from nsode.select import EXACT_TOP, select
from nsode.search.settings import Settings


@dataclass
class Prediction:
    """What `Predictor.predict` answers for one record: the law (`expression`), its R^2 on the
    observations (`r2`, without the points set aside as glitches) and initial value at the first
    time (`y0`), the `candidates` (in the search's order, its choice first) and, from the search,
    the fits behind them (`chosen`, `fits`), the `rivals` the data cannot tell from the pick and
    why any were `rejected`; `info` holds the counts, the noise level, the indices set aside and
    the notes. Its repr shows the law, R^2, y0 and info."""

    expression: str  # python syntax in y ("" when no candidate could be integrated)
    r2: float  # R^2 of its trajectory on the observations (without the points set aside): from the fitted y0 (search), else from the first observation
    candidates: list[tuple[str, float]] = field(repr=False)  # (expression, R^2 or -inf when not integrated): the search's order (its choice first), else best R^2 first
    timings: dict = field(default_factory=dict, repr=False)  # seconds (encode_s, decode_s, beam_s: encode + beam, select_s: the fits, readings included) and the reader used
    info: dict = field(default_factory=dict)  # the search's counts, noise level, safety-net flag, set_aside (indices), notes
    y0: float | None = None  # the fitted initial value (search), else the first observation
    chosen: Found | None = field(default=None, repr=False)  # the search's pick with its template (nsode.search.digits.supported rounds it for display)
    rivals: list[Found] = field(default_factory=list, repr=False)  # safe fits the data cannot tell from the pick (search only)
    rejected: dict[str, str] = field(default_factory=dict, repr=False)  # candidate -> why it is unsafe to extrapolate (search only)
    fits: list[Found] = field(default_factory=list, repr=False)  # the fit behind each candidate, in their order (search only)


def model_view(t: np.ndarray, y: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Exactly n observations of the trajectory for the encoder: more are thinned to n evenly
    spaced ones; fewer are read off a cubic spline through them at n evenly spaced times on the
    observed span (the model was trained on a fixed count; the fitter still uses the data as given)."""
    if len(t) > n:
        keep = np.unique(np.linspace(0, len(t) - 1, n).round().astype(int))
        return t[keep], y[keep]
    if len(t) < n:
        grid = np.linspace(t[0], t[-1], n)
        return grid, CubicSpline(t, y)(grid)
    return t, y


def _check_counts(**counts: int | None) -> None:
    """A ValueError naming a budget that is not a whole number, a beam or exact under 1, or a beam
    over MAX_BEAM (None: the default)."""
    for name, value in counts.items():
        least = 1 if name in ("beam", "exact") else 0  # exact=0 would score no candidate
        if value is not None and not is_whole(value, least):
            raise ValueError(f"{name}={value!r}: must be a whole number of at least {least}")
    if counts.get("beam") is not None and counts["beam"] > MAX_BEAM:
        raise ValueError(f"beam={counts['beam']!r}: must be at most {MAX_BEAM} (memory and time grow with it)")


class Predictor:
    """Reads an observed trajectory and answers y' = f(y) (`predict`). `Predictor.searching()` is the
    search as `nsode predict` runs it; the constructor builds any other reader: the paper's (a
    checkpoint and a `beam`, best R^2 of the beam as decoded) or a search of your own (`search`, a
    `Settings`). `model` reads every trajectory, or, given a `scaled` model (scale-invariant input), only
    those like its raw-input training data (`nsode.scaling.in_raw_range`: t from 0 over a span
    near 2, max |y| within 2^3 of 4), and `scaled` reads all others: each model where it reads
    best (model card, "Which checkpoint proposes"). `branches` limits the beam's
    constant branching (nsode.decode.beam_search; the search's default is search.SEARCH_BRANCHES,
    None is the paper's beam); `samples` adds that many ancestral samples at `temperature` after the
    beam's hypotheses (nsode.decode.sample_search; measured, not used by the search: docs/search.md).
    `reads` = N shows the encoder a view of exactly N observations (`model_view`), such as the
    count it was trained on; None shows it the observations as given."""

    def __init__(self, model: NSODEModel | str | Path | None = None, *, beam: int | None = None,
                 exact: int | None = EXACT_TOP, search: Settings | bool | None = None, device: str = "auto",
                 scaled: NSODEModel | str | Path | None = None, branches: int | None = None,
                 samples: int = 0, temperature: float = 1.0, reads: int | None = None):
        _check_counts(beam=beam, branches=branches, samples=samples, reads=reads, exact=exact)
        if not (is_finite_number(temperature) and temperature > 0):
            raise ValueError(f"temperature={temperature!r}: must be a number above 0")
        for name, given in (("model", model), ("scaled", scaled)):
            if not (given is None or isinstance(given, (NSODEModel, str, Path))):
                raise TypeError(f"{name} must be a checkpoint folder or an NSODEModel, not {type(given).__name__}")
        device = resolve_device(device)
        if model is None:
            model = default_checkpoint()
        self.model = model if isinstance(model, NSODEModel) else load(model, device)
        self.scaled = scaled if scaled is None or isinstance(scaled, NSODEModel) else load(scaled, device)
        on_gpu = next(self.model.parameters()).device.type == "cuda"
        self.beam = beam or (GPU_DEFAULT_BEAM if on_gpu else CPU_DEFAULT_BEAM)
        self.exact = exact
        self.search = Settings() if search is True else (checked(search) if search else None)
        self.branches = branches
        self.samples, self.temperature = samples, temperature
        self.reads = reads

    @classmethod
    def searching(cls, settings: Settings | None = None, *, checkpoint: str | Path | None = None,
                  beam: int | None = None, branches: int | None = None, device: str = "auto") -> "Predictor":
        """The search as `nsode predict` runs it by default (and the harness's `nsode-eps+refine`):
        the shipped raw-input proposer, the scale-invariant one for records beyond its range, beam
        SEARCH_BEAM with SEARCH_BRANCHES. A `checkpoint` (a folder, or a shipped checkpoint's name)
        proposes for every record; `beam` is the beam's width (hypotheses kept per step), `branches`
        the constants each hypothesis may branch into (`nsode.decode.beam_search`); `device` is
        "auto" (CUDA where present), "cpu" or "cuda"; `settings` are the search's budget and rules."""
        scaled = None if checkpoint else default_checkpoint(SCALED_CHECKPOINT)
        return cls(checkpoint or default_checkpoint(SEARCH_CHECKPOINT), beam=SEARCH_BEAM if beam is None else beam,
                   search=settings or Settings(), scaled=scaled,
                   branches=SEARCH_BRANCHES if branches is None else branches, device=device)

    def candidates(self, t: np.ndarray, y: np.ndarray, timings: dict | None = None,
                   beam: int | None = None) -> list[tuple[sympy.Expr, float]]:
        """Unique parseable expressions from the beam (in the user's units), best log-probability first.

        A record outside the raw model's times only by an offset (t on [1000, 1002]) is read from
        t[0] = 0, as y' = f(y) does not depend on the clock. A model trained with
        `input_scaling: pow2` reads the trajectory normalised by
        `nsode.scaling.Scale` and its expressions are written back in the user's units. A
        trajectory longer than the encoder's `max_points` (512) is read through an evenly spaced
        subsample of that many observations (the fitter still uses them all).
        `timings`, if given, receives the encoder's seconds as "encode_s", those spent turning
        beams into expressions as "decode_s", which model read the trajectory as "reader"
        ("model" or "scaled") and, as "outside_range", whether a raw-input model read it outside
        the range of its training data (`in_raw_range`, the clock's offset aside). `beam` overrides
        the predictor's beam width for this read.
        """
        model = self.model
        if not in_raw_range(t, y) and in_raw_range(t - t[0], y):  # y' = f(y) does not read the clock:
            t = t - t[0]  # a record on [1000, 1002] is read as one on [0, 2]
        if self.scaled is not None and not in_raw_range(t, y):
            model = self.scaled
        pow2 = getattr(model.config, "input_scaling", "none") == "pow2"
        if timings is not None:
            timings["reader"] = "model" if model is self.model else "scaled"
            timings["outside_range"] = not pow2 and not in_raw_range(t, y)
        if self.reads:
            t, y = model_view(t, y, self.reads)
        if len(t) > model.config.max_points:  # the encoder's positions end there: it reads an even subsample
            t, y = model_view(t, y, model.config.max_points)
        scale = Scale.of(t, y) if pow2 else None
        bits = torch.from_numpy(encode_observations(*(scale.apply(t, y) if scale else (t, y))))
        was_training = model.training
        model.eval()
        start = time.perf_counter()
        with torch.no_grad():
            memory = model.encode(bits.unsqueeze(0).to(next(model.parameters()).device))
        if timings is not None:
            timings["encode_s"] = time.perf_counter() - start
        beams = beam_search(model, None, memory=memory, beam=beam or self.beam, branches=self.branches)
        if self.samples:  # after the beam's: the search reads the first expressions first
            beams += sample_search(model, memory, samples=self.samples, temperature=self.temperature)
        model.train(was_training)
        start = time.perf_counter()
        variable = scale.model_variable() if scale else Y
        seen, out = set(), []
        for b in beams:
            expr = to_expression(b.prefix, variable)
            if expr is None:
                continue
            if scale:
                expr = scale.from_model_variable(expr)
            if expr not in seen:  # structural equality, as sympy.srepr would tell
                seen.add(expr)
                out.append((expr, b.score))
        if timings is not None:
            timings["decode_s"] = time.perf_counter() - start
        return out

    def predict(self, t: np.ndarray, y: np.ndarray, *, min_points: int = protocol.MIN_POINTS) -> Prediction:
        """y' = f(y) for one record; ValueError naming the problem when t and y are not one
        (`odecore.trajectories.observed`: NaN, unsorted or repeated times, fewer than `min_points`
        points, dates). `info["notes"]` says what a reader of the answer must know besides its
        R^2: that the record turns, which no law y' = f(y) does (then the answer is a curve fit)."""
        t, y = observed(t, y, min_points)
        if self.search is not None:  # settings set after the constructor checked them (predictor.search = ...)
            self.search = checked(self.search)
        aside = self.glitches(t, y)
        t, y = np.delete(t, aside), np.delete(y, aside)
        timings = {}
        t0 = time.perf_counter()
        cands = self.candidates(t, y, timings)
        t1 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if self.search is not None:
                extra = self.transformed_readings(t, y, timings)
                result = self._searched([e for e, _ in cands], t, y, extra)
            else:
                scored = select([e for e, _ in cands], t, y, exact=self.exact)
                ranked = [(to_infix(s.expr), s.r2) for s in scored]
                best = ranked[0] if ranked and math.isfinite(ranked[0][1]) else ("", -math.inf)
                result = Prediction(best[0], best[1], ranked, y0=float(y[0]))
        result.timings.update(timings, beam_s=t1 - t0, select_s=time.perf_counter() - t1, n_candidates=len(cands))
        result.info["set_aside"] = aside
        result.info["notes"] = [note for note in (turning_note(t, y),) if note]
        return result

    def glitches(self, t: np.ndarray, y: np.ndarray) -> list[int]:
        """Indices of the points the search sets aside (`Settings.glitches`; none for the paper's
        selection, and none where fewer than the protocol's minimum would be left)."""
        if self.search is None or not self.search.glitches:
            return []
        aside = isolated_glitches(t, y)
        return aside if len(t) - len(aside) >= protocol.MIN_POINTS else []

    def transformed_readings(self, t: np.ndarray, y: np.ndarray, timings: dict | None = None) -> list[tuple]:
        """(label, laws) for the search's stage 1: the first `read_log` and `read_reciprocal` laws the
        model writes for log|y| and 1/y of the record (each read with a beam of that width), written
        back in y (nsode.search.readings; none where a reading does not apply). `timings` receives
        their seconds as "readings_s"."""
        start, out = time.perf_counter(), []
        for kind, count in (("log", self.search.read_log), ("reciprocal", self.search.read_reciprocal)):
            z = transformed(y, kind) if count else None
            if z is None:
                continue
            sign = 1 if y[0] > 0 else -1
            laws = [written_back(g, kind, sign) for g, _ in self.candidates(t, z, beam=count)[:count]]
            out.append((f"{kind}-reading", laws))
        if timings is not None and out:
            timings["readings_s"] = time.perf_counter() - start
        return out

    def _searched(self, exprs: list[sympy.Expr], t: np.ndarray, y: np.ndarray, extra=()) -> Prediction:
        means = bin_means(t, y, self.search.max_points)  # what the search reads of a long record
        found, info = search(exprs, *means, self.search, extra=extra)
        near = rivals(found, *means, info["stability_sigma"], distinct=True,  # checks their stability too
                      settings=self.search)
        if len(means[0]) < len(t):  # y0 at the first observation, R^2 on every one, as the user reads them
            for f in found:
                if math.isfinite(f.r2):
                    restate(f, means[0][0], t, y)
        first: dict[str, Found] = {}  # each law once, at its best rank
        for f in distinct_laws(found, y):
            first.setdefault(to_infix(f.expr), f)
        ranked = [(text, f.r2) for text, f in first.items()]
        rejected = {text: f.rejected for text, f in first.items() if f.rejected}
        if not found or not math.isfinite(found[0].r2):
            return Prediction("", -math.inf, ranked, info=info)
        return Prediction(ranked[0][0], found[0].r2, ranked, info=info, y0=found[0].y0, chosen=found[0],
                          rivals=near, rejected=rejected, fits=list(first.values()))
