"""The rule interface, and where rules come from (built-ins in ``rules/``, plugins by entry point).

A rule is a small class::

    class ReshapeBlocksSiluMulRecompute(Rule):
        \"\"\"What it finds / Why it matters / How to fix / Example (user documentation).\"\"\"
        code = "RC002"
        name = "reshape-blocks-silu-mul-recompute"
        summary = "one line"
        stages = ("validate", ...)      # stage names where its evidence is final, best first
        VALID = [...]                   # IR snippets where it finds nothing
        INVALID = [Invalid(snippet, Says("%6", cause="...", fix="..."))]  # and what it must say there
        def check(self, ir): yield self.finding(ir, key, "message", hint="...")
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, ClassVar

from .findings import NO_FIXES, CommWaste, Finding, FixCost, Fixes, OpFix, Related, WastedBytes

if TYPE_CHECKING:
    from .model import IRFile

ENTRY_POINT_GROUP = "irlint.rules"


@dataclass(frozen=True)
class Says:
    """One finding an INVALID example must give: the node it is at and what the rule states in
    its headline (``Finding.cause``, ``Finding.fix``; "" for no fix)."""

    node: str
    cause: str
    fix: str = ""


@dataclass(frozen=True)
class Invalid:
    """An INVALID example: the dump text and, in order, every finding of the rule on it."""

    code: str
    says: tuple[Says, ...]

    def __init__(self, code: str, *says: Says) -> None:
        object.__setattr__(self, "code", code)
        object.__setattr__(self, "says", says)


def example_text(example: str | Invalid) -> str:
    """The dump text of a VALID or INVALID example (a plugin's may be plain text)."""
    return example.code if isinstance(example, Invalid) else example


class Rule:
    code: ClassVar[str] = ""
    name: ClassVar[str] = ""
    severity: ClassVar[str] = "warning"
    summary: ClassVar[str] = ""
    stages: ClassVar[tuple[str, ...]] = ()  # empty: every file
    default_enabled: ClassVar[bool] = True
    VALID: ClassVar[list[str]] = []
    INVALID: ClassVar[list[str | Invalid]] = []  # built-in rules: Invalid, naming what they say
    # the kinds of redistribution waste its findings may name (irlint.findings.WASTE_KINDS):
    # ``irlint comm`` runs the built-in rules that declare some
    waste_kinds: ClassVar[tuple[str, ...]] = ()

    def check(self, ir: IRFile) -> Iterator[Finding]:
        raise NotImplementedError

    @classmethod
    def doc(cls) -> str:
        return inspect.cleandoc(cls.__doc__ or cls.summary)

    # --- helpers for check() ----------------------------------------------------------------------
    def finding(
        self,
        ir: IRFile,
        key: int,
        message: str,
        hint: str = "",
        related: Iterable[int | Related] = (),
        severity: str | None = None,
        identity: tuple = (),
        facts: dict | None = None,
        cause: str = "",
        fix: str = "",
        snippet: str = "",
        waste_kinds: Iterable[str] = (),
        wasted: Iterable[WastedBytes] = (),
        fixes: Fixes = NO_FIXES,
        waste: CommWaste | None = None,
        fix_cost: FixCost | None = None,
    ) -> Finding:
        data = ir.nodes[key]
        if not data.get("scope"):
            # a dump without scope lines (MS_DEV_DUMP_IR_FORMAT=1): the weights the node is computed
            # from tell one layer's node from another's, as its scope would
            from .model import weights_upstream

            identity = (*identity, ("weights", weights_upstream(ir, key)))
        from .model.layers import model_path, network_class

        layer, path = model_path(ir, key)
        return Finding(
            layer=layer,
            model_path=path,
            model=network_class(ir),
            cause=cause or self.summary,
            fix=fix,
            code=self.code,
            rule=self.name,
            severity=severity or self.severity,
            file=ir.path,
            line=data.get("line", 0),
            graph=data.get("graph", ""),
            node=data.get("id", ""),
            op=data.get("op", ""),
            scope=data.get("scope", ""),
            message=message,
            hint=hint,
            related=tuple(r if isinstance(r, Related) else related_node(ir, r) for r in related),
            stage=ir.stage.label,
            identity=identity,
            facts=tuple(sorted((facts or {}).items())),
            source=source_of(ir, key),
            snippet=snippet,
            waste_kinds=tuple(waste_kinds),
            wasted=tuple(wasted),
            fixes=fixes,
            waste=waste,
            fix_cost=fix_cost,
        )


def strategy_snippet(related: Iterable[Related], fix: OpFix | None) -> str:
    """The in_strategy a redistribution finding proposes (``fix``) as lines to paste, headed by
    the op it is for; "" for a fix that is not an in_strategy."""
    if fix is None or not fix.in_strategy:
        return ""
    target = next((r for r in related if r.node == fix.node), None)
    where = f"{target.op} {target.node}, {target.scope}" if target else str(fix.node)
    new = fix.in_strategy
    return f"# {where}\nin_strategy = {new}   # e.g. ops.{target.op if target else 'Op'}().shard({new})"


def source_of(ir: IRFile, key: int) -> tuple[str, int] | None:
    from .model.source import source_of as first_model_line

    return first_model_line(ir, key)


def related_node(ir: IRFile, key: int, note: str = "") -> Related:
    data = ir.nodes[key]
    return Related(
        file=ir.path,
        line=data.get("line", 0),
        node=data.get("id", ""),
        op=data.get("op", ""),
        scope=data.get("scope", ""),
        graph=data.get("graph", ""),
        note=note,
    )


def entry_points(group: str):
    """The installed entry points of ``group`` (``importlib.metadata``). That module is a large
    part of a lint answered from the cache (bench/README.md); it is loaded only when some installed
    distribution may declare the group."""
    if not _may_declare(group):
        return ()
    from importlib.metadata import entry_points as installed

    return installed(group=group)


def _may_declare(group: str) -> bool:
    """False only when no distribution that ``importlib.metadata`` could find declares ``group``:
    no ``[group]`` section in the entry_points.txt of any .dist-info/.egg-info folder (or egg) on
    sys.path. Anything it cannot look into cheaply (a zip on sys.path, a finder of other
    distributions, an unreadable folder) counts as a maybe."""
    from importlib.machinery import PathFinder

    if any(hasattr(finder, "find_distributions") and finder is not PathFinder for finder in sys.meta_path):
        return True
    section = None
    for entry in sys.path:
        root = entry or "."
        if os.path.isfile(root):
            return True  # a zip (or egg file) of packages
        if not os.path.isdir(root):
            continue
        try:
            names = os.listdir(root)
        except OSError:
            return True
        for name in names:
            low = name.lower()
            if low.endswith((".dist-info", ".egg-info")) or (low == "egg-info" and root.lower().endswith(".egg")):
                try:
                    with open(os.path.join(root, name, "entry_points.txt"), encoding="utf-8") as f:
                        text = f.read()
                    if group in text:  # most declare other groups: the pattern only where it may match
                        section = section or re.compile(rf"^\s*\[\s*{re.escape(group)}\s*\]\s*$", re.MULTILINE)
                        if section.search(text):
                            return True
                except (FileNotFoundError, NotADirectoryError):
                    continue
                except (OSError, ValueError):
                    return True
    return False


def builtin_package():
    """``irlint.rules``: inside the wheel; in a source checkout, the top-level ``rules/`` folder."""
    try:
        return importlib.import_module("irlint.rules")
    except ModuleNotFoundError:
        from importlib.util import module_from_spec, spec_from_file_location
        from pathlib import Path

        folder = Path(__file__).resolve().parent.parent / "rules"
        spec = spec_from_file_location("irlint.rules", folder / "__init__.py", submodule_search_locations=[str(folder)])
        assert spec is not None and spec.loader is not None  # a path always has a spec
        module = module_from_spec(spec)
        sys.modules["irlint.rules"] = module
        spec.loader.exec_module(module)
        return module


def _module_names(package) -> list[str]:
    """The modules and packages under ``package``, as ``pkgutil.walk_packages`` names them (a
    package is imported to walk it). Folders are listed directly; pkgutil, whose finders cost
    half a millisecond of each lint, walks anything else (a zip)."""
    if not all(isinstance(p, str) and os.path.isdir(p) for p in package.__path__):
        import pkgutil

        return [info.name for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}.")]
    names: list[str] = []
    seen: set[str] = set()
    for folder in package.__path__:
        try:
            entries = sorted(os.listdir(folder))  # a package before a module of the same name
        except OSError:
            continue
        for entry in entries:
            name = inspect.getmodulename(entry)
            path = os.path.join(folder, entry)
            is_package = False
            if not name and "." not in entry and os.path.isdir(path):
                try:
                    is_package = any(inspect.getmodulename(f) == "__init__" for f in os.listdir(path))
                except OSError:
                    is_package = False
                name = entry if is_package else None
            if not name or name == "__init__" or "." in name or name in seen:
                continue
            seen.add(name)
            full = f"{package.__name__}.{name}"
            names.append(full)
            if is_package:
                try:
                    names += _module_names(importlib.import_module(full))
                except ImportError:  # as walk_packages: it fails again, with its message, when loaded
                    continue
    return names


def _rules_in(module) -> list[type[Rule]]:
    return [
        obj
        for obj in vars(module).values()
        if isinstance(obj, type)
        and issubclass(obj, Rule)
        and obj is not Rule
        and obj.code
        and obj.__module__ == module.__name__
    ]


# rules loaded from the entry-point group: the engine runs them in a process of their own
PLUGIN_RULES: set[type[Rule]] = set()


def _invalid_plugin_rule(cls: type[Rule]) -> str:
    """Why a plugin's rule class cannot run as it says, or ""."""
    from .findings import SEVERITIES

    if not isinstance(cls.code, str) or re.fullmatch(r"IR\d+", cls.code, re.I):
        return f"uses code {cls.code!r}: IR codes are irlint's input problems (irlint explain IR001)"
    if cls.severity not in SEVERITIES:
        return f"has severity {cls.severity!r}: it must be one of {', '.join(SEVERITIES)}"
    stages = cls.stages
    if isinstance(stages, str) or not isinstance(stages, (tuple, list)) or not all(isinstance(s, str) for s in stages):
        return (
            f"has stages {stages!r}: it must be a tuple of stage names such as ('validate',)"
            f"{' (a str is not one)' if isinstance(stages, str) else ''}"
        )
    return ""


class plugin_output:
    """While plugin code runs (its import, its ``check``), what it writes to standard output goes to
    standard error: a ``print()`` or an ``os.write(1, ...)`` must not land in a JSON or SARIF report
    (or pass for a CI workflow command) on standard output."""

    def __enter__(self):
        _flush()
        self.saved_stdout = sys.stdout
        sys.stdout = sys.stderr
        try:
            self.saved_fd: int | None = os.dup(1)
            os.dup2(2, 1)
        except OSError:  # no standard output or error to redirect
            self.saved_fd = None
        return self

    def __exit__(self, *exc):
        _flush()
        sys.stdout = self.saved_stdout
        if self.saved_fd is not None:
            os.dup2(self.saved_fd, 1)
            os.close(self.saved_fd)
        return False


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass


def load_rules(plugins: bool = True) -> list[type[Rule]]:
    """Built-in rules, then third-party rules from the ``irlint.rules`` entry-point group.
    What went wrong with a plugin is in ``plugin_problems()``."""
    return list(_load_rules(plugins)[0])


def plugin_problems(plugins: bool = True) -> list[str]:
    """Plugins that could not be loaded, or whose rule codes clash with another rule's."""
    return list(_load_rules(plugins)[1])


@lru_cache(maxsize=2)
def _load_rules(plugins: bool) -> tuple[tuple[type[Rule], ...], tuple[str, ...]]:
    found: dict[str, type[Rule]] = {}
    problems: list[str] = []
    package = builtin_package()
    # a rule family may be a package of its own (rules/recompute/): its modules are walked too
    for name in sorted(_module_names(package)):
        module = importlib.import_module(name)
        for cls in _rules_in(module):
            found.setdefault(cls.code, cls)
    if plugins:
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            try:
                with plugin_output():
                    obj = ep.load()
            except (Exception, SystemExit) as exc:  # noqa: BLE001 - a broken plugin (even one that exits) must not stop the lint
                problems.append(f"cannot load rule plugin {ep.name!r}: {type(exc).__name__}: {exc}")
                continue
            classes = [obj] if isinstance(obj, type) else _rules_in(obj)
            for cls in classes:
                if not (isinstance(cls, type) and issubclass(cls, Rule) and cls.code):
                    continue
                invalid = _invalid_plugin_rule(cls)
                if invalid:
                    problems.append(f"rule plugin {ep.name!r}: {cls.__name__} {invalid}; it was not loaded")
                    continue
                PLUGIN_RULES.add(cls)
                other = found.setdefault(cls.code, cls)
                if other is not cls:
                    problems.append(
                        f"rule plugin {ep.name!r}: {cls.__name__} uses code {cls.code}, "
                        f"which {other.__module__}.{other.__name__} already has; it was not loaded"
                    )
    return tuple(sorted(found.values(), key=lambda c: c.code)), tuple(problems)
