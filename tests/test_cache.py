"""The lint cache: hits for unchanged input, misses for any change, never in the way."""

from __future__ import annotations

import json
import os
import pickle
import shutil
from pathlib import Path

import pytest

import irlint.runner.engine as engine
from irlint.findings import (
    ChainStep,
    CommWaste,
    Finding,
    FixCost,
    Fixes,
    NoKeyOp,
    OpFix,
    OpFlops,
    RecomputeFix,
    Related,
    RootCauseFix,
    RootFix,
    SourceLine,
    Stake,
)
from irlint.rule import Rule
from irlint.runner.cache import LintCache, default_dir
from irlint.runner.config import Config
from irlint.runner.engine import lint

CASE = Path(__file__).parent / "fixtures" / "corpus" / "s2_ffn_3d_reshape_blocks"
DUMP = "opt_pass_19_add_recomputation_0033.ir"


class RecomputedNodes(Rule):
    """Test probe: every cnode marked for recompute; counts the files it was run on."""

    code = "TST901"
    name = "test-recomputed-nodes"
    checked: list[str] = []

    def check(self, ir):
        type(self).checked.append(ir.path)
        for key in ir.cnodes():
            if ir[key]["cnode_attrs"].get("recompute") is True:
                yield self.finding(ir, key, f"{ir[key]['op']} is recomputed")


class NodeCount(Rule):
    """Test probe: a second rule, so that the rule set can change between runs."""

    code = "TST902"
    name = "test-node-count"

    def check(self, ir):
        keys = list(ir.cnodes())
        if keys:
            yield self.finding(ir, keys[0], f"{len(keys)} cnodes")


@pytest.fixture
def rules(monkeypatch):
    chosen = [RecomputedNodes()]
    monkeypatch.setattr(engine, "active_rules", lambda config: list(chosen))
    RecomputedNodes.checked = []
    return chosen


@pytest.fixture
def dump(tmp_path):
    folder = tmp_path / "graph"
    shutil.copytree(CASE, folder)
    path = folder / DUMP
    old = path.stat()
    # an old mtime: the cache trusts a file's stat only once it can no longer change in the same tick
    os.utime(path, ns=(old.st_atime_ns, old.st_mtime_ns - 10**10))
    return path


@pytest.fixture(autouse=True)
def no_user_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("IRLINT_CACHE_DIR", str(tmp_path / "env-cache"))


def _entries(folder: Path) -> list[Path]:
    """Every file irlint wrote in the cache folder, but its tag."""
    return [p for p in folder.rglob("*") if p.is_file() and p.name != "CACHEDIR.TAG"] if folder.exists() else []


def _lint(path, cache_dir, **kw):
    report = lint([str(path)], Config(cache_dir=str(cache_dir), jobs=1, **kw))
    return [f.to_dict() for f in report.findings], [d.to_dict() for d in report.diagnostics]


def test_second_run_comes_from_the_cache(rules, dump, tmp_path):
    cache = tmp_path / "cache"
    first = _lint(dump, cache)
    assert first[0], "the probe rule finds the recompute-marked nodes of the fixture"
    assert RecomputedNodes.checked == [str(dump)]
    assert _entries(cache)
    second = _lint(dump, cache)
    assert second == first
    assert RecomputedNodes.checked == [str(dump)]  # not run again


def test_content_change_is_a_miss_even_with_same_size_and_mtime(rules, dump, tmp_path):
    cache = tmp_path / "cache"
    before, _ = _lint(dump, cache)
    st = dump.stat()
    text = dump.read_bytes()
    changed = text.replace(b"recompute: Bool(1)", b"recompute: Bool(0)")
    assert changed != text and len(changed) == len(text)
    dump.write_bytes(changed)
    os.utime(dump, ns=(st.st_atime_ns, st.st_mtime_ns))
    after, _ = _lint(dump, cache)
    assert len(RecomputedNodes.checked) == 2
    assert len(after) < len(before)
    # and back: the first entry is still valid for the first content
    dump.write_bytes(text)
    assert _lint(dump, cache)[0] == before


