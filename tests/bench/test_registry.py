"""A command that names its methods imports only the method files that declare them, and finds
exactly what reading every file would find."""
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bench import registry, runner

HEADER = "from bench import Method, Prediction\nfrom bench.method import Variant\n"


@pytest.fixture
def methods_dir(tmp_path, monkeypatch):
    """A methods folder of three files: one declares `alpha` and its variant `alpha-fast`, one
    `beta`, and one writes a marker when it is imported and then fails."""
    folder = tmp_path / "methods"
    folder.mkdir()
    _write(folder / "alpha.py", """
        class Alpha(Method):
            name = "alpha"
            variants = {"alpha-fast": Variant({}, "alpha, fast")}
            def run(self, observations, budget):
                return Prediction("-y")
        """)
    _write(folder / "beta.py", """
        class Beta(Method):
            name = "beta"
            def run(self, observations, budget):
                return Prediction("y")
        """)
    marker = tmp_path / "imported"
    _write(folder / "broken.py", f"""
        open({str(marker)!r}, "w").close()
        raise ImportError("a library this file needs is missing")
        """)
    monkeypatch.setattr(registry, "METHODS_DIR", folder)
    monkeypatch.setattr(registry, "BROKEN", {})
    return folder, marker


def _write(path, body):
    path.write_text(HEADER + textwrap.dedent(body))


def test_named_methods_skip_the_files_that_do_not_declare_them(methods_dir):
    folder, marker = methods_dir
    specs = registry.discover(only=("alpha-fast",))
    assert set(specs) == {"alpha", "alpha-fast"} and specs["alpha-fast"].cls == "alpha"
    assert not marker.exists() and not registry.BROKEN


def test_a_name_no_source_declares_reads_every_file(methods_dir):
    folder, marker = methods_dir
    specs = registry.discover(only=("nosuch",))
    assert set(specs) == {"alpha", "alpha-fast", "beta"}  # what the unknown-name error lists
    assert marker.exists() and "broken.py" in registry.BROKEN


def test_a_file_whose_names_the_source_leaves_open_is_imported(methods_dir):
    folder, marker = methods_dir
    _write(folder / "computed.py", """
        from bench.method import Method as Base
        NAME = "gamma"
        class Gamma(Base):
            name = NAME
            def run(self, observations, budget):
                return Prediction("y")
        """)
    assert registry.declared_names(folder / "computed.py") is None
    assert set(registry.discover(only=("gamma",))) == {"gamma"}
    assert not marker.exists()


def test_what_the_source_declares_is_what_importing_finds_for_every_builtin_file():
    files = sorted(registry.METHODS_DIR.glob("*.py"))
    assert len(files) > 10  # the built-in folder is found
    for file in files:
        imported = set(registry._file_specs(registry._classes_in_file(file), file))
        assert registry.declared_names(file) == imported, file.name


def test_a_subclass_does_not_list_its_base_s_variants_again(tmp_path):
    file = tmp_path / "sub.py"
    _write(file, """
        class Base(Method):
            name = "base"
            variants = {"base-small": Variant({}, "small")}
            def run(self, observations, budget):
                return Prediction("y")
        class Sub(Base):
            name = "sub"
        """)
    specs = registry.discover((str(file),))
    assert specs["base-small"].cls == "base" and "sub" in specs
    assert registry.declared_names(file) == {"base", "base-small", "sub"}


@pytest.mark.parametrize("body, problem", [
    ("""
        class NoRun(Method):
            name = "norun"
            def fit(self, observations, budget):
                return Prediction("-y")
        """, "NoRun does not implement run(self, observations, budget)"),
    ("""
        class OneString(Method):
            name = "onestring"
            requires = "numpy"
            def run(self, observations, budget):
                return Prediction("-y")
        """, "OneString.requires must be a tuple of module names"),
])
def test_a_method_class_a_sweep_cannot_use_is_refused_when_found(tmp_path, body, problem):
    file = tmp_path / "plugin.py"
    _write(file, body)
    with pytest.raises(registry.RegistryError, match=re.escape(problem)):
        registry.discover((str(file),))


FIXTURES = Path(__file__).parent / "fixtures"


