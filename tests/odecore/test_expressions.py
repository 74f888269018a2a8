import numpy as np
import pytest
import sympy

from odecore.expressions import ExpressionError, parse, to_string
from odecore.expressions import MAX_LENGTH, Y, compile_vector, complexity, nested_functions, rounded


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


@pytest.mark.parametrize("text", ["sqrt(-1)*y", "log(-1)*y", "(-1)**0.5*y"])
def test_a_constant_that_sympy_evaluates_to_an_imaginary_number_is_refused(text):
    """sympy turns sqrt(-1) into I and log(-1) into I*pi at once: no unevaluated part is left for the
    constants' check to see, only the check for I refuses them."""
    with pytest.raises(ExpressionError, match="not real and finite"):
        parse(text)


@pytest.mark.parametrize("text", ["10**200*10**200*y", "y/(10**200*10**200)", "10**300*10*y"])
def test_an_exact_number_beyond_1e300_built_from_smaller_ones_is_refused(text):
    """Each literal and each power is within range, their product is not: it could not be printed
    back or evaluated as a float."""
    with pytest.raises(ExpressionError, match=r"a number beyond 1e\+-300"):
        parse(text)


@pytest.mark.parametrize("text", ["exp(1000)*y", "cosh(800) - y"])
def test_a_constant_function_value_beyond_a_float_s_range_is_refused(text):
    """exp(1000) is real for sympy but inf as a float: the harness would integrate inf*y."""
    with pytest.raises(ExpressionError, match="is a number beyond a float's range"):
        parse(text)


@pytest.mark.parametrize("text", ["1e-330*y", "1e-400*y + y", "-1e-400", "y + 2.5E-999"])
def test_a_number_written_below_a_float_s_range_is_refused_not_read_as_zero(text):
    """Python reads the literal 1e-400 as 0.0: 1e-400*y would have been the law y' = 0."""
    with pytest.raises(ExpressionError, match="a number beyond a float's range"):
        parse(text)
    assert parse("0e5*y + y") == parse("0.000e-9*y + y") == Y  # zeros written as zeros are numbers


@pytest.mark.parametrize("text, message", [
    ("log(y, base=10)", "log takes exactly one argument"),
    ("y >= 0", "'y >= 0' is not allowed in an expression"),
])
def test_an_equals_sign_inside_a_valid_expression_gets_its_own_refusal_not_the_equation_hint(text, message):
    with pytest.raises(ExpressionError, match=message):
        parse(text)


def test_text_longer_than_the_limit_is_refused_even_when_it_would_read():
    """The length limit is checked before Python's parser sees the text (padding included)."""
    assert parse("y" + " " * (MAX_LENGTH - 1)) == Y
    with pytest.raises(ExpressionError, match=f"longer than {MAX_LENGTH} characters"):
        parse("y" + " " * MAX_LENGTH)


def test_a_caret_is_refused_with_the_hint_to_write_two_stars():
    with pytest.raises(ExpressionError, match=r"'\^' is not a power in Python syntax; write y\*\*2"):
        parse("y^2")


def test_a_call_with_unpacked_keywords_is_refused_not_read_as_the_one_argument():
    """sin(y, **y) holds no '=' (so the check for equations lets it through) and one positional argument."""
    with pytest.raises(ExpressionError, match="sin takes exactly one argument"):
        parse("sin(y, **y)")


def test_text_is_read_with_spaces_and_a_newline_around_it():
    """A law pasted from a file or a table keeps its indentation; Python would call it an unexpected indent."""
    assert parse("   -0.5*y\n") == parse("\t-0.5*y") == -0.5 * Y


def test_rounded_keeps_the_digits_asked_for():
    """`nsode predict`'s candidates and the laws table print constants to `digits` significant digits."""
    assert rounded(parse("0.123456*y - 2.71828*y**2"), 3) == "0.123*y - 2.72*y**2"
    assert rounded(parse("0.123456*y"), 5) == "0.12346*y"


def test_a_constant_expression_evaluates_to_an_array_of_its_input_s_shape():
    """y' = 3 gives one value per point, as any other law does (a scalar would break the callers'
    indexing and stacking)."""
    out = compile_vector(sympy.Integer(3))(np.zeros(4))
    assert out.shape == (4,) and np.all(out == 3.0)
    assert compile_vector(parse("pi"))(np.zeros((2, 3))).shape == (2, 3)


@pytest.mark.parametrize("text, nested", [("sin(y**2.5)", 0), ("exp(-sqrt(y))", 0), ("log(1 + y**0.5)", 0),
                                          ("sin(y**y)", 1)])
def test_a_power_with_a_numeric_exponent_is_not_a_nested_function(text, nested):
    """Only a power whose exponent is not a number counts as transcendental: sqrt(y) and y**2.5 inside
    a function are no nesting."""
    assert nested_functions(parse(text)) == nested
