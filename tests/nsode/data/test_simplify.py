"""Simplification, the support filter, skeletons and the paper's constant-resampling rules."""
import contextlib
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import sympy

from nsode.data import config as cfg
from nsode.data import simplify
from nsode.data import tokens as tok
from odecore import processes
from odecore.expressions import Y

CONFIG = cfg.default()


def _resampled(text: str, n: int = 200, seed: int = 0):
    expr = simplify.canonical(tok.parse_infix(text))
    sets = simplify.resample_constants(expr, tok.skeleton(expr), np.random.default_rng(seed), CONFIG, n=n)
    return expr, sets


@pytest.mark.parametrize("text, role", [
    ("3*sin(y)", simplify.COEFFICIENT), ("-3*sin(y)", simplify.COEFFICIENT),
    ("2**y", simplify.BASE), ("y**3", simplify.EXPONENT), ("y**(-3.5)", simplify.EXPONENT),
    ("sin(y) + 4", simplify.TERM), ("sin(y) - 4", simplify.TERM),
])
def test_every_resampling_rule_is_enforced(text, role):
    expr, sets = _resampled(text)
    (original, found_role), = simplify.constant_slots(expr)
    assert found_role == role
    assert len(sets) == 200 and len({tuple(v) for _, v in sets}) == 200  # distinct constant sets
    for new, (value,) in sets:
        assert value != 0 and np.sign(value) == np.sign(original)  # no 0, sign kept
        if role in (simplify.COEFFICIENT, simplify.EXPONENT):
            assert abs(value) != 1  # no coefficient or exponent +-1
        if role == simplify.BASE:
            assert value != 1  # no base 1
        assert tok.skeleton(new) == tok.skeleton(expr)
        assert [v for v, _ in simplify.constant_slots(new)] == [value]


def test_no_division_by_plus_or_minus_one():
    # y / c is the coefficient 1/c in canonical form: c = +-1 would be a coefficient +-1
    expr, sets = _resampled("y/3")
    assert all(abs(v) != 1 for _, (v,) in sets)
    assert all(new != Y and new != -Y for new, _ in sets)


def test_resampled_sets_keep_the_skeleton_of_several_constants():
    expr, sets = _resampled("2.5*y**3 - 7*exp(-4*y) + 1.5", n=25)
    assert len(sets) == 25
    assert {tok.skeleton(new) for new, _ in sets} == {tok.skeleton(expr)}


def test_skeleton_ignores_constant_values_but_keeps_signs():
    assert tok.skeleton(tok.parse_infix("3*y + 2")) == tok.skeleton(tok.parse_infix("5.5*y + 7"))
    assert tok.skeleton(tok.parse_infix("3*y + 2")) != tok.skeleton(tok.parse_infix("3*y - 2"))


@pytest.mark.parametrize("prefix, reason", [
    (["sub", "y", "y"], "constant"),
    (["mul", 3, 2], "constant"),
    (["log", -3], "not real"),
    (["mul", 11.5, ["y"][0]], "constant outside grid"),
])
def test_support_filter_drops_what_the_distribution_cannot_express(prefix, reason):
    with pytest.raises(simplify.Rejected) as err:
        simplify.process(prefix, CONFIG)
    assert err.value.reason == reason


def test_functions_outside_the_support_are_rejected():
    with pytest.raises(simplify.Rejected) as err:
        simplify.check_support(sympy.Abs(Y) + sympy.tan(Y), CONFIG)
    assert err.value.reason == "unsupported"


def test_simplify_gives_up_after_its_time_limit():
    hard = sum(sympy.sin(Y + k) ** k for k in range(1, 9)) / (sympy.cos(Y) ** 7 + Y**5 - 3)
    with pytest.raises(simplify.Rejected) as err:
        simplify.simplify(hard, time_limit=0.05)
    assert err.value.reason == "timeout"


