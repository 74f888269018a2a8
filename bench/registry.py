"""Where methods come from: files in `methods/`, the `bench.methods` entry-point group, and
files given with `--method-file`.

Method files are loaded by path under private module names (`_bench_method_<stem>`), so a file
`methods/pysr.py` never shadows the `pysr` package and `methods/` needs no `__init__.py`.
A `MethodSpec` says how to load a method again in a worker process.
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import inspect
import re
import sys
import ast
import traceback
import zlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench.method import Method, Variant
from odecore.arguments import close_matches
from odecore import shipped
from odecore.processes import one_line

METHODS_DIR = shipped.folder("methods")
ENTRY_POINT_GROUP = "bench.methods"
METHOD_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")


class RegistryError(ValueError):
    """An unknown method name or a method file that cannot be loaded."""


BROKEN: dict[str, str] = {}  # built-in method files that failed to load, with the reason


@dataclass(frozen=True)
class MethodSpec:
    """How to find a method class (a file path or an entry point "module:Class") and the
    parameters to construct it with. `preset` are the parameters of a named variant (a
    `Method.variants` entry; `cls` then names the class); `params` are the user's
    (`NAME:key=value`). `label` names the run in rows and tables: the name, plus
    `:key=value,...` when the user set parameters (`sindy:fd_degrees=(3,)`)."""

    name: str
    file: str | None = None
    entry_point: str | None = None
    params: tuple[tuple[str, Any], ...] = ()
    cls: str | None = None  # the class's `name`, for a variant
    preset: tuple[tuple[str, Any], ...] = ()

    @property
    def label(self) -> str:
        if not self.params:
            return self.name
        return label(self.name, dict(self.params))

    def instantiate(self) -> Method:
        return self.load()(**{**dict(self.preset), **dict(self.params)})

    def with_params(self, params: dict[str, Any]) -> "MethodSpec":
        return replace(self, params=tuple(sorted({**dict(self.params), **params}.items())))

    def load(self) -> type[Method]:
        if self.file:
            for cls in _classes_in_file(Path(self.file)):
                if cls.name == (self.cls or self.name):
                    return cls
            raise RegistryError(f"{self.file} defines no method named {self.cls or self.name!r}")
        module, _, attr = self.entry_point.partition(":")
        return getattr(importlib.import_module(module), attr)

    def missing_parameters(self) -> list[str]:
        """Constructor arguments without a default that neither the variant nor the user sets."""
        given = {key for key, _ in self.preset + self.params}
        return [p.name for p in inspect.signature(self.load().__init__).parameters.values()
                if p.name != "self" and p.default is inspect.Parameter.empty
                and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name not in given]

    def _variant(self) -> Variant | None:
        return self.load().variants.get(self.name) if self.cls else None

    @property
    def base_version(self) -> str:
        """The class's (or variant's) version, without the method's fingerprint."""
        variant = self._variant()
        return (variant and variant.version) or self.load().version

    @property
    def version(self) -> str:
        """The class's (or variant's) version, plus the method's fingerprint when it has one."""
        try:
            fingerprint = self.instantiate().fingerprint()
        except TypeError:  # a constructor that needs arguments not given here: run() will say so
            fingerprint = ""
        except (Exception, SystemExit) as err:  # noqa: BLE001 - a plugin's own code: one line, not a traceback
            raise RegistryError(f"method {self.label}: {_failed_check(err)}") from None
        return f"{self.base_version}+{fingerprint}" if fingerprint else self.base_version

    @property
    def description(self) -> str:
        variant = self._variant()
        return (variant and variant.description) or self.load().description

    @property
    def time_limit(self) -> float:
        variant = self._variant()
        return (variant and variant.time_limit) or self.load().time_limit


