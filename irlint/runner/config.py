"""Settings of a lint run: rule selection, severities, suppressions, stage choice."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path


@dataclass
class Suppression:
    """Silence a rule (or every rule, when ``rule`` is empty) for nodes whose printed scope or model
    path matches ``scope``, or whose model path matches ``path`` (``layers.1.feed_forward``: the
    cell path the graph resolved, which lazy_inline's short printed scopes do not show)."""

    scope: str = ""
    rule: str = ""
    reason: str = ""
    path: str = ""

    def matches(self, code: str, name: str, scope: str, model_path: str = "") -> bool:
        if self.rule and not _selector_matches(self.rule, code, name):
            return False
        if self.scope and (re.search(self.scope, scope) or (model_path and re.search(self.scope, model_path))):
            return True
        return bool(self.path and model_path and re.search(self.path, model_path))

    def describe(self) -> str:
        what = f"scope {self.scope!r}" if self.scope else f"path {self.path!r}"
        return what + (f" rule {self.rule!r}" if self.rule else "")


@dataclass
class Config:
    """The settings of a lint: rule selection, severities, suppressions and how it runs."""

    select: list[str] = field(default_factory=list)  # empty: the default set
    extend_select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    severity: dict[str, str] = field(default_factory=dict)  # selector -> error|warning|info
    suppress: list[Suppression] = field(default_factory=list)
    all_stages: bool = False
    jobs: int = 0  # 0: one process per core
    cache: bool = True
    dedup: bool = True  # files that hold the same graph (other ranks, repeated stages) are read once
    group: bool = True  # one finding per root cause (irlint.runner.group); off: one per occurrence
    cache_dir: str | None = None
    plugins: bool = True
    # seconds one rule may run on one file before it is stopped and reported (IR011); 0: no limit
    rule_timeout: float = 300
    # bytes of device memory each rank may use (--max-device-memory): the device-memory rule's budget
    max_device_memory: int | None = None
    # called as progress(display_path, size_in_bytes) after each file is read, when the engine supports it
    progress: Callable[[str, int], None] | None = field(default=None, repr=False, compare=False)

    def rule_enabled(self, code: str, name: str, default: bool) -> bool:
        if self.select:
            on = any(_selector_matches(s, code, name) for s in self.select)
        else:
            on = default
        if any(_selector_matches(s, code, name) for s in self.extend_select):
            on = True
        if any(_selector_matches(s, code, name) for s in self.ignore):
            # a more specific select beats a broader ignore, as in ruff
            best_ignore = max(_specificity(s, code, name) for s in self.ignore)
            best_select = max([_specificity(s, code, name) for s in self.select + self.extend_select] or [-1])
            on = best_select > best_ignore
        return on

    def severity_for(self, code: str, name: str, default: str) -> str:
        best, value = -1, default
        for selector, sev in self.severity.items():
            spec = _specificity(selector, code, name)
            if spec > best:
                best, value = spec, sev
        return value

    def suppressed(self, code: str, name: str, scope: str, model_path: str = "") -> bool:
        return self.suppression_for(code, name, scope, model_path) is not None

    def suppression_for(self, code: str, name: str, scope: str, model_path: str = "") -> Suppression | None:
        """The first ``[[suppress]]`` entry that silences this finding."""
        return next((s for s in self.suppress if s.matches(code, name, scope, model_path)), None)

    def effective_jobs(self) -> int:
        return self.jobs if self.jobs > 0 else (os.cpu_count() or 1)


def _selector_matches(selector: str, code: str, name: str) -> bool:
    return _specificity(selector, code, name) >= 0


selector_matches = _selector_matches  # for the engine: which rules an entry's selector names


def _specificity(selector: str, code: str, name: str) -> int:
    """-1 when the selector does not match; longer matches are more specific."""
    s = selector.strip()
    if not s:
        return -1
    if s.upper() == "ALL":
        return 0
    if s == name or s.upper() == code.upper():
        return 100
    if code.upper().startswith(s.upper()):
        return len(s)
    return -1


# --- configuration files ---------------------------------------------------------------------------
CONFIG_FILES = ("irlint.toml", "pyproject.toml")  # first found in a folder wins
LEVELS = ("error", "warning", "info")
_KEYS = {
    "select",
    "extend-select",
    "ignore",
    "severity",
    "all-stages",
    "jobs",
    "cache",
    "cache-dir",
    "suppress",
    "plugins",
    "rule-timeout",
    "dedup",
    "group",
}


class ConfigError(Exception):
    """A configuration file or option that cannot be used (exit code 2)."""


def _toml_load(path: str | Path) -> dict:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef, unused-ignore]  # Python 3.10: the same API as tomllib
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None