def test_a_plugin_whose_own_checks_raise_is_listed_unavailable_with_the_step_that_failed(capsys):
    from bench import cli

    assert cli.main(["list", "--method-file", str(FIXTURES / "broken_plugins.py")]) == 0
    listing = capsys.readouterr().out
    assert "bad-init" in listing and "unavailable: its __init__() failed: RuntimeError: no licence server" in listing
    assert "unavailable: its fingerprint() failed: OSError: weights file vanished" in listing
    assert ("unavailable: its unavailable_reason() failed: ImportError: libfoo.so: cannot open shared object file"
            in listing)
    specs = registry.discover((str(FIXTURES / "broken_plugins.py"),), only=("bad-fingerprint",))
    with pytest.raises(registry.RegistryError, match="bad-fingerprint: its fingerprint"):
        specs["bad-fingerprint"].version  # noqa: B018 - what a sweep asks first


def test_a_method_file_that_exits_when_imported_is_refused_in_one_line():
    with pytest.raises(registry.RegistryError, match="exits_on_import.py failed to load: SystemExit: 0"):
        registry.discover((str(FIXTURES / "exits_on_import.py"),))


def test_a_script_that_discovers_its_own_file_unguarded_is_refused_in_one_line(tmp_path):
    """Without `if __name__ == "__main__":`, loading the script ran its discover() again, without end:
    a thousand-frame traceback ending in a KeyError."""
    script = tmp_path / "my_method.py"
    _write(script, """
        from bench import registry
        class Mine(Method):
            name = "mine"
            def run(self, observations, budget):
                return Prediction("-y")
        registry.discover(extra_files=(__file__,))
        """)
    with pytest.raises(registry.RegistryError, match="loads itself while it is loaded: .* under `if __name__"):
        registry.discover(extra_files=(str(script),))


def test_a_class_defined_in_a_notebook_is_refused_before_the_sweep(tmp_path):
    """Workers cannot import a class of a __main__ without a file: every task failed after the sweep."""
    ran = subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
        from bench import Method, Prediction, registry, runner
        class Decay(Method):
            name = "decay"
            def run(self, observations, budget):
                return Prediction("-0.5*y")
        spec = registry.MethodSpec("decay", entry_point="__main__:Decay")
        try:
            runner.Sweep(datasets=("textbook",), methods=(spec,), out={str(tmp_path / "out")!r})
        except runner.SweepError as err:
            print(err)
        """)], capture_output=True, text=True, timeout=120)
    assert "defined in __main__ without a file" in ran.stdout and "discover(extra_files=" in ran.stdout, ran.stderr
    assert not (tmp_path / "out").exists()


def test_a_variant_s_own_version_and_time_limit_override_its_class_s(tmp_path):
    """A variant whose version is bumped reruns its rows and no other; its time limit is its tasks' default."""
    _write(tmp_path / "plugin.py", """
        class Fits(Method):
            name = "fits"
            version = "1"
            time_limit = 60.0
            variants = {"fits-fast": Variant({}, "fewer restarts", version="3", time_limit=7.0)}
            def run(self, observations, budget):
                return Prediction("-y")
        """)
    specs = registry.discover((str(tmp_path / "plugin.py"),), only=("fits",))
    assert (specs["fits"].version, specs["fits-fast"].version) == ("1", "3")
    assert (specs["fits"].time_limit, specs["fits-fast"].time_limit) == (60.0, 7.0)
    sweep = runner.Sweep(datasets=("textbook",), methods=(specs["fits-fast"],), out=str(tmp_path / "out"))
    assert runner.budgets(sweep) == ({"fits-fast": "3"}, {"fits-fast": 7.0})


def test_a_label_lists_its_parameters_in_key_order_however_they_were_typed():
    """`bench compare --methods sindy:fd_window=5,fd_degrees=(3,)` finds the rows stored under the label."""
    stored, = registry.select(["sindy:fd_window=5,fd_degrees=(3,)"], registry.discover(only=("sindy",)))
    assert stored.label == "sindy:fd_degrees=(3,),fd_window=5"
    assert registry.canonical_label("sindy:fd_window=5,fd_degrees=(3,)") == stored.label
