import pytest
import sympy

from odecore.expressions import ExpressionError, parse, to_string
from odecore.expressions import Y, complexity, nested_functions


@pytest.mark.parametrize("text", [
    "__import__('os').system('ls')", "y.__class__", "(lambda: 1)()", "[y][0]", "open('f')",
    "x + 1", "'y'", "sin(y, 2)", "exp(x=y)", "y if y else 1", "y^2", "", "1/0", "True + y",
    "10**10**10 * y", "2**2**2**2**2 + y", "0.5**5000 * y", "1" + "0" * 400 + " * y",  # would hang or overflow
    "+".join(["y"] * 3000), "sin(" * 200 + "y" + ")" * 200,  # nested past Python's and sympy's recursion limits
])
def test_unsafe_or_invalid_text_is_refused(text):
    with pytest.raises(ExpressionError):
        parse(text)


@pytest.mark.parametrize("text, message", [
    ("(y + 1)//2", "operator '//' is not allowed; use + - * / **"),
    ("1,5*y", "write decimals with a point"),
    ("-0.3y", "write products with * (0.3*y, not 0.3y)"),
    ("y.real", "'y.real' is not allowed in an expression: use y, numbers"),
    ("np.float64(0.5)*y", "a numpy scalar's repr: write its number with float()"),  # f"{a!r}" under numpy 2
    ("y' = -0.5*y", "'=' is not allowed: write only the right-hand side f(y) of y' = f(y)"),  # as predict prints it
    ("dy/dt=-y", "'=' is not allowed"),
])
def test_a_refusal_names_the_piece_as_written_not_python_s_node(text, message):
    with pytest.raises(ExpressionError) as err:
        parse(text)
    assert message in str(err.value)


@pytest.mark.parametrize("text", ["(-8)**(1/3)*y", "acos(2)*y", "sqrt(1 - pi)*y", "(-2)**(2/3) + y", "(-1)**(1/3)",
                                  "1e200*1e200*y", "1e-200*1e-200*y"])
def test_a_constant_that_is_not_a_real_float_is_refused(text):
    """sympy keeps (-8)**(1/3) and acos(2) unevaluated, so their imaginary part passed the check for
    I, and numpy's evaluators kept the real part: (-8)**(1/3)*y was read as y. 1e200*1e200 printed as inf."""
    with pytest.raises(ExpressionError, match="not a real number|beyond a float's range"):
        parse(text)
    assert parse("0.0*y + 1e-310") == sympy.Float(1e-310)  # a zero and a subnormal are floats


def test_a_pasted_minus_is_read_and_e_is_pointed_to_e():
    assert parse("\u22120.5*y") == parse("-0.5*y") and parse("2**(1/3)*y + exp(-1)") == 2 ** sympy.Rational(1, 3) * Y + sympy.exp(-1)
    with pytest.raises(ExpressionError, match="Euler's number is E"):
        parse("e*y")


def test_textbook_expression_parses_to_the_intended_value():
    expr = parse("y**0.5*(0.9*8 - (3 + 2.5)*y**(1 - 0.5))")
    assert float(expr.subs(Y, 4.0)) == pytest.approx(2 * 7.2 - 5.5 * 4)


def test_string_round_trip_keeps_floats_bit_for_bit():
    expr = parse("0.1*y + 0.30000000000000004*sin(y) - 1e-300 + 7.123456789012345e200*y**2")
    again = parse(to_string(expr))
    assert again == expr
    assert sympy.srepr(again) == sympy.srepr(expr)


def test_complexity_counts_operators_variables_and_constants():
    assert complexity(parse("y")) == 1
    assert complexity(parse("y + y**2")) == 5  # +, y, pow, y, 2
    assert complexity(parse("sin(y)*3")) == 4


@pytest.mark.parametrize("text, nested", [
    ("sin(cos(y))", 1), ("exp(exp(y)) + y", 1), ("(y**y)**sin(y)", 2), ("log(1 + exp(y))", 1),
    ("y*log(2/y)", 0), ("exp(-y**2)", 0), ("sin(3.2 + y)", 0), ("y**2.5 - sqrt(y)", 0), ("y**y", 0),
])
def test_nested_functions_counts_functions_inside_another_functions_argument(text, nested):
    assert nested_functions(parse(text)) == nested