def test_rule_set_change_is_a_miss(rules, dump, tmp_path):
    cache = tmp_path / "cache"
    _lint(dump, cache)
    rules.append(NodeCount())
    findings, _ = _lint(dump, cache)
    assert any(f["code"] == "TST902" for f in findings)
    assert len(RecomputedNodes.checked) == 2


def test_a_copied_file_is_found_by_content(rules, dump, tmp_path):
    cache = tmp_path / "cache"
    first, _ = _lint(dump, cache)
    os.utime(dump)  # new stat, same bytes
    assert _lint(dump, cache)[0] == first
    assert len(RecomputedNodes.checked) == 1


def test_no_cache_writes_nothing(rules, dump, tmp_path):
    cache = tmp_path / "cache"
    _lint(dump, cache, cache=False)
    _lint(dump, cache, cache=False)
    assert not cache.exists()
    assert not (tmp_path / "env-cache").exists()
    assert len(RecomputedNodes.checked) == 2


def test_bad_input_is_never_cached(rules, dump, tmp_path):
    data = dump.read_bytes()
    dump.write_bytes(data[: len(data) // 2])  # a dump cut off mid-way
    cache = tmp_path / "cache"
    first = _lint(dump, cache)
    second = _lint(dump, cache)
    assert first == second and first[1]  # same diagnostics, read again each time
    assert _entries(cache) == []
    assert len(RecomputedNodes.checked) == 2


def test_corrupt_entries_are_ignored_and_replaced(rules, dump, tmp_path):
    cache = tmp_path / "cache"
    first = _lint(dump, cache)
    entries = _entries(cache)
    assert entries
    for i, p in enumerate(entries):
        p.write_bytes([b"", b"\x80\x05garbage", b"not a pickle at all"][i % 3])
    assert _lint(dump, cache) == first
    assert len(RecomputedNodes.checked) == 2
    assert _lint(dump, cache) == first  # rewritten entries are good again
    assert len(RecomputedNodes.checked) == 2


def test_cache_folder_can_be_deleted_between_runs(rules, dump, tmp_path):
    cache = tmp_path / "cache"
    first = _lint(dump, cache)
    shutil.rmtree(cache)
    assert _lint(dump, cache) == first


def test_cache_dir_precedence(tmp_path, monkeypatch):
    monkeypatch.setenv("IRLINT_CACHE_DIR", str(tmp_path / "env"))
    assert default_dir(str(tmp_path / "cfg")) == tmp_path / "cfg"
    assert default_dir(None) == tmp_path / "env"
    monkeypatch.delenv("IRLINT_CACHE_DIR")
    assert default_dir(None).name == "irlint"


def test_env_cache_dir_is_used(rules, dump, tmp_path):
    lint([str(dump)], Config(jobs=1))
    assert _entries(tmp_path / "env-cache")


def test_prune_keeps_the_cache_under_its_bound_newest_first(tmp_path):
    store = LintCache(tmp_path / "c", max_bytes=10_000)
    keys = [f"{i:064x}" for i in range(20)]
    for n, key in enumerate(keys):
        store.put(key, ([_finding(message="x" * 1000, line=n)], []), "d.ir")
        os.utime(store._file("lint", key), (1_000_000 + n, 1_000_000 + n))
    store.prune()
    left = _entries(tmp_path / "c")
    assert 0 < sum(p.stat().st_size for p in left) <= 10_000
    assert store.get(keys[-1], "d.ir") == ([_finding(message="x" * 1000, line=19)], [])
    assert store.get(keys[0], "d.ir") is None


def test_temporary_files_of_a_killed_run_are_removed(tmp_path):
    store = LintCache(tmp_path / "c")
    store.put("cd" * 32, ([_finding()], []), "d.ir")
    entry = store._file("lint", "cd" * 32)
    old, fresh = entry.parent / f".{entry.name}.k1ll3d.tmp", entry.parent / f".{entry.name}.wr1t1ng.tmp"
    old.write_text("{")
    fresh.write_text("{")
    os.utime(old, (1_000_000, 1_000_000))
    store.prune()
    assert not old.exists() and fresh.exists() and entry.exists()  # a fresh one may be another run's
    assert store.clear() == (2, 0) and not fresh.exists() and not entry.exists()


def _finding(**kw) -> Finding:
    base = dict(
        code="RC001",
        rule="r",
        severity="warning",
        file="d.ir",
        line=3,
        graph="@g",
        node="%1",
        op="Mul",
        scope="Default/a/Mul-op1",
        message="m",
        hint="h",
        stage="validate",
        related=(Related("d.ir", 4, "%2", "Add", "Default/b"), Related("other.ir", 5, "%3", "Cast", "x")),
        identity=("a", 1, (2.5, None, True), ["l"]),
        facts=(("note", {"k": [1]}), ("shape", (1, 2))),
        bytes_at_stake=4096,
        # the typed facts go through the entry's "extra" and come back as they were
        fixes=Fixes(
            recompute=RecomputeFix(("a\\.b",), 3, (2, 3), (NoKeyOp("%4", "Reshape", "m.py:3"),)),
            ops=(OpFix("%1", in_strategy="((1, 8),)", source=SourceLine("m.py", 9)), OpFix("%2", in_layout="x")),
            root_cause=RootCauseFix("batch-merge", "why", RootFix(batch_size=1, sequences_per_replica=2)),
            drop_select_recompute=("c",),
        ),
        waste=CommWaste(10, 100, 8, 2, True, (ChainStep("%1", "AllGather", "a", "b", 8),)),
        stake=Stake(8192, 2, 4, 2, 1024),
        fix_cost=FixCost(10, 6, 4, 1000, 0.01, (OpFlops("%1", "Mul", "@g", 4),)),
    )
    base.update(kw)
    return Finding(**base)


def test_an_entry_is_plain_json_and_round_trips_with_its_fingerprint(tmp_path):
    store = LintCache(tmp_path / "c")
    f = _finding()
    store.put("ab" * 32, ([f], []), "d.ir")
    text = store._file("lint", "ab" * 32).read_text()
    assert json.loads(text)["findings"][0]["file"] == ""  # the file's own name is not stored
    back = store.get("ab" * 32, "renamed/d.ir")[0][0]
    assert back.file == "renamed/d.ir" and back.related[0].file == "renamed/d.ir"
    assert back.related[1].file == "other.ir"
    assert back.with_(file="d.ir", related=f.related) == f and back.fingerprint == f.fingerprint
    assert back.bytes_at_stake == 4096


def test_a_pickle_planted_in_the_cache_never_runs(rules, dump, tmp_path):
    cache = tmp_path / "cache"
    first = _lint(dump, cache)
    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    for p in _entries(cache):
        p.write_bytes(pickle.dumps(Payload()))
    assert _lint(dump, cache) == first
    assert not marker.exists()
    assert len(RecomputedNodes.checked) == 2  # the entries were misses


@pytest.mark.parametrize("entry", [["notalist", 5], {"key": "?", "findings": "notalist"}, "a" * 64, None, 42])
def test_a_well_formed_entry_of_the_wrong_shape_is_dropped(rules, dump, tmp_path, entry):
    cache = tmp_path / "cache"
    first = _lint(dump, cache)
    lint_entries = [p for p in _entries(cache) if p.parent.parent.name == "lint"]
    for p in lint_entries:
        data = json.loads(p.read_text())
        shaped = entry if entry != {"key": "?", "findings": "notalist"} else {**entry, "key": data["key"]}
        p.write_text(json.dumps(shaped))
    assert _lint(dump, cache) == first
    assert len(RecomputedNodes.checked) == 2
    assert _lint(dump, cache) == first  # replaced by a good entry: later runs are hits
    assert len(RecomputedNodes.checked) == 2


def test_the_same_dump_from_another_working_directory_is_a_hit(rules, dump, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    absolute, _ = _lint(dump, cache)
    monkeypatch.chdir(dump.parent.parent)
    relative, _ = _lint(Path(dump.parent.name) / dump.name, cache)
    assert len(RecomputedNodes.checked) == 1  # the key is the content, not the path as typed
    assert [f["file"] for f in relative] == [str(Path(dump.parent.name) / dump.name)] * len(absolute)


def test_same_file_under_another_path_keeps_its_own_names(rules, dump, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    absolute, _ = _lint(dump, cache)
    monkeypatch.chdir(dump.parent.parent)
    relative, _ = _lint(Path(dump.parent.name) / dump.name, cache)
    assert {f["file"] for f in absolute} == {str(dump)}
    assert {f["file"] for f in relative} == {str(Path(dump.parent.name) / dump.name)}


def test_the_same_content_under_another_stage_name_is_a_miss(rules, dump, tmp_path):
    # findings carry the stage they were read in: a renamed copy must not reuse them
    cache = tmp_path / "cache"
    first, _ = _lint(dump, cache)
    renamed = dump.parent / "graph.ir"
    shutil.copy(dump, renamed)
    second, _ = _lint(renamed, cache)
    assert len(RecomputedNodes.checked) == 2
    assert {f["stage"] for f in first} != {f["stage"] for f in second}


def test_real_findings_come_back_from_the_cache_unchanged(tmp_path):
    # every field, bytes_at_stake and the rule-specific extras included
    config = dict(cache_dir=str(tmp_path / "c"), jobs=1, plugins=False)
    cold = [f.to_dict() for f in lint([str(CASE)], Config(**config)).findings]
    warm = [f.to_dict() for f in lint([str(CASE)], Config(**config)).findings]
    assert cold and warm == cold
    assert any("bytes_at_stake" in f for f in cold)
    assert any(p.parent.parent.name == "lint" for p in (tmp_path / "c").rglob("*") if p.is_file())


def test_a_rule_helper_module_change_is_a_miss(tmp_path, monkeypatch):
    # rules import shared helpers (rules/recompute/evidence.py): editing one must not serve stale findings
    import importlib

    from irlint.runner import hashes

    pkg = tmp_path / "acme_rules"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "evidence.py").write_text("LIMIT = 1\n")
    (pkg / "rule.py").write_text("from . import evidence\n\nclass Acme:\n    code = 'XX001'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    rule = importlib.import_module("acme_rules.rule").Acme()
    monkeypatch.setattr(hashes, "_RULE_HASHES", {})
    monkeypatch.setattr(hashes, "_TREE_HASHES", {})
    before = hashes.rules_hash([rule])
    (pkg / "evidence.py").write_text("LIMIT = 2\n")
    monkeypatch.setattr(hashes, "_RULE_HASHES", {})
    monkeypatch.setattr(hashes, "_TREE_HASHES", {})
    assert hashes.rules_hash([rule]) != before
    # and a built-in rule stands for the whole built-in rules package
    from irlint.rule import load_rules

    builtin = next(r for r in load_rules(plugins=False) if r.code == "RC001")
    root = hashes._source_root(builtin.__module__)
    assert (root / "recompute" / "evidence.py").is_file()


# --- issue 21: `irlint clean` removes only what irlint wrote; entries are bound to their content -------
def _clean(folder):
    from click.testing import CliRunner

    from irlint.cli import main

    return CliRunner().invoke(main, ["clean", "--cache-dir", str(folder)])


def test_clean_leaves_a_folder_that_is_not_a_cache_alone(tmp_path):
    victim = tmp_path / "victim"
    planted = {
        victim / "p/tools/lint/rules/custom_rule.py": "x",
        victim / "p/data/stat/2024/results.csv": "y",
        victim / "docs/.draft.tmp": "z",
        victim / "v3/lint/ab" / ("ab" * 32): "{}",
    }
    for path, text in planted.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    result = _clean(victim)
    assert result.exit_code == 2 and "does not look like irlint's cache" in result.output
    assert all(path.read_text() == text for path, text in planted.items())


def test_clean_removes_only_entries_in_the_layout_and_content_irlint_writes(rules, dump, tmp_path):
    cache = tmp_path / "cache"
    _lint(dump, cache)
    entries = _entries(cache)
    assert (cache / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    lint_entry = next(p for p in entries if p.parent.parent.name == "lint")
    foreign = {
        cache / "notes.txt": "mine",
        lint_entry.parent / "README": "mine",
        cache / "v3/lint/zz" / ("ab" * 32): "{}",  # not under its key's folder
        lint_entry.parent / ("ab" * 32): json.dumps({"key": "x"}),  # an entry name, other content
        cache / "v3/lint/data/stat/x.csv": "1,2",
    }
    for path, text in foreign.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    result = _clean(cache)
    assert result.exit_code == 0, result.output
    assert f"removed {len(entries)} cache entries" in result.output and "5 other files left alone" in result.output
    assert all(path.read_text() == text for path, text in foreign.items())
    assert not any(p.exists() for p in entries)


def test_a_cleaned_cache_leaves_no_file_and_a_second_clean_is_fine(rules, dump, tmp_path):
    cache = tmp_path / "cache"
    _lint(dump, cache)
    assert _clean(cache).exit_code == 0
    assert not [p for p in cache.rglob("*") if p.is_file()]  # the tag too
    again = _clean(cache)
    assert again.exit_code == 0 and "nothing to remove" in again.output


def test_a_forged_stat_entry_never_gives_a_dump_another_contents_results(rules, dump, tmp_path):
    cache = tmp_path / "cache"
    found, _ = _lint(dump, cache)
    assert found
    (tmp_path / "other").mkdir()
    clean_dump = tmp_path / "other" / dump.name  # same stage, other content
    clean_dump.write_bytes(dump.read_bytes().replace(b"recompute: Bool(1)", b"recompute: Bool(0)"))
    os.utime(clean_dump, ns=(0, dump.stat().st_mtime_ns))
    assert _lint(clean_dump, cache)[0] == []
    clean_digest = LintCache(cache).known_hash(str(clean_dump))
    assert clean_digest
    # the stat key is computable from the dump's stat: point it at the clean content's hash
    for p in _entries(cache):
        if p.parent.parent.name == "stat" and json.loads(p.read_text()) != clean_digest:
            p.write_text(json.dumps(clean_digest))
    assert LintCache(cache).known_hash(str(dump)) == clean_digest
    assert _lint(dump, cache)[0] == found


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX permissions")
@pytest.mark.parametrize("where", ["", "v3", "v3/lint"])
def test_a_cache_folder_other_users_can_write_is_not_used(rules, dump, tmp_path, where, capsys):
    from click.testing import CliRunner

    from irlint.cli import main

    cache = tmp_path / "cache"
    _lint(dump, cache)
    os.chmod(cache / where, 0o777)
    before = {p: p.stat().st_mtime_ns for p in _entries(cache)}
    result = CliRunner().invoke(main, [str(dump), "--cache-dir", str(cache), "-j", "1"])
    assert result.exit_code == 0 or result.exit_code == 1
    assert result.output.count("not used") == 1 and "writable by other users" in result.output
    assert len(RecomputedNodes.checked) == 2  # linted, not answered from that folder
    assert {p: p.stat().st_mtime_ns for p in _entries(cache)} == before  # nor written to


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX permissions")
def test_entries_are_private_and_a_group_writable_entry_is_not_trusted(rules, dump, tmp_path):
    cache = tmp_path / "cache"
    first = _lint(dump, cache)
    assert all(p.stat().st_mode & 0o077 == 0 for p in _entries(cache))
    assert (cache / "v3").stat().st_mode & 0o077 == 0
    for p in _entries(cache):
        os.chmod(p, 0o666)
    assert _lint(dump, cache) == first
    assert len(RecomputedNodes.checked) == 2


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX permissions")
def test_a_folder_writable_only_by_the_users_own_group_is_used(rules, dump, tmp_path, monkeypatch):
    import irlint.runner.cache as cache_module

    cache = tmp_path / "cache"
    _lint(dump, cache)
    os.chmod(cache, 0o770)
    monkeypatch.setattr(cache_module, "_private_group", lambda gid: True)  # umask 002, one group per user
    assert cache_module.unsafe_folder(cache) is None
    monkeypatch.setattr(cache_module, "_private_group", lambda gid: False)
    assert "writable by other users" in cache_module.unsafe_folder(cache)


def test_clean_does_not_follow_links_out_of_the_cache(rules, dump, tmp_path):
    cache = tmp_path / "cache"
    _lint(dump, cache)
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(cache / "v3", elsewhere)  # entries in irlint's layout, but not in this cache
    kept = _entries(elsewhere)
    (cache / "v3" / "other").symlink_to(elsewhere / "lint")
    shutil.rmtree(cache / "v3" / "stat")
    (cache / "v3" / "stat").symlink_to(elsewhere / "stat")
    assert _clean(cache).exit_code == 0
    assert all(p.exists() for p in kept)