def discover(extra_files: tuple[str, ...] = (), only: tuple[str, ...] | None = None) -> dict[str, MethodSpec]:
    """Every method found, by name, with the named variants of each class. Later sources
    override earlier ones: built-in files, then entry points, then explicit `--method-file` paths.

    `only` holds the method arguments a command needs (`NAME` or `NAME:key=value,...`): a
    built-in file whose source plainly declares none of their names (`declared_names`) is then
    not imported, which saves seconds of library imports per command. When a name is not found
    that way, every file is read, as without `only`."""
    builtin = sorted(METHODS_DIR.glob("*.py"))
    if only is None:
        return _discover(builtin, extra_files)
    wanted = {parse_method_argument(argument)[0] for argument in only}
    declaring = [file for file in builtin if (names := declared_names(file)) is None or names & wanted]
    specs = _discover(declaring, extra_files)
    # a name declared some other way, or unknown: read every file, so the error lists them all
    return specs if wanted <= specs.keys() else _discover(builtin, extra_files)


def _discover(builtin: list[Path], extra_files: tuple[str, ...]) -> dict[str, MethodSpec]:
    specs: dict[str, MethodSpec] = {}
    for file in builtin:
        try:
            specs.update(_file_specs(_classes_in_file(file), file))
        except RegistryError as err:  # one broken plugin must not hide the others
            BROKEN[file.name] = str(err)
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            cls = ep.load()
        except Exception as err:  # an installed plugin that cannot import is reported, not fatal
            BROKEN[f"{ep.name} (entry point)"] = f"{ep.value} failed to load: {type(err).__name__}: {err}"
            continue
        if not (inspect.isclass(cls) and issubclass(cls, Method)):
            BROKEN[f"{ep.name} (entry point)"] = f"{ep.value} is not a Method subclass"
            continue
        try:
            _check_class(cls, (ep.name, *own_variants(cls)), f"entry point {ep.value}")
        except RegistryError as err:
            BROKEN[f"{ep.name} (entry point)"] = str(err)
            continue
        specs[ep.name] = MethodSpec(ep.name, entry_point=ep.value)
        for name, variant in own_variants(cls).items():
            specs[name] = MethodSpec(name, entry_point=ep.value, cls=cls.name,
                                     preset=tuple(sorted(variant.params.items())))
    given: dict[str, str] = {}  # name -> the --method-file that defines it
    for file in extra_files:
        path = Path(file)
        if not path.is_file():
            raise RegistryError(f"method file {file} does not exist")
        classes = _classes_in_file(path)
        if not classes:
            raise RegistryError(f"method file {file} defines no Method subclass with a name")
        found = _file_specs(classes, path.resolve())
        for name in found:
            if given.setdefault(name, file) != file and Path(given[name]).resolve() != path.resolve():
                raise RegistryError(f"method files {given[name]} and {file} both define {name!r}")
        specs.update(found)
    return specs


def declared_names(path: Path) -> set[str] | None:
    """The method names a file declares in its source (each class's literal `name` and the
    string keys of its literal `variants`), read without running it; None when the source leaves
    that open: it does not parse, or a class with base classes sets no literal `name` (it may
    inherit one), or its `variants` is not a dict with string keys."""
    try:
        tree = ast.parse(path.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return None
    names: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        values = {target.id: stmt.value for stmt in node.body if isinstance(stmt, (ast.Assign, ast.AnnAssign))
                  for target in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target])
                  if isinstance(target, ast.Name) and stmt.value is not None}
        name, variants = values.get("name"), values.get("variants")
        if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
            if node.bases:
                return None
            continue
        names.add(name.value)
        if variants is not None:
            if not (isinstance(variants, ast.Dict) and all(
                    isinstance(key, ast.Constant) and isinstance(key.value, str) for key in variants.keys)):
                return None
            names.update(key.value for key in variants.keys)
    return names


def own_variants(cls: type[Method]) -> dict[str, Variant]:
    """The variants a class declares itself: a subclass does not list its base's variants again
    under its own name (they would replace the base's, and its file could not be skipped)."""
    return vars(cls).get("variants", {})


