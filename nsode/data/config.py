"""The parameters of the ODE distribution and of its solutions: one frozen object, one YAML file.

`default.yaml` next to this module holds the paper's values (K = 5, operator weights 0.2 each,
p_sym = 0.5, constants, N_const = N_iv = 25); the keys shared with the evaluation protocol
(T = 2, T_extra = 4, 1024 grid points, LSODA tolerances 1e-9, FD tolerance 1) come from
`odecore.protocol`, their single source. A `--config` file
overrides any subset of its keys, so other distributions can be generated; `family: science`
selects the textbook family of `science.py` and its `science_*` keys.
"""
from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

import numpy as np
import yaml

from odecore import protocol
from odecore.shipped import by_name, no_such_config
from nsode import CHECKPOINTS

DEFAULT_FILE = Path(__file__).with_name("default.yaml")
BINARY_OPS = ("add", "sub", "mul", "div", "pow")
UNARY_OPS = ("sin", "cos", "exp", "sqrt", "log")
FAMILIES = ("paper", "science")
SCIENCE_TERMS = ("poly", "constant", "hill", "saturation", "exp", "log", "trig", "logistic")
# keys of the science family (nsode/data/science.py); folders written before it lack them
SCIENCE_KEYS = ("science_terms", "science_n_terms", "science_max_degree", "science_rate_range",
                "science_scale_range", "science_shape_range", "science_y0_range")


class ConfigError(ValueError):
    """A configuration file or value that cannot be used; the message names the key."""


@dataclass(frozen=True)
class Config:
    max_ops: int
    binary_ops: Mapping[str, float]
    unary_ops: Mapping[str, float]
    p_sym: float
    p_int: float
    int_range: tuple[int, int]
    real_range: tuple[float, float]
    n_const: int
    n_iv: int
    y0_range: tuple[float, float]
    t_max: float
    t_extra: float
    grid: int
    rtol: float
    atol: float
    fd_tolerance: float
    simplify_time_limit: float
    solve_time_limit: float
    max_rhs_calls: int
    candidates_per_block: int
    skeletons_per_shard: int
    family: str  # "paper" (uniform random trees, trees.py) or "science" (textbook terms, science.py)
    science_terms: Mapping[str, float]
    science_n_terms: tuple[float, ...]
    science_max_degree: int
    science_rate_range: tuple[float, float]
    science_scale_range: tuple[float, float]
    science_shape_range: tuple[float, float]
    science_y0_range: tuple[float, float]

    def __post_init__(self):
        _validate(self)

    def __reduce__(self):  # MappingProxyType does not pickle; workers get the plain values
        return from_dict, (self.to_dict(),)

    # the time grids every module uses
    def t_train(self) -> np.ndarray:
        return np.linspace(0.0, self.t_max, self.grid)

    def t_extrapolate(self) -> np.ndarray:
        return np.linspace(self.t_max, self.t_extra, self.grid)

    def to_dict(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}  # asdict cannot copy a mappingproxy
        out["binary_ops"], out["unary_ops"] = dict(self.binary_ops), dict(self.unary_ops)
        out["int_range"], out["real_range"] = list(self.int_range), list(self.real_range)
        out["y0_range"] = list(self.y0_range)
        out["science_terms"], out["science_n_terms"] = dict(self.science_terms), list(self.science_n_terms)
        for key in ("science_rate_range", "science_scale_range", "science_shape_range", "science_y0_range"):
            out[key] = list(getattr(self, key))
        return out

    def family_keys(self) -> dict:
        """`to_dict` without the keys of families other than this one's: what a folder records, so
        that a paper folder's config.json is the same as before the science family existed."""
        out = self.to_dict()
        if self.family == "paper":
            for key in ("family", *SCIENCE_KEYS):
                del out[key]
        return out

    def to_json(self) -> str:
        """The keys a folder records (`family_keys`), as JSON."""
        return json.dumps(self.family_keys(), sort_keys=True)

    def replace(self, **changes) -> "Config":
        return from_dict({**self.to_dict(), **changes})