def settings_in(path: str | Path) -> dict | None:
    """The irlint table of a config file: top level of irlint.toml, [tool.irlint] of pyproject.toml
    (None when a pyproject.toml has no such table)."""
    data = _toml_load(path)
    if os.path.basename(path) == "pyproject.toml":
        tool = data.get("tool", {})
        return tool.get("irlint") if isinstance(tool, dict) and isinstance(tool.get("irlint"), dict) else None
    return data


def find_config(starts: list[str]) -> Path | None:
    """The nearest config file upward from each start folder in turn (first PATH, then the working dir)."""
    for start in starts:
        p = os.path.realpath(start)  # as Path.resolve(), without loading pathlib for a run without config
        d = p if _exists_as(p, os.path.isdir) else os.path.dirname(p)
        while True:
            for name in CONFIG_FILES:
                candidate = os.path.join(d, name)
                if _exists_as(candidate, os.path.isfile) and (
                    name != "pyproject.toml" or settings_in(candidate) is not None
                ):
                    from pathlib import Path

                    return Path(candidate)
            up = os.path.dirname(d)
            if up == d:
                break
            d = up
    return None


def _exists_as(path: str, test) -> bool:
    """``path.is_file()``/``is_dir()``, False for a folder that cannot be listed (no config there:
    the lint itself reports such a folder)."""
    try:
        return test(path)
    except OSError:
        return False


def _str_list(value, key: str, where: str) -> list[str]:
    if isinstance(value, str):  # `select = "RC"` is a likely slip for ["RC"]: say so rather than guess
        raise ConfigError(
            f"{where}: '{key}' must be an array of rule codes, prefixes or names "
            f"({key} = [{_toml_value(value)}]), not a string"
        )
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: '{key}' must be an array of rule codes, prefixes or names")
    return [v.strip() for v in value if v.strip()]


def config_from_dict(data: dict, where: str = "config") -> Config:
    """Build a Config from the keys of an irlint table; every mistake is a ConfigError."""
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise ConfigError(
            f"{where}: unknown key(s) {', '.join(map(repr, unknown))}; known keys: {', '.join(sorted(_KEYS))}"
        )
    cfg = Config()
    for key in ("select", "extend-select", "ignore"):
        if key in data:
            setattr(cfg, key.replace("-", "_"), _str_list(data[key], key, where))
    severity = data.get("severity", {})
    if not isinstance(severity, dict):
        raise ConfigError(f"{where}: 'severity' must be a table of rule = \"error|warning|info\"")
    for selector, level in severity.items():
        if level not in LEVELS:
            raise ConfigError(f"{where}: severity of {selector!r} must be one of {', '.join(LEVELS)}, not {level!r}")
    cfg.severity = dict(severity)
    for key, attr in (
        ("all-stages", "all_stages"),
        ("cache", "cache"),
        ("plugins", "plugins"),
        ("dedup", "dedup"),
        ("group", "group"),
    ):
        if key in data:
            if not isinstance(data[key], bool):
                raise ConfigError(f"{where}: '{key}' must be true or false")
            setattr(cfg, attr, data[key])
    if "jobs" in data:
        if not isinstance(data["jobs"], int) or isinstance(data["jobs"], bool) or data["jobs"] < 0:
            raise ConfigError(f"{where}: 'jobs' must be a whole number >= 0 (0: one per core)")
        cfg.jobs = data["jobs"]
    if "rule-timeout" in data:
        value = data["rule-timeout"]
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
            raise ConfigError(f"{where}: 'rule-timeout' must be a number of seconds >= 0 (0: no limit)")
        cfg.rule_timeout = value
    if "cache-dir" in data:
        if not isinstance(data["cache-dir"], str):
            raise ConfigError(f"{where}: 'cache-dir' must be a path")
        cfg.cache_dir = data["cache-dir"]
    suppress = data.get("suppress", [])
    if not isinstance(suppress, list):
        raise ConfigError(
            f'{where}: \'suppress\' must be an array of tables {{rule = "RC001", scope = "regex", reason = "..."}}'
        )
    for i, entry in enumerate(suppress):
        cfg.suppress.append(_suppression(entry, f"{where}: suppress[{i}]"))
    return cfg