def _check_class(cls: type[Method], names, where) -> None:
    """What a sweep needs of a method class, checked when it is found rather than once per task:
    names that can be typed on a command line (`--methods NAME:key=value`) and are named in rows,
    a `run` of its own, and `requires` as module names."""
    for name in names:
        if not (isinstance(name, str) and METHOD_NAME.fullmatch(name)):
            raise RegistryError(f"{where}: method name {name!r} cannot be typed after --methods (letters, digits "
                                "and - _ + . only, starting with a letter or digit)")
    if cls.run is Method.run:
        raise RegistryError(f"{where}: {cls.__name__} does not implement run(self, observations, budget)")
    if not (isinstance(cls.requires, (tuple, list)) and all(isinstance(m, str) and m for m in cls.requires)):
        raise RegistryError(f"{where}: {cls.__name__}.requires must be a tuple of module names, e.g. ('numpy',), "
                            f"not {cls.requires!r}")


def _file_specs(classes: list[type[Method]], file: Path) -> dict[str, MethodSpec]:
    specs = {}
    for cls in classes:
        _check_class(cls, (cls.name, *own_variants(cls)), file)
        specs[cls.name] = MethodSpec(cls.name, file=str(file))
        for name, variant in own_variants(cls).items():
            specs[name] = MethodSpec(name, file=str(file), cls=cls.name, preset=tuple(sorted(variant.params.items())))
    return specs


def unavailable_reason(spec: MethodSpec) -> str | None:
    """The method's availability check (on an instance with the spec's parameters), without
    the import-time warnings of the libraries it tries (they would bury the one-line messages
    of the CLI)."""
    import warnings

    missing = spec.missing_parameters()
    if missing:
        example = ",".join(f"{key}=VALUE" for key in missing)
        return f"its constructor needs {', '.join(missing)}: run it as {spec.name}:{example}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            method = spec.instantiate()
            try:
                method.get_params()  # the harness names and checks a run by its parameters
            except TypeError as err:
                return str(err)
            method.fingerprint()  # the version every row records
            return method.unavailable_reason()
        except (Exception, SystemExit) as err:  # noqa: BLE001 - a plugin's own code: it cannot run, say why
            return _failed_check(err)


def _failed_check(err: BaseException) -> str:
    """Why a method whose constructor, fingerprint() or unavailable_reason() raised cannot run,
    naming the step: the first frame of the traceback outside this file is the method's own (a
    library's `__init__` that the method's fingerprint() called further in is not the step)."""
    step = next((frame.name for frame in traceback.extract_tb(err.__traceback__) if frame.filename != __file__), None)
    return f"its {step + '()' if step else 'check'} failed: {one_line(err)}"


def select(names: list[str] | None, specs: dict[str, MethodSpec]) -> list[MethodSpec]:
    """The specs named by `names`, each `NAME` or `NAME:key=value,...` (parameters of the
    method's constructor; values are Python literals, true/false in any case, else strings):
    `sindy:fd_degrees=(3,)`. Each method checks its values here, once, before any sweep."""
    if not names:
        return list(specs.values())
    parsed = [parse_method_argument(n) for n in names]
    unknown = [name for name, _ in parsed if name not in specs]
    if unknown:
        broken = [f"; {where} is installed but broken: {reason}" for where, reason in BROKEN.items()
                  if where.removesuffix(" (entry point)").removesuffix(".py") in unknown]
        raise RegistryError(f"unknown method(s) {', '.join(map(repr, unknown))}{close_matches(unknown, specs)}"
                            f"{''.join(broken)}; known: {', '.join(sorted(specs))}")
    chosen = [specs[name].with_params(params) if params else specs[name] for name, params in parsed]
    for spec in chosen:
        try:
            known = spec.load()._param_names()
        except TypeError as err:  # *args or **kwargs
            raise RegistryError(f"method {spec.name}: {err}") from None
        wrong = [key for key, _ in spec.params if key not in known]
        if wrong:
            raise RegistryError(f"method {spec.name} has no parameter(s) {', '.join(wrong)}; "
                                f"its parameters: {', '.join(known) or 'none'}")
        if spec.params and not spec.missing_parameters():  # a missing one is named by unavailable_reason
            try:
                spec.instantiate().check_params()
            except (TypeError, ValueError) as err:
                raise RegistryError(f"method {spec.name}: {err}") from None
    return chosen


