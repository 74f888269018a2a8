"""The paper's five claims about its results, each checked against stored rows by an explicit rule.

Every verdict is computed from medians under the report's failure policy (a failed task counts as
R^2 = -inf; its complexity is left out unless it wrote a law that diverged), so it can be
recomputed from the stored rows alone.
Verdicts: "holds", "partly", "does not hold", or "not measured" when the rows lack what the rule
needs (a method, a dataset, a second noise level or sample size). The thresholds are the
constants below; the rules are stated once, in RULES, and printed in the reproduction report.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from bench import report

EQUAL_R2 = 0.05  # claim 1: "essentially equal" median R^2 differ by at most this
SPEEDUP_HOLDS, SPEEDUP_PARTLY = 5.0, 2.0  # claim 2: "about ten times" = at least 5x; 2x to 5x is partly
REASONABLE_R2 = 0.5  # claim 3: a "reasonable" median extrapolation R^2
TRAINING_NOISE = 0.01  # claim 3: NSODE-eps's training noise, the paper's "up to sigma = 0.01"
N_DROP = 0.01  # claim 4: a method degrades when its median R^2 at the smallest n is this much below the largest n's
COMPLEXITY_SHARE = 0.25  # claim 5: "close" = within 25 % of the truth's median complexity

RULES = {
    "1": f"On the main dataset (interpolation, pooled over n), at every noise level |median R^2 of NSODE-eps "
         f"- that of ProGED| <= {EQUAL_R2} (equal), and at the largest noise level both medians exceed every "
         f"FD method's (robust). Both: holds; one: partly; neither: does not hold.",
    "2": f"Ratio of ProGED's median fit time to NSODE-eps's over all their stored tasks: >= {SPEEDUP_HOLDS:g}: "
         f"holds; >= {SPEEDUP_PARTLY:g}: partly; else does not hold.",
    "3": f"On Large (extrapolation, the figure's n), at each noise level <= {TRAINING_NOISE:g}, NSODE-eps is "
         f"reasonable when its median R^2 >= {REASONABLE_R2}; a rival is any other method except the oracles "
         f"and NSODE-eps variants that is reasonable at one of these levels. Reasonable at every level and "
         f"no rival: holds; reasonable at no level: does not hold; otherwise partly.",
    "4": f"Median interpolation R^2 per method pooled over datasets and noise, at the smallest and the largest n: "
         f"a method degrades when the smallest n's median is more than {N_DROP} below the largest's. NSODE-eps "
         f"and ProGED do not degrade and more than half of the FD methods do: holds; one of the two: partly; "
         f"neither: does not hold.",
    "5": f"On the main dataset (pooled over noise and n), the median complexity of NSODE-eps's and of ProGED's "
         f"predictions is within {COMPLEXITY_SHARE:.0%} of the median complexity of the true f on the same "
         f"tasks. Both: holds; one: partly; neither: does not hold.",
}
CLAIMS = {
    "1": "NSODE-eps and ProGED achieve essentially equal R^2 and are more robust to noise than the FD methods.",
    "2": "NSODE(-eps) is about one order of magnitude faster than ProGED.",
    "3": "NSODE-eps is the only method with reasonable extrapolation on Large for noise up to sigma = 0.01.",
    "4": "FD methods degrade as the number of observations falls; NSODE-eps and ProGED do not.",
    "5": "The median complexities of NSODE(-eps) and ProGED agree well with the ground truth's.",
}


@dataclass(frozen=True)
class Roles:
    """Who plays which part in the claims, and where they are checked."""

    nsode: str = "nsode-eps"
    proged: str = "proged"
    fd_methods: tuple[str, ...] = ()
    oracles: tuple[str, ...] = ("truth",)  # methods that see the truth (bench.method.Oracle): never rivals
    main_dataset: str = "classic"
    large: str = "large"
    extrap_n: int = 128


@dataclass(frozen=True)
class Verdict:
    key: str
    claim: str
    measured: str
    verdict: str
    why: str
    rule: str


def _verdict(key: str, measured: str, verdict: str, why: str) -> Verdict:
    return Verdict(key, CLAIMS[key], measured, verdict, why, RULES[key])


def _missing(key: str, why: str) -> Verdict:
    return _verdict(key, "-", "not measured", why)


def _both(first: bool, second: bool) -> str:
    return "holds" if first and second else "partly" if first or second else "does not hold"


def _fmt(value: float) -> str:
    return f"{value:.3g}" if np.isfinite(value) else ("-inf" if value < 0 else "nan")


def _median(rows: pd.DataFrame, column: str) -> float:
    values = rows[column].dropna()
    return float(np.median(values)) if len(values) else float("nan")


def _main(rows: pd.DataFrame, roles: Roles) -> tuple[pd.DataFrame, str]:
    """The main dataset's rows, or all rows (named "all datasets") when it was not run."""
    if (rows["dataset"] == roles.main_dataset).any():
        return rows[rows["dataset"] == roles.main_dataset], roles.main_dataset
    return rows, "all datasets"