def _suppression(entry, where: str) -> Suppression:
    if not isinstance(entry, dict):
        raise ConfigError(f'{where} must be a table {{rule = "RC001", scope = "regex", reason = "..."}}')
    extra = sorted(set(entry) - {"rule", "scope", "path", "reason"})
    if extra:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(map(repr, extra))}; known: rule, scope, path, reason")
    if not entry.get("scope") and not entry.get("path"):
        raise ConfigError(f"{where}: 'scope' or 'path' (a regular expression) is required")
    for key in ("scope", "path"):
        if key not in entry:
            continue
        if not isinstance(entry[key], str) or not entry[key]:
            raise ConfigError(f"{where}: '{key}' must be a regular expression")
        try:
            re.compile(entry[key])
        except re.error as exc:
            raise ConfigError(f"{where}: '{key}' is not a valid regular expression: {exc}") from None
    for key in ("rule", "reason"):
        if not isinstance(entry.get(key, ""), str):
            raise ConfigError(f"{where}: '{key}' must be a string")
    return Suppression(
        scope=entry.get("scope", ""),
        rule=entry.get("rule", ""),
        reason=entry.get("reason", ""),
        path=entry.get("path", ""),
    )


def load_config(path: str | Path | None = None, starts: list[str] | None = None) -> tuple[Config, Path | None]:
    """The Config of ``path`` or, without one, of the file found upward from ``starts``
    (defaults: Config() and None)."""
    if path is not None:
        from pathlib import Path

        p = Path(path)
        if not p.is_file():
            raise ConfigError(f"{path}: no such config file")
        data = settings_in(p)
        if data is None:
            raise ConfigError(f"{path}: has no [tool.irlint] table")
        return config_from_dict(data, str(path)), p
    found = find_config(starts if starts is not None else [os.getcwd()])
    if found is None:
        return Config(), None
    return config_from_dict(settings_in(found) or {}, shown(found)), found