def test_a_sympy_crash_rejects_the_expression_instead_of_stopping_the_generator(monkeypatch):
    def broken(expr):  # sympy 1.14 raises TypeError("Invalid NaN comparison") on some random trees
        raise TypeError("Invalid NaN comparison")

    monkeypatch.setattr(simplify.sympy, "simplify", broken)
    monkeypatch.setattr(simplify, "_local", threading.local())  # a child forked with the patch in place
    with pytest.raises(simplify.Rejected) as err:
        simplify.simplify(sympy.exp(Y), time_limit=1.0)
    assert err.value.reason == "simplify error" and "NaN comparison" in str(err.value)


def test_simplify_stops_a_call_stuck_in_c_code(monkeypatch):
    # sympy can spend minutes in one C call (a modular power on a huge integer while factoring);
    # no thread-based timeout interrupts that, killing the child does
    monkeypatch.setattr(simplify.sympy, "simplify", lambda expr: sum(range(10**12)))
    monkeypatch.setattr(simplify, "_local", threading.local())
    with pytest.raises(simplify.Rejected) as err:
        simplify.simplify(sympy.exp(Y), time_limit=0.2)
    assert err.value.reason == "timeout"
    monkeypatch.undo()
    assert simplify.simplify(sympy.sin(Y) ** 2 + sympy.cos(Y) ** 2 + Y, time_limit=2.0) == Y + 1


def test_the_simplifier_child_leaves_ctrl_c_to_its_parent(monkeypatch):
    monkeypatch.setattr(simplify, "_local", threading.local())
    assert simplify.simplify(Y + Y, time_limit=2.0) == 2 * Y
    worker = simplify._local.simplifier
    os.kill(worker.process.pid, signal.SIGINT)  # a terminal's Ctrl-C reaches the process group
    time.sleep(0.3)
    assert worker.alive and simplify.simplify(Y * Y, time_limit=2.0) == Y**2  # no traceback, still serving
    worker.close()


def test_the_simplifier_child_dies_with_a_parent_killed_outright(process_gone):
    # SIGTERM or SIGKILL stops nobody; an orphaned simplifier would wait on its pipe for good
    code = ("from nsode.data import simplify; from odecore.expressions import Y; import time; "
            "simplify.simplify(Y + Y, time_limit=5.0); print(simplify._local.simplifier.process.pid, flush=True); "
            "time.sleep(60)")
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    parent.kill()
    parent.wait()
    try:
        assert process_gone(child, 10)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)


@pytest.mark.parametrize("c", [10, -10])
def test_constants_at_the_grid_ends_are_in_the_support(c):
    assert tok.constants(simplify.check_support(c * Y + sympy.sin(Y), CONFIG)) == [abs(float(c))]


def test_a_negative_power_needs_pow_not_div_in_the_configuration():
    assert "div" in simplify.check_support(Y**-2 + Y, CONFIG.replace(binary_ops={"add": 1, "mul": 1, "pow": 1}))


def test_an_operator_of_weight_zero_is_outside_the_support():
    with pytest.raises(simplify.Rejected, match="unsupported"):
        simplify.check_support(sympy.cos(Y) + Y, CONFIG.replace(unary_ops={"sin": 1, "cos": 0}))


def test_a_complex_constant_is_refused_not_folded_to_its_real_part():
    with pytest.raises(simplify.Rejected, match="not real"):
        simplify.canonical(sympy.sqrt(-2) * Y + sympy.sin(Y))


def test_a_reciprocal_square_root_is_structural_not_a_constant_exponent():
    expr = simplify.canonical(1 / sympy.sqrt(Y) + Y)
    assert simplify.constant_slots(expr) == []
    assert "sqrt" in tok.encode(expr) and "pow" not in tok.encode(expr)


CONFIG = cfg.default()


def test_resampled_constants_that_would_change_the_skeleton_are_skipped():
    """sqrt(y**c) + y with c = 2 or 4 becomes Abs(y) + y or y**2 + y: such sets are dropped, never returned."""
    expr = simplify.canonical(tok.parse_infix("sqrt(y**3) + y"))
    sets = simplify.resample_constants(expr, tok.skeleton(expr), np.random.default_rng(0), CONFIG, n=50)
    assert len(sets) == 50
    assert all(not new.has(sympy.Abs) and tok.skeleton(new) == "sqrt(y**c) + y" for new, _ in sets)
    assert all(v not in (2.0, 4.0, 6.0, 8.0, 10.0) for _, (v,) in sets)