def _read_yaml(path: Path) -> dict:
    try:
        data = yaml.safe_load(Path(path).read_text())
    except OSError as err:
        raise ConfigError(f"{path}: cannot read the config file ({err.strerror})") from None
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: not valid YAML ({str(err).splitlines()[0]})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the config file must be a mapping of keys to values")
    return data


def _base() -> dict:
    """The protocol's shared keys (T, grid, tolerances) under `default.yaml`'s own keys."""
    return {**protocol.GENERATOR_DEFAULTS, **_read_yaml(DEFAULT_FILE)}


def default() -> Config:
    return from_dict(_base())


def load(path: str | Path | None = None) -> Config:
    """The default configuration, with the keys of `path` (a YAML file, or a shipped one's name:
    `data_cpu` for nsode/checkpoints/data_cpu.yaml) overriding it."""
    base = _base()
    if path is None:
        return from_dict(base)
    path = by_name(path, CHECKPOINTS, ".yaml")
    if not path.exists():
        raise ConfigError(no_such_config(path, CHECKPOINTS))
    override = _read_yaml(Path(path))
    unknown = sorted(set(override) - set(base))
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) {', '.join(unknown)}; known keys are in {DEFAULT_FILE}")
    return from_dict({**base, **override})


def _number(data: dict, key: str, kind):
    """data[key] as `kind` (int or float); ConfigError naming the key when it is not one."""
    value = data[key]
    try:
        if kind is int and (isinstance(value, bool) or float(value) != int(float(value))):
            raise ValueError(value)  # 10.5 read as 10 would be a silent change of the setting
        if not math.isfinite(float(value)):
            raise ValueError(value)  # .inf passes every order check and fails deep in a solve
        return kind(value)
    except (TypeError, ValueError, OverflowError):
        raise ConfigError(f"{key}: {data[key]!r} is not {'a whole number' if kind is int else 'a finite number'}") from None


def from_dict(data: dict) -> Config:
    if any(k not in data for k in ("family", *SCIENCE_KEYS)):  # a folder from before the science family
        defaults = _read_yaml(DEFAULT_FILE)
        data = {**{k: defaults[k] for k in ("family", *SCIENCE_KEYS)}, **data}
    names = [f.name for f in dataclasses.fields(Config)]
    missing = [n for n in names if n not in data]
    if missing:
        raise ConfigError(f"missing config key(s): {', '.join(missing)}")
    unknown = sorted(set(data) - set(names))
    if unknown:
        raise ConfigError(f"unknown config key(s): {', '.join(unknown)}")
    try:
        return Config(
            max_ops=_number(data, "max_ops", int),
            binary_ops=_weights(data["binary_ops"], BINARY_OPS, "binary_ops"),
            unary_ops=_weights(data["unary_ops"], UNARY_OPS, "unary_ops"),
            p_sym=_number(data, "p_sym", float), p_int=_number(data, "p_int", float),
            int_range=_pair(data["int_range"], int, "int_range"),
            real_range=_pair(data["real_range"], float, "real_range"),
            n_const=_number(data, "n_const", int), n_iv=_number(data, "n_iv", int),
            y0_range=_pair(data["y0_range"], float, "y0_range"),
            t_max=_number(data, "t_max", float), t_extra=_number(data, "t_extra", float), grid=_number(data, "grid", int),
            rtol=_number(data, "rtol", float), atol=_number(data, "atol", float), fd_tolerance=_number(data, "fd_tolerance", float),
            simplify_time_limit=_number(data, "simplify_time_limit", float),
            solve_time_limit=_number(data, "solve_time_limit", float), max_rhs_calls=_number(data, "max_rhs_calls", int),
            candidates_per_block=_number(data, "candidates_per_block", int),
            skeletons_per_shard=_number(data, "skeletons_per_shard", int),
            family=str(data["family"]),
            science_terms=_weights(data["science_terms"], SCIENCE_TERMS, "science_terms", normalise=False),
            science_n_terms=_n_terms(data["science_n_terms"]),
            science_max_degree=_number(data, "science_max_degree", int),
            science_rate_range=_pair(data["science_rate_range"], float, "science_rate_range"),
            science_scale_range=_pair(data["science_scale_range"], float, "science_scale_range"),
            science_shape_range=_pair(data["science_shape_range"], float, "science_shape_range"),
            science_y0_range=_pair(data["science_y0_range"], float, "science_y0_range"),
        )
    except (TypeError, ValueError) as err:
        if isinstance(err, ConfigError):
            raise
        raise ConfigError(f"bad config value: {err}") from None


