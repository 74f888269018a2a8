"""The skeleton of a law (odecore/skeletons.py): its form, whatever its constants."""
import pytest

from odecore.expressions import parse
from odecore import skeletons
from odecore.skeletons import MAX_EXPANDED_TERMS, expanded_terms, same_skeleton, skeleton


@pytest.mark.parametrize("prediction, truth", [
    ("2.0*y - 0.8*y*log(y)", "0.8*y*log(12/y)"),  # Gompertz expanded
    ("1.313*y - 0.1929*y**2", "1.3*y*(1 - y/7)"),  # the logistic
    ("-1.346 + 1.894*y - 0.4372*y**2", "-0.7 + 1.27*y*(1 - 0.2275*y)"),  # harvested
    ("3*y**2.0", "y**2"), ("3*y**0.5", "sqrt(y)"), ("3*sqrt(y)", "(2*y)**0.5"), ("2/y", "y**-1.0"),
    ("4*exp(-y)", "exp(2 - y)"), ("10 - 0.29*y**1.41", "9.81 - 0.3*y**1.4"),
    ("2*y**4/(y**4 + 0.1)", "y**4/(0.003 + y**4)"),
])
def test_laws_that_differ_only_in_their_constants_share_a_skeleton(prediction, truth):
    assert same_skeleton(parse(prediction), parse(truth))


@pytest.mark.parametrize("prediction, truth", [
    ("-0.5*y - 1e-7", "-0.5*y"),  # a spare term
    ("sin(2*y)", "sin(y)"),  # a scale that fixes the unit of y
    ("y**2.03", "y**2"),  # a free exponent is not the integer one
    ("1.5", "0"),  # y' = c is not y' = 0
    ("(y + 1)**40", "y"),  # far larger: answered without expanding it
])
def test_other_forms_do_not(prediction, truth):
    assert not same_skeleton(parse(prediction), parse(truth))


def test_a_skeleton_lists_each_term_form_once_with_the_constant_term_as_1():
    assert skeleton(parse("3 + 2*y + 5*y")) == ("1", "Symbol('y', real=True)")
    assert skeleton(parse("0")) == ()


@pytest.mark.parametrize("law, terms", [
    ("y*(1 - y/3)", 2), ("(1 + y)**2", 3), ("(1 + y)**2.0", 3), ("(y**3 + y + 1)**2.5", 6), ("(1 + y)**-2", 3),
    ("(1 + y)**2.7", 2), ("exp(-(1 + y)**2)", 3), ("(1 + y + sin(y) + exp(y))**80", MAX_EXPANDED_TERMS + 1),
])
def test_the_terms_an_expansion_would_write_are_counted_before_it_runs(law, terms):
    assert expanded_terms(parse(law)) == terms


def test_a_law_whose_expansion_would_be_huge_is_answered_unexpanded(monkeypatch):
    """A method's answer `1e-300*(1 + y)**100000` is five nodes; expanded it would be 100,001 terms
    and the harness's scoring would hang on it."""
    def refuse(expr):
        raise AssertionError(f"expanded {expr}")

    monkeypatch.setattr(skeletons, "skeleton", refuse)
    for law in ("-0.3*y + 1e-300*(1 + y)**100000", "(1 + y + sin(y) + exp(y))**80", "y - exp((1 + y)**3000)"):
        assert not same_skeleton(parse(law), parse("-0.3*y"))


def test_a_prediction_many_times_the_truth_s_size_is_not_its_form_even_if_it_expands_to_it():
    """Six spelled-out zeros ((y + k)**2 - y**2 - 2*k*y - k**2) beside y + 3 expand to the truth's
    terms, but a prediction over SIZE_RATIO times the truth's size (plus SIZE_SLACK) is answered
    False unexpanded."""
    zeros = " + ".join(f"(y + {k})**2 - y**2 - {2 * k}*y" for k in range(1, 7))
    assert skeletons.skeleton(parse(zeros + " + y")) == skeletons.skeleton(parse("y + 3"))
    assert not same_skeleton(parse(zeros + " + y"), parse("y + 3"))
    assert same_skeleton(parse("(y + 1)**2 - y**2 - y"), parse("y + 3"))  # small: expanded and compared


def test_a_truth_whose_expansion_would_be_huge_is_answered_unexpanded(monkeypatch):
    """The cap on expanded terms looks at the truth as well as the prediction."""
    def refuse(expr):
        raise AssertionError(f"expanded {expr}")

    monkeypatch.setattr(skeletons, "skeleton", refuse)
    assert not same_skeleton(parse("-0.3*y"), parse("(1 + y + sin(y) + exp(y))**80"))
