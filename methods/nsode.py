"""NSODE (Becker et al. 2023): a pretrained transformer reads the trajectory and proposes ODEs
by beam search; the candidate whose integrated trajectory fits the data best is returned.

Checkpoints ship in nsode/checkpoints/<variant>/ and are loaded once per worker in `setup`, so
model loading is not part of a task's fit time (it is reported in metadata as `load_s`).
The three methods are one class with three parameter sets (`NSODE.variants`): `nsode` and
`nsode-eps` differ in the checkpoint (both read raw t and y, as in the paper); `nsode-eps+refine`
(since version 6 `nsode-eps` reads trajectories like its training data, the scale-invariant
`scaled_checkpoint` `nsode-eps-scaled` all others; version 7 adds the law y' = 0 to every
search; version 8 lets each beam hypothesis branch into one constant interval, so the beam holds
more distinct skeletons; version 9 also reads beam exponents near an integer or +-1/2 as that
exponent; version 10 refits fitted exponents near one as that exponent; version 11 also reads
the first beam expressions g as the per-capita law y' = y*g; version 12 also rejects a fit that
fails when started where the data start: y0 moved by twice its miss of the first observation
or by one sampling step's worth of its slope; version 13 also from exactly 0 when 0 is that
close: a law with a removable singularity there, sin(y)/y, cannot start from rest; version 14
charges 10 criterion units per function nested in another's argument among statistical ties,
so sin(sin(c*y)) no longer stands in for a logistic; version 15 charges a law that fixes the
unit of y; version 16 leaves out a moved start that crosses 0 where the observations never do;
version 17 lets a law that tends to 0 at 0 (y log y) pass the start at rest; version 18 makes
that start only when y0 lies within the noise of 0; version 19 reads a record of more than
1,024 observations through the means of 1,024 consecutive groups, so that time and memory no
longer grow with the record) reads the beam as skeletons and lets a fitter decide
(nsode/search/funnel.py, not in the paper): constants and y0 refitted, fits unsafe to extrapolate
rejected, parsimony by an information criterion. Its budget is counted (beam,
top_k skeletons, refit, max_nfev); any of them is set on the command line, as in
`--methods nsode-eps+refine:beam=128`.
Since version 25 the search's trajectory fits and stability check never let LSODA step past the
last time asked for (odecore.solving.solve), so a law defined up to there, such as -c*sqrt(y), is
no longer failed by a step that overshot into where f is undefined.
Version 26 reads records that span many decades: the trajectory fit starts at the first
observation where the integral form's y0 (pulled off by the largest values) misses more, and the
stability check lets a record that grew G > 100-fold go G^2 times its size, so exponential growth
by e^30 is read as c*y rather than refused. Version 27 fits such a record (grown > 100-fold) with
each residual in its own point's noise, unclipped, so its small values count too; version 28 fits
those noise levels by reweighted least squares (unweighted, the largest values set a floor that hid
the small values' quiet). Version 29 solves the first, linear fit exactly where its tiny ridge
would bend it: on a record with a large offset (pressure in Pa moving by 30) the integrals of 1
and of y are nearly parallel, and the ridge had kept the affine law out of the shortlist. Version
30 answers where no shortlisted fit can be integrated over the observations (a pole inside the
data's range): the next 64 skeletons by the cheap score and y' = 0 are fitted, and the choice is
made among them; it had raised an error. Version 37 also lets the model read 1/y of a record that
keeps one sign and proposes its first 64 laws written back in y (a logistic is a relaxation of 1/y,
a harvested logistic a quadratic in it): the law's own form is picked more often, at the same
extrapolation count (docs/search.md, "Session 99").
`nsode` and `nsode-eps` version 2 integrate each of the paper's selection candidates under a
count of right-hand-side evaluations (nsode.select.MAX_RHS_CALLS) instead of 1 s of wall clock,
so their answer no longer depends on how busy the machine is.
"""
import dataclasses
import functools
import hashlib
import time
import warnings
from pathlib import Path

from bench import Budget, Method, Observations, Prediction
from bench.method import Variant, check_kinds, is_whole, require
from nsode import SCALED_CHECKPOINT, SEARCH_CHECKPOINT, checkpoint_files, default_checkpoint
from nsode.options import search_settings
from nsode.scaling import raw_range_text
from nsode.search.funnel import SEARCH_BEAM, SEARCH_BRANCHES
from nsode.search.settings import Settings

