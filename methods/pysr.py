"""PySR (Cranmer 2023) on smoothed finite differences, with the paper's settings: 40
iterations, binary + - * / ^, unary cos exp sin neg log sqrt. PySR runs on Julia; where Julia
is missing (these machines) the method is listed as unavailable with that reason, without
starting PySR's own download of Julia."""
import contextlib
import io

from odebaselines.fd import FiniteDifferenceMethod
from odebaselines.libraries import PySRAdapter
from odecore import protocol


class PySR(FiniteDifferenceMethod):
    name = "pysr"
    version = "1"
    requires = ("pysr", "pynumdiff")
    time_limit = protocol.LONG_SEARCH_TIME_LIMIT
    description = "PySR (multi-population evolutionary SR in Julia) on smoothed finite differences"
    grid = {"niterations": [40]}

    def unavailable_reason(self):
        """Asked before any import of pysr: importing it installs Julia and its packages when they
        are missing (a download of minutes), which listing the methods must never start."""
        try:
            import juliapkg  # PySR's installer of Julia (a dependency of pysr)

            installed = juliapkg.resolve(dry_run=True)  # False: Julia or PySR's packages are missing
        except Exception as err:
            return f"cannot check for Julia (juliapkg: {type(err).__name__}: {str(err)[:120]})"
        if not installed:
            return ("PySR needs Julia and its Julia packages, not installed here (online, run "
                    "`python -c 'import pysr'` once: PySR installs them)")
        try:  # Julia is installed: starting it is what can still fail; juliapkg's chatter is kept off stdout
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                import pysr  # noqa: F401
        except BaseException as err:  # juliacall raises various errors (and may exit) when Julia fails
            first = (str(err).strip().splitlines() or [""])[0][:120]
            return f"PySR cannot start Julia here (import pysr: {type(err).__name__}: {first})"
        return super().unavailable_reason()

    def make_regressor(self, seed, time_limit=None):
        return PySRAdapter(random_state=seed)