def test_an_exponent_of_one_half_is_never_drawn():
    """y**0.5 would print and read back as sqrt(y): the exponent rule refuses +-0.5 (only for exponents)."""
    assert not simplify.rule_ok(0.5, 3.0, simplify.EXPONENT)
    assert not simplify.rule_ok(-0.5, -2.5, simplify.EXPONENT)
    assert simplify.rule_ok(0.5, 3.0, simplify.COEFFICIENT) and simplify.rule_ok(0.5, 3.0, simplify.BASE)


def test_the_simplify_limit_counts_cpu_time_not_waiting(monkeypatch):
    """A simplifier that waits (no CPU) past the limit is not timed out: whether an expression is kept must
    not depend on how busy the machine is. Only the wall-clock net (WALL_FACTOR x limit) would stop it."""
    def waits(expr):
        time.sleep(0.6)
        return expr

    monkeypatch.setattr(processes, "WALL_FACTOR", 50)
    monkeypatch.setattr(simplify.sympy, "simplify", waits)
    monkeypatch.setattr(simplify, "_local", threading.local())  # a child forked with the patch in place
    try:
        assert simplify.simplify(Y + 1, time_limit=0.1) == Y + 1
    finally:
        worker = getattr(simplify._local, "simplifier", None)
        if worker is not None:
            worker.close()


def test_without_children_simplify_runs_in_the_thread_under_the_same_cpu_limit(monkeypatch):
    """Where children are not allowed (a daemonic Dask worker), simplify runs in this thread: it simplifies,
    turns a sympy crash into Rejected('simplify error'), and stops a busy call at its CPU limit."""
    monkeypatch.setattr(simplify, "_may_fork", lambda: False)
    monkeypatch.setattr(simplify, "_local", threading.local())
    assert simplify.simplify(sympy.sin(Y) ** 2 + sympy.cos(Y) ** 2 + Y, time_limit=2.0) == Y + 1
    assert getattr(simplify._local, "simplifier", None) is None  # no child was started

    def broken(expr):
        raise TypeError("Invalid NaN comparison")

    monkeypatch.setattr(simplify.sympy, "simplify", broken)
    with pytest.raises(simplify.Rejected) as err:
        simplify.simplify(Y, time_limit=1.0)
    assert err.value.reason == "simplify error"

    def busy(expr):
        while True:
            pass

    monkeypatch.setattr(simplify.sympy, "simplify", busy)
    monkeypatch.setattr(simplify, "WALL_FACTOR", 1000)  # only the CPU limit can stop it
    cpu = time.thread_time()
    with pytest.raises(simplify.Rejected) as err:
        simplify.simplify(Y, time_limit=0.1)
    assert err.value.reason == "timeout"
    assert time.thread_time() - cpu < 0.6


def test_a_difference_needs_add_not_sub_in_the_configuration():
    """sympy writes a - b as a + (-1)*b: with `sub` of weight 0 (not configured) but `add` configured, a
    difference is inside the support and is written with `sub`."""
    config = CONFIG.replace(binary_ops={"add": 1, "mul": 1, "pow": 1})
    assert "sub" in simplify.check_support(sympy.sin(Y) - 3 * Y, config)


def test_folding_is_repeated_until_no_constant_subexpression_is_left():
    """Folding -3 + cos(1)**2 + sin(1)**2 to -2 makes sympy rewrite sqrt(-2*y) as sqrt(2)*sqrt(-y): a new
    constant subexpression, folded by the next pass, so that the constant is one token, not `sqrt c`."""
    expr = simplify.canonical(sympy.sqrt(Y * (sympy.sin(1) ** 2 + sympy.cos(1) ** 2 - 3)) + Y)
    assert tok.skeleton(expr) == "c*sqrt(-y) + y"
    assert tok.constants(tok.encode(expr)) == [pytest.approx(2**0.5, abs=1e-15)]