SETTINGS = {f.name for f in dataclasses.fields(Settings)}  # parameters checked as the search's flags


class NSODE(Method):
    """One class, three named parameter sets (`variants`). `checkpoint` is a shipped checkpoint's name
    (nsode/checkpoints/<name>) or a checkpoint folder's path; `scaled_checkpoint` (the same kinds, or
    None) reads the trajectories outside the first one's training range (nsode.predict.Predictor);
    `beam` None is the decoder's default (nsode.decode: 64 on CPU, 1536 on a GPU), `branches` the
    constant intervals each beam hypothesis may branch into (None: all, the paper's beam); `search`
    switches the paper's R^2 selection for the skeleton search, which sets `glitches` aside (single points
    off their neighbours' course, on since version 33), whose counted budget is `max_points` (a
    longer record is read through the means of consecutive groups of observations), `top_k`, `node_listed`
    (the best skeletons by cheap score plus node cost listed beside them; off: measured, not kept), `refit`,
    `max_nfev`, `combine` (beam terms recombined, `combine_size` at a time) and `basis` (powers of y
    recombined beside them, default none) with `misfit_powers` (those powers in a second look where the
    pick misses the data by more than `misfit_gate` noise levels) and `clean_powers` (those on a record
    read as free of noise, whatever the pick's miss; measured, not kept), whose candidates include
    y' = c with `drift`, and whose
    choice is `criterion`, the `forecast` window with its `forecast_score`, `node_cost` and
    `nesting_cost` (with `sqrt_nodes` sqrt(y) counts as one node less: measured in rule 62b),
    `unit_cost` (a law that fixes the unit of y), `agreement` (the tied fits' vote, off: measured and
    not kept), `course_tolerance` (the tied fits' vote for the heaviest course), `multiplicity` (the
    extended BIC's charge for the skeletons scored per size), `snap` (beam exponents near an integer or
    +-1/2 also read as that exponent), `snap_fitted` (fitted exponents likewise, refitted), `prune` (the
    best fitted sums refitted with each term dropped; `prune_rounds` times, on since version 24), `snap_pruned`
    (those fits snapped too, on since version 32), `bracket` (the best fits with a free exponent refitted
    with it at the integers beside it and the half-integer between; off: measured, not kept),
    `noise_growth` (the choice weighs residuals by noise that grows with |y|, on since search version
    22), `per_capita` (the first beam expressions g also read as y' = y*g), `read_log` and
    `read_reciprocal` (the model also reads log|y| or 1/y, its laws written back in y; 1/y on since
    version 37, log|y| off: measured in session 98), `denominators` (beam
    expressions also read with their polynomial denominator fitted to the data; off: measured, not
    kept), `first_start` (the trajectory fit starts at the first observation where that misses less than
    the integral form's y0), `robust` (the stability check; off, unsafe fits may win), `stability_noise`
    (its start perturbed by the noise with the curvature removed), `keep_sign` (its perturbed starts
    kept on the observations' side of 0), `rest_in_noise` (its start from 0 only where y0 is within the
    noise of 0), `rest_limit` (that start passed by a law that tends to 0 there, as y log y),
    `hidden_pause` (a law that nearly stops between two observations fails it), `start_scaled_bound` (a
    perturbed start c times y0 may go c times as far, on since version 23) and `growth_bound` (a record
    that grew G > 100-fold may go G^2 times its size), `turn_back` (a course from a perturbed start that
    moves against the fitted one fails it) and `origin` (a record that starts just after t = 0 is checked
    from where it was at 0; with `lead_added` that start's uncertainty is its noise plus the lead's
    motion, not the larger), and `decade_weights` (such a record's fits weigh residuals by the noise
    profile, unclipped) with `decade_reweight` (that profile fitted by reweighted least squares;
    nsode.search.settings.Settings); `threads` are torch's CPU threads per worker."""

    name = "nsode"
    version = "2"
    requires = ("torch", "transformers", "safetensors")
    time_limit = 180.0
    description = "NSODE: transformer trained on 256 equidistant clean points, beam search + R^2 selection"
    variants = {
        "nsode-eps": Variant({"checkpoint": "nsode-eps"},
                             "NSODE-eps: trained on 128 random points with 1% multiplicative noise"),
        "nsode-eps+refine": Variant({"checkpoint": SEARCH_CHECKPOINT, "scaled_checkpoint": SCALED_CHECKPOINT,
                                     "beam": SEARCH_BEAM, "branches": SEARCH_BRANCHES, "search": True},
                                    f"NSODE-eps (scale-invariant input beyond its training range) proposes skeletons "
                                    f"(beam {SEARCH_BEAM}), a fitter decides: constants and y0 refitted, unsafe fits "
                                    "rejected, information criterion", version="37"),
    }

    def __init__(self, checkpoint="nsode", beam=None, search=False, glitches=Settings.glitches,
                 max_points=Settings.max_points,
                 top_k=Settings.top_k, refit=Settings.refit, node_listed=Settings.node_listed,
                 max_nfev=Settings.max_nfev, criterion=Settings.criterion, combine=Settings.combine,
                 combine_size=Settings.combine_size,
                 forecast=Settings.forecast, node_cost=Settings.node_cost, nesting_cost=Settings.nesting_cost,
                 unit_cost=Settings.unit_cost, agreement=Settings.agreement,
                 course_tolerance=Settings.course_tolerance,
                 forecast_score=Settings.forecast_score, basis=Settings.basis,
                 misfit_powers=Settings.misfit_powers, misfit_gate=Settings.misfit_gate,
                 clean_powers=Settings.clean_powers, drift=Settings.drift, snap=Settings.snap,
                 snap_fitted=Settings.snap_fitted, prune=Settings.prune,
                 prune_rounds=Settings.prune_rounds, snap_pruned=Settings.snap_pruned, bracket=Settings.bracket,
                 noise_growth=Settings.noise_growth, robust=Settings.robust,
                 per_capita=Settings.per_capita, multiplicity=Settings.multiplicity,
                 read_log=Settings.read_log, read_reciprocal=Settings.read_reciprocal,
                 stability_noise=Settings.stability_noise, keep_sign=Settings.keep_sign,
                 rest_in_noise=Settings.rest_in_noise, rest_limit=Settings.rest_limit,
                 hidden_pause=Settings.hidden_pause, start_scaled_bound=Settings.start_scaled_bound,
                 sqrt_nodes=Settings.sqrt_nodes, first_start=Settings.first_start,
                 growth_bound=Settings.growth_bound, decade_weights=Settings.decade_weights,
                 decade_reweight=Settings.decade_reweight, denominators=Settings.denominators,
                 turn_back=Settings.turn_back, origin=Settings.origin, lead_added=Settings.lead_added,
                 threads=1,
                 scaled_checkpoint=None, branches=None):
        self.checkpoint, self.scaled_checkpoint, self.beam, self.search = checkpoint, scaled_checkpoint, beam, search
        self.branches, self.snap, self.snap_fitted, self.per_capita = branches, snap, snap_fitted, per_capita
        self.top_k, self.refit, self.max_nfev, self.criterion, self.threads = top_k, refit, max_nfev, criterion, threads
        self.combine, self.forecast, self.node_cost, self.basis, self.drift = combine, forecast, node_cost, basis, drift
        self.nesting_cost, self.forecast_score, self.multiplicity = nesting_cost, forecast_score, multiplicity
        self.unit_cost, self.agreement, self.course_tolerance = unit_cost, agreement, course_tolerance
        self.stability_noise, self.keep_sign, self.rest_in_noise = stability_noise, keep_sign, rest_in_noise
        self.rest_limit, self.max_points, self.prune, self.noise_growth = rest_limit, max_points, prune, noise_growth
        self.prune_rounds, self.combine_size = prune_rounds, combine_size
        self.snap_pruned, self.bracket, self.node_listed = snap_pruned, bracket, node_listed
        self.robust, self.hidden_pause, self.start_scaled_bound = robust, hidden_pause, start_scaled_bound
        self.sqrt_nodes, self.first_start, self.growth_bound = sqrt_nodes, first_start, growth_bound
        self.decade_weights, self.decade_reweight, self.denominators = decade_weights, decade_reweight, denominators
        self.turn_back, self.origin, self.lead_added, self.glitches = turn_back, origin, lead_added, glitches
        self.misfit_powers, self.misfit_gate, self.clean_powers = misfit_powers, misfit_gate, clean_powers
        self.read_log, self.read_reciprocal = read_log, read_reciprocal

    def check_params(self):
        """Search settings as `nsode predict` checks its flags (text allowed, as from a file); the
        others as any method's."""
        params = self.get_params()
        search_settings(params)
        check_kinds(self, {key: value for key, value in params.items() if key not in SETTINGS})
        for key in ("beam", "branches"):
            require(params[key] is None or is_whole(params[key], 1), key, params[key], "a whole number >= 1, or None")
        require(is_whole(params["threads"], 1), "threads", params["threads"], "a whole number >= 1")

    def checkpoint_path(self, name=None) -> Path:
        """A name without a path separator is a shipped checkpoint, anything else a folder."""
        name = str(self.checkpoint if name is None else name)
        return Path(name).expanduser() if "/" in name else default_checkpoint(name)

    def checkpoint_paths(self) -> list[Path]:
        return [self.checkpoint_path(c) for c in (self.checkpoint, self.scaled_checkpoint) if c]

    def unavailable_reason(self):
        reason = super().unavailable_reason()
        if reason:
            return reason
        for name in (self.checkpoint, self.scaled_checkpoint):
            if not name:
                continue
            path = self.checkpoint_path(name)
            try:
                checkpoint_files.check(path)  # a broken folder: one line before the sweep, not an error per task
            except checkpoint_files.CheckpointError as err:
                if "/" not in str(name) and not path.exists():
                    shipped = sorted(folder.name for folder in path.parent.iterdir() if (folder / "config.json").is_file())
                    return f"no shipped checkpoint {name!r} (shipped: {', '.join(shipped)}); a folder of your own is a path"
                return str(err)
        return None

    def fingerprint(self) -> str:
        """The first 8 hex digits of each checkpoint's weights' SHA-256, and of its config.json's
        where that is not the shipped one's (it holds settings such as the input scaling): rows
        stored with other weights or settings under the same checkpoint name are not reused."""
        return "+".join(_checkpoint_digest(path) for path in self.checkpoint_paths())

    def setup(self):
        import torch

        from nsode.predict import Predictor

        if not torch.cuda.is_available():  # parallelism comes from harness workers (-j), one thread each
            torch.set_num_threads(int(self.threads))
        start = time.perf_counter()
        search = None
        if self.search:
            search = search_settings(self.get_params())
        scaled = self.checkpoint_path(self.scaled_checkpoint) if self.scaled_checkpoint else None
        self.predictor_ = Predictor(self.checkpoint_path(), beam=self.beam, search=search, device="auto",
                                    scaled=scaled, branches=int(self.branches or 0))
        self.load_s_ = time.perf_counter() - start

    def run(self, observations: Observations, budget: Budget) -> Prediction:
        if not hasattr(self, "predictor_"):
            self.setup()
        result = self.predictor_.predict(observations.t, observations.y)
        if result.timings.get("outside_range"):
            warnings.warn(f"the data lie outside the model's raw-input training range ({raw_range_text()}); "
                          "nsode-eps+refine reads such data with its scale-invariant model", stacklevel=2)
        if not result.expression:
            raise ValueError("no beam candidate could be integrated over the observed interval")
        return Prediction(result.expression, candidates=tuple(e for e, _ in result.candidates),
                          metadata={"r2_fit": result.r2, "load_s": self.load_s_,
                                    "device": str(next(self.predictor_.model.parameters()).device),
                                    # which stage wrote the pick: model, variant, per-capita, combination, ...
                                    "source": result.chosen.source if result.chosen else None,
                                    **result.timings, **result.info})


def _checkpoint_digest(folder: Path) -> str:
    """The weights' digest, joined by the configuration's when it differs from the shipped
    checkpoint's of the same weights (so the shipped digests stay those of earlier results)."""
    weights, config = _digest(folder / "model.safetensors"), _digest(folder / "config.json")
    shipped = {_digest(default / "model.safetensors"): _digest(default / "config.json")
               for default in (default_checkpoint(SEARCH_CHECKPOINT), default_checkpoint(SCALED_CHECKPOINT),
                               default_checkpoint("nsode"))}
    return weights if shipped.get(weights) == config else f"{weights}.{config}"


def _digest(path: Path) -> str:
    """Short SHA-256 of a file ('' when absent), cached by path, size and modification time."""
    try:
        stat = path.stat()
    except OSError:
        return ""
    return _file_digest(str(path), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=None)
def _file_digest(path: str, size: int, mtime_ns: int) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()[:8]
