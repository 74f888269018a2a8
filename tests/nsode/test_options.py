"""The search's command-line options: one table, the same Settings from the CLI and the method."""
import argparse
from dataclasses import fields

import pytest

from methods.nsode import NSODE
from nsode.options import SEARCH_OPTIONS, add_search_arguments, changed_flags, flag, search_settings, settings_from
from nsode.search.settings import Settings


def parse(*argv):
    parser = argparse.ArgumentParser()
    add_search_arguments(parser)
    return parser.parse_args(list(argv))


def test_every_option_is_a_settings_field():
    assert set(SEARCH_OPTIONS) <= {f.name for f in fields(Settings)}


def test_no_flags_give_the_shipped_settings():
    args = parse()
    assert settings_from(args) == Settings()
    assert changed_flags(args) == []


def test_flags_set_their_fields_and_are_reported_as_written():
    args = parse("--top-k", "32", "--no-snap", "--drift", "--criterion", "rss", "--course-tolerance", "0.1")
    settings = settings_from(args)
    assert (settings.top_k, settings.snap, settings.drift, settings.criterion, settings.course_tolerance) == \
        (32, False, True, "rss", 0.1)
    assert sorted(changed_flags(args)) == ["--course-tolerance", "--criterion", "--drift", "--no-snap", "--top-k"]
    assert changed_flags(args, values=True) == ["--top-k 32", "--no-snap", "--drift", "--criterion rss",
                                                "--course-tolerance 0.1"]


@pytest.mark.parametrize("argv", [["--top-k", "0"], ["--forecast", "-1"], ["--node-cost", "nan"],
                                  ["--criterion", "aic"], ["--max-points", "9"]])
def test_bad_values_are_refused_by_argparse(argv, capsys):
    with pytest.raises(SystemExit):
        parse(*argv)
    assert flag(argv[0][2:].replace("-", "_")) in capsys.readouterr().err


def test_the_method_builds_the_same_settings_from_its_parameters():
    assert search_settings(NSODE(search=True).get_params()) == Settings()
    params = NSODE(search=True, top_k="32", drift=True, course_tolerance=0.1).get_params()
    assert search_settings(params) == Settings(top_k=32, drift=True, course_tolerance=0.1)
    # every option but the stability check (always on in the harness) is a method parameter too
    assert set(SEARCH_OPTIONS) - {"robust"} <= set(NSODE._param_names())


def test_a_switch_given_as_text_must_say_true_or_false():
    assert search_settings({"drift": "false", "snap": "True"}) == Settings(drift=False, snap=True)
    with pytest.raises(ValueError, match="drift='no'"):
        search_settings({"drift": "no"})


def test_settings_from_python_are_checked_field_by_field_with_or_without_a_flag():
    from nsode.options import checked

    assert checked(Settings(pareto=True, forecast_weight=0.5)) == Settings(pareto=True, forecast_weight=0.5)
    for bad, problem in ((Settings(glitches=None), "glitches=None: expected True or False"),
                         (Settings(pareto=5), "pareto=5: expected True or False"),  # no flag, still a switch
                         (Settings(forecast_weight=-1), "forecast_weight=-1"),
                         (Settings(forecast_weight="abc"), "forecast_weight='abc'")):
        with pytest.raises(ValueError, match=problem):
            checked(bad)
    with pytest.raises(TypeError, match="must be a Settings"):
        checked({"top_k": 8})


def test_a_numpy_bool_is_a_switch_value():
    import numpy as np

    from nsode.options import setting_value

    assert setting_value("snap", bool, np.bool_(False)) is False


def test_changed_flags_write_numbers_as_they_can_be_typed_back():
    assert "--forecast 2" in changed_flags(parse("--forecast", "2"), values=True)
    written = changed_flags(parse("--max-nfev", "1000000", "--course-tolerance", "0.1234567"), values=True)
    assert {"--max-nfev 1000000", "--course-tolerance 0.1234567"} <= set(written)  # not 1e+06, not 0.123457
    assert parse(*" ".join(written).split()) == parse("--max-nfev", "1000000", "--course-tolerance", "0.1234567")