def shown(path: Path) -> str:
    """A config file as messages name it: relative to the working directory when it is below it."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return str(path)
    return str(path) if rel.startswith("..") else rel


def check_selectors(cfg: Config, known: list, source: str | Path | None = None) -> None:
    """Every rule selector of ``cfg`` must match one of the ``known`` rule classes; the error names
    the file and key it came from (``source``: the config file, None for command-line values)."""
    table = ""
    if source is not None:
        from pathlib import Path  # a config file is in use: find_config has loaded it

        table = "[tool.irlint] " if Path(source).name == "pyproject.toml" else ""
    where = f"{source}: {table}" if source is not None else ""
    places = [
        (key, sel)
        for key, values in (
            ("select", cfg.select),
            ("extend-select", cfg.extend_select),
            ("ignore", cfg.ignore),
            ("severity", list(cfg.severity)),
        )
        for sel in values
    ]
    places += [(f"suppress[{i}].rule", s.rule) for i, s in enumerate(cfg.suppress) if s.rule]
    for key, sel in places:
        if sel.strip().upper() != "ALL" and not any(_selector_matches(sel, c.code, c.name) for c in known):
            raise ConfigError(f"{where}{key}: unknown rule selector {sel!r} (see `irlint rules`)")


def validate(cfg: Config, known: list) -> None:
    """Everything ``config_from_dict`` checks, for a Config built in Python (the API): raises
    ConfigError rather than lint with settings that mean nothing."""
    for key in ("select", "extend_select", "ignore"):
        values = getattr(cfg, key)
        if (
            isinstance(values, str)
            or not isinstance(values, (list, tuple))
            or not all(isinstance(v, str) for v in values)
        ):
            raise ConfigError(f"{key}: must be a list of rule codes, prefixes or names")
    if not isinstance(cfg.severity, dict):
        raise ConfigError("severity: must be a dict of rule selector -> error|warning|info")
    for selector, level in cfg.severity.items():
        if level not in LEVELS:
            raise ConfigError(f"severity of {selector!r} must be one of {', '.join(LEVELS)}, not {level!r}")
    if not isinstance(cfg.jobs, int) or isinstance(cfg.jobs, bool) or cfg.jobs < 0:
        raise ConfigError("jobs: must be a whole number >= 0 (0: one per core)")
    if not isinstance(cfg.rule_timeout, (int, float)) or isinstance(cfg.rule_timeout, bool) or cfg.rule_timeout < 0:
        raise ConfigError("rule_timeout: must be a number of seconds >= 0 (0: no limit)")
    for i, s in enumerate(cfg.suppress):
        if not isinstance(s, Suppression):
            raise ConfigError(f"suppress[{i}]: must be a Suppression")
        try:
            re.compile(s.scope)
        except (re.error, TypeError) as exc:
            raise ConfigError(f"suppress[{i}]: 'scope' is not a valid regular expression: {exc}") from None
    check_selectors(cfg, known)


def to_toml(cfg: Config, table: str = "") -> str:
    """The settings as an irlint.toml (top level), or as the ``table`` of a pyproject.toml
    (``tool.irlint``): the same keys either way."""
    head = [f"[{table}]"] if table else []
    sub = f"{table}." if table else ""
    lines = head + [
        f"select = {_toml_value(cfg.select)}",
        f"extend-select = {_toml_value(cfg.extend_select)}",
        f"ignore = {_toml_value(cfg.ignore)}",
        f"all-stages = {_toml_value(cfg.all_stages)}",
        f"jobs = {cfg.jobs}",
        f"cache = {_toml_value(cfg.cache)}",
    ]
    if cfg.cache_dir:
        lines.append(f"cache-dir = {_toml_value(cfg.cache_dir)}")
    lines.append(f"plugins = {_toml_value(cfg.plugins)}")
    lines.append(f"dedup = {_toml_value(cfg.dedup)}")
    lines.append(f"group = {_toml_value(cfg.group)}")
    lines.append(f"rule-timeout = {_toml_value(cfg.rule_timeout)}")
    lines += ["", f"[{sub}severity]"] + [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in sorted(cfg.severity.items())]
    for s in cfg.suppress:
        lines += ["", f"[[{sub}suppress]]", f"rule = {_toml_value(s.rule)}"]
        lines += [f"scope = {_toml_value(s.scope)}"] if s.scope else []
        lines += [f"path = {_toml_value(s.path)}"] if s.path else []
        lines += [f"reason = {_toml_value(s.reason)}"]
    return "\n".join(lines) + "\n"


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else _toml_value(key)


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    import json  # only `irlint config` writes TOML

    # a TOML basic string is a JSON string for the characters that matter here
    return json.dumps(str(value), ensure_ascii=False)
