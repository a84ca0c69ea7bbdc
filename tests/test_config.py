"""Configuration files: discovery, validation, and the TOML that `config --show` prints."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from irlint.runner.config import (
    Config,
    ConfigError,
    check_selectors,
    config_from_dict,
    find_config,
    load_config,
    settings_in,
    to_toml,
)


def test_keys_map_to_config():
    cfg = config_from_dict(
        {
            "select": ["RC"],
            "extend-select": ["PC001"],
            "ignore": ["RC004"],
            "severity": {"RC002": "error"},
            "all-stages": True,
            "jobs": 4,
            "cache": False,
            "suppress": [{"rule": "PC001", "scope": "embedding-", "reason": "on purpose"}],
        }
    )
    assert cfg.select == ["RC"] and cfg.extend_select == ["PC001"] and cfg.ignore == ["RC004"]
    assert cfg.severity_for("RC002", "x", "warning") == "error"
    assert cfg.all_stages and cfg.jobs == 4 and not cfg.cache
    assert cfg.suppressed("PC001", "redundant-redistribution-chain", "Default/network-x/embedding-Embedding/Gather")
    assert not cfg.suppressed("RC001", "recompute-not-applied", "Default/network-x/embedding-Embedding/Gather")


@pytest.mark.parametrize(
    "data, message",
    [
        ({"selct": ["RC"]}, "unknown key(s) 'selct'"),
        ({"select": [1]}, "'select' must be an array"),
        (
            {"select": "RC"},
            "'select' must be an array of rule codes, prefixes or names (select = [\"RC\"]), not a string",
        ),
        ({"ignore": "RC004"}, "'ignore' must be an array"),
        ({"severity": {"RC001": "fatal"}}, "must be one of error, warning, info"),
        ({"severity": "error"}, "'severity' must be a table"),
        ({"jobs": -1}, "'jobs' must be a whole number"),
        ({"jobs": True}, "'jobs' must be a whole number"),
        ({"cache": "yes"}, "'cache' must be true or false"),
        ({"suppress": [{"rule": "RC001"}]}, "'scope' or 'path' (a regular expression) is required"),
        ({"suppress": [{"scope": "a("}]}, "not a valid regular expression"),
        ({"suppress": [{"scope": "a", "why": "x"}]}, "unknown key(s) 'why'"),
        ({"suppress": {"scope": "a"}}, 'must be an array of tables {rule = "RC001", scope'),
    ],
)
def test_invalid(data, message):
    with pytest.raises(ConfigError) as err:
        config_from_dict(data, "irlint.toml")
    assert message in str(err.value) and str(err.value).startswith("irlint.toml")


def test_invalid_toml(tmp_path):
    (tmp_path / "irlint.toml").write_text("select = [\n")
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_config(starts=[str(tmp_path)])


def test_discovery_upward_and_precedence(tmp_path):
    deep = tmp_path / "a" / "b" / "graph"
    deep.mkdir(parents=True)
    (tmp_path / "pyproject.toml").write_text('[tool.irlint]\nselect = ["PC"]\n')
    (tmp_path / "a" / "pyproject.toml").write_text('[project]\nname = "x"\n')  # no [tool.irlint]: passed over
    assert find_config([str(deep)]) == tmp_path / "pyproject.toml"
    (tmp_path / "a" / "b" / "irlint.toml").write_text('select = ["RC"]\n')
    cfg, source = load_config(starts=[str(deep)])
    assert source == tmp_path / "a" / "b" / "irlint.toml" and cfg.select == ["RC"]
    (deep / "pyproject.toml").write_text('[tool.irlint]\nignore = ["RC004"]\n')
    (deep / "irlint.toml").write_text('ignore = ["RC003"]\n')
    assert load_config(starts=[str(deep)])[0].ignore == ["RC003"]  # irlint.toml wins in one folder


def test_first_path_then_working_directory(tmp_path):
    dumps, cwd = tmp_path / "dumps", tmp_path / "cwd"
    dumps.mkdir()
    cwd.mkdir()
    (cwd / "irlint.toml").write_text('ignore = ["RC004"]\n')
    assert load_config(starts=[str(dumps), str(cwd)])[1] == cwd / "irlint.toml"


def test_explicit_file(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    with pytest.raises(ConfigError, match="no \\[tool.irlint\\] table"):
        load_config(tmp_path / "pyproject.toml")
    with pytest.raises(ConfigError, match="no such config file"):
        load_config(tmp_path / "missing.toml")


def test_defaults_without_a_file(tmp_path):
    if find_config([str(tmp_path)]) is not None:
        pytest.skip("a config file above the temporary folder")
    assert load_config(starts=[str(tmp_path)]) == (Config(), None)


def test_to_toml_round_trip(tmp_path):
    cfg = config_from_dict(
        {
            "select": ["RC", "PC001"],
            "ignore": ["recompute-tag-unused"],
            "severity": {"RC002": "error", "recompute-downcast": "info"},
            "jobs": 2,
            "suppress": [{"rule": "PC001", "scope": 'a\\.b "quoted"', "reason": "ünïcode"}],
        }
    )
    path = tmp_path / "irlint.toml"
    path.write_text(to_toml(cfg), encoding="utf-8")
    assert settings_in(path) is not None
    again, _ = load_config(path)
    assert again == cfg


def _deny_inside(monkeypatch, locked):
    """As a non-root user sees a folder of mode 000: the folder itself can be stat'ed, nothing in it
    (os.stat: what pathlib and os.path look with)."""
    real_stat = os.stat

    def stat(path, *args, **kw):
        name = os.fspath(path) if isinstance(path, (str, os.PathLike)) else None
        if isinstance(name, str) and Path(locked) in Path(name).parents:
            raise PermissionError(13, "Permission denied", name)
        return real_stat(path, *args, **kw)

    monkeypatch.setattr(os, "stat", stat)


def test_unlistable_folder_is_no_config_there(tmp_path, monkeypatch):
    locked = tmp_path / "nolist"
    locked.mkdir()
    (locked / "irlint.toml").write_text('select = ["RC"]\n')
    (tmp_path / "irlint.toml").write_text('ignore = ["RC004"]\n')
    _deny_inside(monkeypatch, locked)
    assert find_config([str(locked)]) == tmp_path / "irlint.toml"
    assert find_config([str(locked / "x.ir")]) == tmp_path / "irlint.toml"


def test_suppress_without_rule_applies_to_every_rule():
    cfg = config_from_dict({"suppress": [{"scope": "embedding-"}]})
    assert cfg.suppressed("RC001", "recompute-not-applied", "Default/embedding-Embedding/Gather")
    assert cfg.suppressed("PC001", "redundant-redistribution-chain", "Default/embedding-Embedding/Gather")
    assert not cfg.suppressed("PC001", "redundant-redistribution-chain", "Default/attention-Attention/MatMul")


class _Rule:
    code, name = "RC001", "recompute-not-applied"


@pytest.mark.parametrize(
    "data, source, message",
    [
        ({"select": ["QQ"]}, "pyproject.toml", "pyproject.toml: [tool.irlint] select: unknown rule selector 'QQ'"),
        ({"extend-select": ["RC", "QQ"]}, "irlint.toml", "irlint.toml: extend-select: unknown rule selector 'QQ'"),
        ({"ignore": ["QQ"]}, "a/irlint.toml", "a/irlint.toml: ignore: unknown rule selector 'QQ'"),
        ({"severity": {"QQ": "error"}}, "irlint.toml", "irlint.toml: severity: unknown rule selector 'QQ'"),
        (
            {"suppress": [{"scope": "x"}, {"rule": "QQ", "scope": "x"}]},
            "pyproject.toml",
            "pyproject.toml: [tool.irlint] suppress[1].rule: unknown rule selector 'QQ'",
        ),
    ],
)
def test_unknown_selector_names_file_and_key(data, source, message):
    with pytest.raises(ConfigError) as err:
        check_selectors(config_from_dict(data, source), [_Rule], source)
    assert str(err.value).startswith(message)


def test_known_selectors_pass():
    check_selectors(
        config_from_dict(
            {"select": ["ALL", "RC", "recompute-not-applied"], "ignore": ["rc001"], "suppress": [{"scope": "x"}]}
        ),
        [_Rule],
        "irlint.toml",
    )