def _weights(value, allowed: tuple[str, ...], key: str, normalise: bool = True) -> Mapping[str, float]:
    if not isinstance(value, dict):
        raise ConfigError(f"{key} must be a mapping of operator name to weight")
    unknown = sorted(set(value) - set(allowed))
    if unknown:
        raise ConfigError(f"{key}: unknown operator(s) {', '.join(unknown)} (allowed: {', '.join(allowed)})")
    weights = {k: float(v) for k, v in value.items() if float(v) > 0}
    if any(not 0 <= float(v) < math.inf for v in value.values()) or not weights:
        raise ConfigError(f"{key}: weights must be finite and >= 0, with at least one positive")
    total = sum(weights.values()) if normalise else 1.0
    # canonical order (the vocabulary's), so the same weights give the same samples
    return MappingProxyType({k: weights[k] / total for k in allowed if k in weights})


def _n_terms(value) -> tuple[float, ...]:
    if not isinstance(value, (list, tuple)) or len(value) != 3 or any(not 0 <= float(v) < math.inf for v in value) \
            or not sum(float(v) for v in value) > 0:
        raise ConfigError("science_n_terms must be three weights >= 0 (of 1, 2, 3 terms), one positive")
    return tuple(float(v) for v in value)  # as given: normalising again on every round trip would drift


def _pair(value, kind, key: str) -> tuple:
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise ConfigError(f"{key} must be a pair [low, high]")
    try:
        if kind is int and any(isinstance(v, bool) or float(v) != int(float(v)) for v in value):
            raise ValueError(value)  # [-10.7, 10.9] read as (-10, 10) would be a silent change, as in _number
        lo, hi = kind(value[0]), kind(value[1])
    except (TypeError, ValueError, OverflowError):  # int(.inf) overflows
        raise ConfigError(f"{key}: {list(value)!r} is not a pair of {'whole ' if kind is int else ''}numbers") from None
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ConfigError(f"{key}: {list(value)!r} must be finite")
    if not lo < hi:
        raise ConfigError(f"{key}: low must be below high (got {lo}, {hi})")
    return lo, hi


def _validate(c: Config) -> None:
    checks = [
        (c.max_ops >= 1, "max_ops must be >= 1"),
        (0 < c.p_sym <= 1 and 0 <= c.p_int <= 1, "p_sym must be in (0, 1] and p_int in [0, 1]"),
        (c.n_const >= 1 and c.n_iv >= 1, "n_const and n_iv must be >= 1"),
        (0 < c.t_max < c.t_extra, "need 0 < t_max < t_extra"),
        (c.grid >= 16, "grid must have at least 16 points (the FD stencil is 9 wide)"),
        (c.rtol > 0 and c.atol > 0 and c.fd_tolerance > 0, "tolerances must be positive"),
        (c.simplify_time_limit > 0 and c.solve_time_limit > 0 and c.max_rhs_calls > 0, "limits must be positive"),
        (c.candidates_per_block >= 1 and c.skeletons_per_shard >= 1, "block and shard sizes must be >= 1"),
        (c.int_range != (0, 0), "int_range must contain a non-zero integer"),
        (max(map(abs, c.int_range)) <= 2**53, "int_range must lie within +-2**53 (larger integers are not exact as numbers)"),
        (c.family in FAMILIES, f"family must be one of {', '.join(FAMILIES)}"),
        (c.science_max_degree >= 2, "science_max_degree must be >= 2"),
        (min(*c.science_rate_range, *c.science_scale_range, *c.science_shape_range, *c.science_y0_range) > 0,
         "the science_*_range values must be positive (they are magnitudes)"),
    ]
    for ok, message in checks:
        if not ok:
            raise ConfigError(message)
