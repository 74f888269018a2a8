"""NSODE (Becker et al. 2023): a pretrained transformer reads the trajectory and proposes ODEs
by beam search; the candidate whose integrated trajectory fits the data best is returned.

Checkpoints ship in nsode/checkpoints/<variant>/ and are loaded once per worker in `setup`, so
model loading is not part of a task's fit time (it is reported in metadata as `load_s`).
`nsode-eps+refine` reads the beam as skeletons and lets a fitter decide (nsode/search.py, not in
the paper): constants and y0 refitted, fits unsafe to extrapolate rejected, parsimony by an
information criterion. Its budget is counted (beam, top_k skeletons, refit, max_nfev).
"""
import time
from pathlib import Path

from bench import Budget, Method, Observations, Prediction


class _NSODE(Method):
    variant = "nsode"
    beam = None  # None: nsode.decode.CPU_DEFAULT_BEAM on CPU, GPU_DEFAULT_BEAM on a GPU
    search = False  # the skeleton search of nsode/search.py instead of the paper's selection
    requires = ("torch", "transformers", "safetensors")
    time_limit = 180.0

    @classmethod
    def checkpoint(cls) -> Path:
        from nsode.predict import default_checkpoint

        return default_checkpoint(cls.variant)

    @classmethod
    def unavailable_reason(cls):
        reason = super().unavailable_reason()
        if reason:
            return reason
        if not (cls.checkpoint() / "model.safetensors").is_file():
            return f"no shipped checkpoint in {cls.checkpoint()}; train one with python -m nsode.train"
        return None

    def setup(self):
        import torch

        from nsode.predict import Predictor

        if not torch.cuda.is_available():  # parallelism comes from harness workers (-j), one thread each
            torch.set_num_threads(self.params.get("threads", 1))
        from nsode.search import Settings

        start = time.perf_counter()
        search = None
        if self.params.get("search", self.search):
            search = Settings(**{k: self.params[k] for k in ("top_k", "refit", "max_nfev") if k in self.params})
        self.predictor_ = Predictor(self.checkpoint(), beam=self.params.get("beam", self.beam), search=search,
                                    device="auto")
        self.load_s_ = time.perf_counter() - start

    def run(self, observations: Observations, budget: Budget) -> Prediction:
        if not hasattr(self, "predictor_"):
            self.setup()
        result = self.predictor_.predict(observations.t, observations.y)
        if not result.expression:
            raise ValueError("no beam candidate could be integrated over the observed interval")
        return Prediction(result.expression, candidates=tuple(e for e, _ in result.candidates),
                          metadata={"r2_fit": result.r2, "load_s": self.load_s_,
                                    "device": str(next(self.predictor_.model.parameters()).device),
                                    **result.timings, **result.info})


class NSODE(_NSODE):
    name = "nsode"
    variant = "nsode"
    description = "NSODE: transformer trained on 256 equidistant clean points, beam search + R^2 selection"


class NSODEEps(_NSODE):
    name = "nsode-eps"
    variant = "nsode-eps"
    description = "NSODE-eps: trained on 128 random points with 1% multiplicative noise"


class NSODEEpsRefine(_NSODE):
    name = "nsode-eps+refine"
    variant = "nsode-eps"
    version = "2"
    beam = 256  # nsode.search.SEARCH_BEAM
    search = True
    description = ("NSODE-eps proposes skeletons (beam 256), a fitter decides: constants and y0 refitted, "
                   "unsafe fits rejected, information criterion")
