"""PySR (Cranmer 2023) on smoothed finite differences, with the paper's settings: 40
iterations, binary + - * / ^, unary cos exp sin neg log sqrt. PySR runs on Julia; where Julia
is missing (these machines) the method is listed as unavailable with that reason."""
import contextlib
import io

from baselines.fd import FiniteDifferenceMethod
from baselines.libraries import PySRAdapter
from core import protocol


class PySR(FiniteDifferenceMethod):
    name = "pysr"
    version = "1"
    requires = ("pysr", "pynumdiff")
    time_limit = protocol.LONG_SEARCH_TIME_LIMIT
    description = "PySR (multi-population evolutionary SR in Julia) on smoothed finite differences"
    grid = {"niterations": [40]}

    def unavailable_reason(self):
        try:  # importing starts Julia, which is what can fail; juliapkg's chatter is kept off stdout
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                import pysr  # noqa: F401
        except BaseException as err:  # juliacall raises various errors (and may exit) without Julia
            first = (str(err).strip().splitlines() or [""])[0][:120]
            return f"PySR needs Julia, which is not available here (import pysr: {type(err).__name__}: {first})"
        return super().unavailable_reason()

    def make_regressor(self, seed, time_limit=None):
        return PySRAdapter(random_state=seed)