def _lacking(rows: pd.DataFrame, *methods: str) -> list[str]:
    return [m for m in methods if not (rows["method"] == m).any()]


def equal_and_robust(rows: pd.DataFrame, roles: Roles) -> Verdict:
    """Claim 1 (paper Section 5, Figure 3a)."""
    data, where = _main(rows, roles)
    lacking = _lacking(data, roles.nsode, roles.proged)
    levels = sorted(data["noise"].unique())
    top_rows = data[data["noise"] == levels[-1]]  # FD methods are compared there, so only those that ran there
    fds = [m for m in roles.fd_methods if (top_rows["method"] == m).any()]
    if lacking or not fds or levels[-1] <= 0:
        missing = (lacking + ([] if fds else ["FD methods at the largest noise level"])
                   + ([] if levels[-1] > 0 else ["noise > 0"]))
        return _missing("1", f"needs {roles.nsode}, {roles.proged}, an FD method and a noise level > 0 on "
                        f"{where}; lacking: {', '.join(missing)}")
    by = data.groupby(["method", "noise"])["r2_interp"].median()
    pairs = [(s, by.get((roles.nsode, s), np.nan), by.get((roles.proged, s), np.nan)) for s in levels]
    gaps = [0.0 if a == b else abs(a - b) for _, a, b in pairs]
    equal = all(g <= EQUAL_R2 for g in gaps)
    top = levels[-1]
    best_fd = max(fds, key=lambda m: by.get((m, top), -np.inf))
    best_fd_r2 = by.get((best_fd, top), -np.inf)
    robust = min(pairs[-1][1], pairs[-1][2]) > best_fd_r2
    measured = (f"{where}, median R^2 interp. {roles.nsode} / {roles.proged} at sigma "
                + "; ".join(f"{s:g}: {_fmt(a)} / {_fmt(b)}" for s, a, b in pairs)
                + f". Best FD method at sigma {top:g}: {best_fd} {_fmt(best_fd_r2)}")
    why = (f"largest gap {_fmt(max(gaps))} {'<=' if equal else '>'} {EQUAL_R2}; at sigma {top:g} "
           f"{'both beat' if robust else 'not both beat'} the best FD method ({best_fd})")
    return _verdict("1", measured, _both(equal, robust), why)


def speed(rows: pd.DataFrame, roles: Roles) -> Verdict:
    """Claim 2 (Section 5, Figure 3c)."""
    lacking = _lacking(rows, roles.nsode, roles.proged)
    if lacking:
        return _missing("2", f"lacking: {', '.join(lacking)}")
    fast = _median(rows[rows["method"] == roles.nsode], "fit_time")
    slow = _median(rows[rows["method"] == roles.proged], "fit_time")
    unmeasured = [m for m, median in ((roles.nsode, fast), (roles.proged, slow)) if np.isnan(median)]
    if unmeasured:  # a missing median is no speed-up (nor a slow-down)
        return _missing("2", f"no fit times for {', '.join(unmeasured)}")
    ratio = slow / fast if fast > 0 else float("inf")
    verdict = "holds" if ratio >= SPEEDUP_HOLDS else "partly" if ratio >= SPEEDUP_PARTLY else "does not hold"
    measured = f"median fit time {roles.nsode} {_fmt(fast)} s, {roles.proged} {_fmt(slow)} s: {_fmt(ratio)}x"
    return _verdict("2", measured, verdict, f"{roles.proged} takes {_fmt(ratio)} times as long per task")


def large_extrapolation(rows: pd.DataFrame, roles: Roles) -> Verdict:
    """Claim 3 (Section 5, Figure 5)."""
    data = rows[(rows["dataset"] == roles.large) & (rows["noise"] <= TRAINING_NOISE + 1e-12)]
    if (data["n"] == roles.extrap_n).any():
        data = data[data["n"] == roles.extrap_n]
    if _lacking(data, roles.nsode):
        return _missing("3", f"needs {roles.nsode} on {roles.large} at noise <= {TRAINING_NOISE:g}")
    by = data.groupby(["method", "noise"])["r2_extrap"].median()
    levels = sorted(data["noise"].unique())
    ok = [s for s in levels if by.get((roles.nsode, s), -np.inf) >= REASONABLE_R2]
    others = [m for m in sorted(data["method"].unique()) if m not in roles.oracles and not m.startswith(roles.nsode)]
    rivals = {m: [s for s in levels if by.get((m, s), -np.inf) >= REASONABLE_R2] for m in others}
    rivals = {m: found for m, found in rivals.items() if found}  # "the only method": at any level, not all
    verdict = "does not hold" if not ok else "holds" if len(ok) == len(levels) and not rivals else "partly"
    best = {s: max(others, key=lambda m: by.get((m, s), -np.inf)) if others else None for s in levels}
    measured = f"{roles.large}, n {', '.join(map(str, sorted(data['n'].unique())))}, median R^2 extrap. " + "; ".join(
        f"sigma {s:g}: {roles.nsode} {_fmt(by.get((roles.nsode, s), np.nan))}"
        + (f", best other {best[s]} {_fmt(by.get((best[s], s), np.nan))}" if best[s] else "") for s in levels)
    named = "; ".join(f"{m} at sigma " + ", ".join(f"{s:g}" for s in found) for m, found in rivals.items())
    why = (f"{roles.nsode} reasonable (>= {REASONABLE_R2}) at {len(ok)} of {len(levels)} levels; "
           f"other methods reasonable: {named or 'none'}")
    return _verdict("3", measured, verdict, why)