def label(name: str, params: dict[str, Any]) -> str:
    """How a run is named in rows and tables: `name`, plus `:key=value,...` in key order with
    values as Python literals, however the user spelled them (`sindy:fd_degrees=(3,)`)."""
    if not params:
        return name
    return f"{name}:" + ",".join(f"{key}={value!r}" for key, value in sorted(params.items()))


def canonical_label(text: str) -> str:
    """The stored label of a method argument as typed (`linrate:scale=.5` -> `linrate:scale=0.5`)."""
    return label(*parse_method_argument(text))


def parse_method_argument(text: str) -> tuple[str, dict[str, Any]]:
    """("sindy", {"fd_degrees": (3,)}) for "sindy:fd_degrees=(3,)". Commas inside brackets or
    quotes belong to the value; a value that is not a Python literal is kept as a string."""
    name, _, rest = text.partition(":")
    params: dict[str, Any] = {}
    for item in _split_items(rest) if rest else []:
        key, eq, value = item.partition("=")
        if not eq or not key.strip().isidentifier():
            raise RegistryError(f"method argument {text!r}: expected NAME:key=value,... (got {item!r})")
        key, value = key.strip(), value.strip()
        if key in params:
            raise RegistryError(f"method argument {text!r}: {key} is given twice")
        if value.lower() in ("true", "false"):  # as typed on a command line; stored as True/False
            params[key] = value.lower() == "true"
            continue
        try:
            params[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            if value and value[0] in "([{'\"":  # meant as a literal, and broken
                raise RegistryError(f"method argument {text!r}: {key}={value} is not a valid Python literal") from None
            params[key] = value
    return name.strip(), params


def _split_items(text: str) -> list[str]:
    items, depth, quote, current = [], 0, None, ""
    for char in text:
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            items.append(current)
            current = ""
            continue
        current += char
    return [*items, current] if current.strip() else items


_loaded: dict[Path, list[type[Method]]] = {}
_loading: set[Path] = set()  # files being loaded now (a file that loads itself is refused)


def _classes_in_file(path: Path) -> list[type[Method]]:
    """Method subclasses defined (not imported) in a file, each loaded once per process."""
    path = path.resolve()
    if path in _loading:  # a script that discovers its own file at import: it would load itself forever
        raise RegistryError(f"method file {path} loads itself while it is loaded: a script that passes its "
                            "own file to discover() must do so under `if __name__ == \"__main__\":`")
    if path not in _loaded:
        module_name = f"_bench_method_{path.stem}_{zlib.crc32(str(path).encode()):08x}"
        spec = importlib.util.spec_from_file_location(module_name, path)
        if spec is None:
            raise RegistryError(f"method file {path} is not a Python file (.py)")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        _loading.add(path)
        try:
            spec.loader.exec_module(module)
        except (Exception, SystemExit) as err:  # a file that calls sys.exit() when imported, too
            sys.modules.pop(module_name, None)
            raise RegistryError(f"method file {path} failed to load: {one_line(err)}") from None
        finally:
            _loading.discard(path)
        classes = [obj for obj in vars(module).values()
                   if inspect.isclass(obj) and issubclass(obj, Method) and obj.__module__ == module_name and obj.name]
        names = {}
        for cls in classes:
            other = names.setdefault(cls.name, cls)
            if other is not cls:
                raise RegistryError(f"method file {path}: classes {other.__name__} and {cls.__name__} "
                                    f"are both named {cls.name!r}")
        _loaded[path] = classes
    return _loaded[path]