def sample_size(rows: pd.DataFrame, roles: Roles) -> Verdict:
    """Claim 4 (appendix, full results)."""
    sizes = sorted(rows["n"].unique())

    def at_both_ends(method: str) -> bool:
        return bool(sizes) and {sizes[0], sizes[-1]} <= set(rows.loc[rows["method"] == method, "n"])

    lacking = _lacking(rows, roles.nsode, roles.proged)
    lacking += [f"{m} at n {sizes[0]} and {sizes[-1]}" for m in (roles.nsode, roles.proged)  # not -inf there
                if m not in lacking and len(sizes) > 1 and not at_both_ends(m)]
    fds = [m for m in roles.fd_methods if at_both_ends(m)]  # an FD method run at one n cannot degrade: not counted
    if len(sizes) < 2 or lacking or not fds:
        return _missing("4", f"needs two sample sizes, {roles.nsode}, {roles.proged} and an FD method; lacking: "
                        + ", ".join(lacking + (["a second n"] if len(sizes) < 2 else []) + ([] if fds else ["FD methods"])))
    by = rows.groupby(["method", "n"])["r2_interp"].median()
    small, large = sizes[0], sizes[-1]

    def degrades(method: str) -> bool:
        low, high = by.get((method, small), -np.inf), by.get((method, large), -np.inf)
        return low != high and low < high - N_DROP

    steady = [m for m in (roles.nsode, roles.proged) if not degrades(m)]
    falling = [m for m in fds if degrades(m)]
    verdict = _both(len(steady) == 2, len(falling) > len(fds) / 2)
    measured = f"median R^2 interp. at n {small} / n {large}: " + "; ".join(
        f"{m} {_fmt(by.get((m, small), np.nan))} / {_fmt(by.get((m, large), np.nan))}" for m in [roles.nsode, roles.proged] + fds)
    worse = [m for m in (roles.nsode, roles.proged) if m not in steady]
    why = (f"{len(falling)} of {len(fds)} FD methods degrade ({', '.join(falling) or 'none'}); "
           f"of {roles.nsode} and {roles.proged} degrading: {', '.join(worse) or 'none'}")
    return _verdict("4", measured, verdict, why)


def complexity(rows: pd.DataFrame, roles: Roles) -> Verdict:
    """Claim 5 (Section 5, Figure 3b)."""
    data, where = _main(rows, roles)
    lacking = _lacking(data, roles.nsode, roles.proged)
    if lacking:
        return _missing("5", f"lacking on {where}: {', '.join(lacking)}")
    truth = _median(data[data["method"].isin([roles.nsode, roles.proged])], "truth_complexity")
    found = {m: _median(data[data["method"] == m], "complexity") for m in (roles.nsode, roles.proged)}
    close = {m: abs(c - truth) <= COMPLEXITY_SHARE * truth for m, c in found.items()}
    measured = (f"{where}, median complexity: truth {_fmt(truth)}, "
                + ", ".join(f"{m} {_fmt(c)}" for m, c in found.items()))
    why = (f"off by {', '.join(f'{m} {_fmt(abs(c - truth))}' for m, c in found.items())}; "
           f"allowed {_fmt(COMPLEXITY_SHARE * truth)}")
    return _verdict("5", measured, _both(*close.values()), why)


CHECKS = (equal_and_robust, speed, large_extrapolation, sample_size, complexity)


def check(rows: pd.DataFrame, roles: Roles = Roles()) -> list[Verdict]:
    """The verdict on every claim, from stored result rows (the report's failure policy applied here)."""
    rows = report.with_failure_policy(rows)
    rows["truth_complexity"] = pd.to_numeric(rows["truth_complexity"], errors="coerce")
    return [claim(rows, roles) for claim in CHECKS]


def to_frame(verdicts: list[Verdict]) -> pd.DataFrame:
    return pd.DataFrame([v.__dict__ for v in verdicts])
