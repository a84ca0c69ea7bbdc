"""The lint run: stage choice per rule, one finding per problem per folder, broken rules."""

from __future__ import annotations

import gc
import shutil
import weakref
from pathlib import Path

import pytest

import irlint.runner.engine as engine
import irlint.runner.lint_file as lint_file
from irlint.rule import Rule, load_rules
from irlint.runner.config import Config

CORPUS = Path(__file__).parent / "fixtures" / "corpus"
S2 = CORPUS / "s2_ffn_3d_reshape_blocks"


class _Broken(Rule):
    code = "XX999"
    name = "always-crashes"
    summary = "a rule with a bug"

    def check(self, ir):
        raise KeyError("no such attribute")
        yield  # pragma: no cover


def _config(**kw):
    return Config(cache=False, jobs=1, plugins=False, **kw)


def test_a_crashing_rule_becomes_a_diagnostic_and_the_others_still_run(monkeypatch):
    monkeypatch.setattr(engine, "load_rules", lambda plugins=True: [*load_rules(plugins=False), _Broken])
    report = engine.lint([str(S2 / "21_validate_0076.ir")], _config())
    assert [d.code for d in report.diagnostics] == ["IR011"]
    assert "XX999" in report.diagnostics[0].message and "KeyError" in report.diagnostics[0].message
    assert {f.code for f in report.findings} >= {"RC002"}


def test_a_folder_reads_only_the_stage_each_rule_needs():
    files, _ = engine.discover([str(S2)])
    rules = engine.active_rules(_config())
    todo = engine.plan(files, rules)
    assert sorted(Path(p).name for p in todo) == ["21_validate_0076.ir"]
    todo_all = engine.plan(files, rules, all_stages=True)
    assert len(todo_all) == len(files) == 5


def test_one_finding_per_problem_per_folder_even_with_all_stages():
    per_file = sum(len(engine.lint([f], _config()).findings) for f in map(str, sorted(S2.glob("*.ir"))))
    folder = engine.lint([str(S2)], _config(all_stages=True)).findings
    # opt_pass_19, opt_pass_20, validate (and graph_build for the Mul) each show the same problems
    assert per_file > len(folder)
    keys = [(f.rule, f.op, f.with_(stage="").fingerprint) for f in folder]
    assert len(keys) == len(set(keys))


def test_identical_rank_folders_are_reported_once_with_their_ranks(tmp_path):
    for r in range(4):
        shutil.copytree(S2, tmp_path / f"rank_{r}")
    single = engine.lint([str(S2)], _config()).findings
    merged = engine.lint([str(tmp_path)], _config()).findings
    assert len(merged) == len(single)
    assert all(f.ranks == (0, 1, 2, 3) for f in merged)


def test_a_broken_plugin_is_reported_and_a_clashing_code_is_refused(monkeypatch):
    import irlint.rule as rule_module

    class _EntryPoint:
        def __init__(self, name, obj):
            self.name, self._obj = name, obj

        def load(self):
            if isinstance(self._obj, Exception):
                raise self._obj
            return self._obj

    class Clash(Rule):
        code = "RC001"
        name = "my-clash"

    monkeypatch.setattr(
        rule_module,
        "entry_points",
        lambda group: [_EntryPoint("broken", ImportError("boom")), _EntryPoint("clash", Clash)],
    )
    rule_module._load_rules.cache_clear()
    try:
        # a one-op recompute cell: the built-in RC001 has a finding there
        report = engine.lint(
            [str(CORPUS / "ffn-jit-grad" / "31_validate_0035.ir")], Config(cache=False, jobs=1, plugins=True)
        )
    finally:
        rule_module._load_rules.cache_clear()
    problems = [d for d in report.diagnostics if d.code == "IR012"]
    assert len(problems) == 2
    assert "broken" in problems[0].message and "boom" in problems[0].message
    assert "RC001" in problems[1].message
    assert {f.code for f in report.findings} >= {"RC001"}  # the built-in RC001 still ran


def test_all_stages_keeps_each_problem_in_the_rules_preferred_stage():
    default = engine.lint([str(S2)], _config()).findings
    every = engine.lint([str(S2)], _config(all_stages=True)).findings
    assert [(f.code, Path(f.file).name, f.node) for f in every] == [
        (f.code, Path(f.file).name, f.node) for f in default
    ]


def test_a_damaged_ir_file_in_a_folder_is_reported_not_skipped(tmp_path):
    folder = tmp_path / "graph"
    shutil.copytree(S2, folder)
    (folder / "21_validate_0076.ir").write_bytes(bytes(range(256)) * 8)
    (folder / "notes.txt").write_text("not a dump")  # other files stay quiet
    report = engine.lint([str(folder)], _config())
    assert [(Path(d.file).name, d.code) for d in report.diagnostics] == [("21_validate_0076.ir", "IR009")]


def test_all_stages_reports_a_problem_once_even_when_its_chain_differs_between_stages():
    # the fp16 llama's backend graph wraps MatMuls in inserted Casts, so the chain around the
    # same Mul differs between validate and graph_build; it is still one problem
    folder = CORPUS / "llama-recompute-modes"
    default = engine.lint([str(folder)], _config()).findings
    every = engine.lint([str(folder)], _config(all_stages=True)).findings
    assert [(f.code, Path(f.file).name, f.node) for f in every] == [
        (f.code, Path(f.file).name, f.node) for f in default
    ]
    assert len({f.problem for f in every}) == len(every)


# --- issue 11: a misbehaving plugin costs its own findings only --------------------------------------
class _YieldsJunk(Rule):
    code = "XX997"
    name = "yields-junk"

    def check(self, ir):
        yield "x"
        yield None
        yield 42


class _Exits(Rule):
    code = "XX996"
    name = "exits"

    def check(self, ir):
        raise SystemExit(3)
        yield  # pragma: no cover


class _Hangs(Rule):
    code = "XX995"
    name = "hangs"

    def check(self, ir):
        while True:
            pass
        yield  # pragma: no cover


def _with(monkeypatch, *extra):
    monkeypatch.setattr(engine, "load_rules", lambda plugins=True: [*load_rules(plugins=False), *extra])


class _KeepsTrack(Rule):
    """Reads the graph's edges as rules do (networkx caches that view on the graph, and the view
    refers back to it) and keeps a weak reference to every model it checked."""

    code = "XX995"
    name = "keeps-track"
    summary = "remembers the models it saw"
    seen: list = []
    cycle = False

    def check(self, ir):
        list(ir.graph.out_edges)
        if self.cycle:
            ir.graph.graph["file"] = ir  # a plugin's reference cycle through the model
        self.seen.append(weakref.ref(ir))
        return
        yield  # pragma: no cover


class _MakesCycles(_KeepsTrack):
    code = "XX994"
    name = "makes-cycles"
    seen: list = []
    cycle = True


def _counting_collect(monkeypatch) -> list:
    calls = []
    real = gc.collect
    monkeypatch.setattr(lint_file.gc, "collect", lambda *a: calls.append(a) or real(*a))
    return calls


def test_each_model_is_freed_after_its_file_without_a_full_collection(monkeypatch):
    _with(monkeypatch, _KeepsTrack)
    _KeepsTrack.seen.clear()
    calls = _counting_collect(monkeypatch)
    gc.disable()  # only reference counting may free the models here
    try:
        engine.lint([str(S2)], _config(all_stages=True))
    finally:
        gc.enable()
    assert len(_KeepsTrack.seen) == len(engine.discover([str(S2)])[0]) > 1
    assert all(ref() is None for ref in _KeepsTrack.seen)
    assert calls == []


def test_a_model_a_rule_left_in_a_cycle_is_collected_before_the_next_file(monkeypatch):
    _with(monkeypatch, _MakesCycles)
    _MakesCycles.seen.clear()
    calls = _counting_collect(monkeypatch)
    gc.disable()  # only the engine's own collection may free them
    try:
        engine.lint([str(S2)], _config(all_stages=True))
    finally:
        gc.enable()
    assert len(calls) == len(_MakesCycles.seen) > 1
    assert all(ref() is None for ref in _MakesCycles.seen)


def test_a_rule_that_yields_something_else_than_a_finding(monkeypatch):
    _with(monkeypatch, _YieldsJunk)
    report = engine.lint([str(S2 / "21_validate_0076.ir")], _config())
    assert [d.code for d in report.diagnostics] == ["IR011"]
    assert "XX997" in report.diagnostics[0].message and "str 'x'" in report.diagnostics[0].message
    assert "RC002" in {f.code for f in report.findings}  # the built-in rules still ran


def test_a_rule_that_raises_system_exit(monkeypatch):
    _with(monkeypatch, _Exits)
    report = engine.lint([str(S2 / "21_validate_0076.ir")], _config())
    assert [d.code for d in report.diagnostics] == ["IR011"] and "SystemExit" in report.diagnostics[0].message
    assert "RC002" in {f.code for f in report.findings}  # the built-in rules still ran


def test_a_plugin_that_exits_at_import(monkeypatch):
    import irlint.rule as rule_module

    class _EntryPoint:
        name = "exits-at-import"

        def load(self):
            raise SystemExit(0)

    monkeypatch.setattr(rule_module, "entry_points", lambda group: [_EntryPoint()])
    rule_module._load_rules.cache_clear()
    try:
        report = engine.lint([str(S2 / "21_validate_0076.ir")], Config(cache=False, jobs=1, plugins=True))
    finally:
        rule_module._load_rules.cache_clear()
    assert [d.code for d in report.diagnostics] == ["IR012"] and "SystemExit" in report.diagnostics[0].message


def test_a_rule_that_hangs_is_stopped_at_the_time_limit(monkeypatch):
    import time

    _with(monkeypatch, _Hangs)
    start = time.monotonic()
    report = engine.lint([str(S2 / "21_validate_0076.ir")], _config(rule_timeout=0.5))
    assert time.monotonic() - start < 10
    assert [d.code for d in report.diagnostics] == ["IR011"] and "rule-timeout" in report.diagnostics[0].message
    assert "RC002" in {f.code for f in report.findings}  # the built-in rules still ran


# --- the API checks what the CLI checks ----------------------------------------------------------------
def test_the_api_takes_one_path_as_a_string():
    one = engine.lint(str(S2), _config())
    assert one.findings and one.files == engine.lint([str(S2)], _config()).files


@pytest.mark.parametrize(
    "config, message",
    [
        (dict(select=["QQ"]), "unknown rule selector 'QQ'"),
        (dict(severity={"RC001": "fatal"}), "one of error, warning, info"),
        (dict(select="RC"), "must be a list"),
        (dict(jobs=-1), "jobs"),
    ],
)
def test_the_api_validates_its_config(config, message):
    from irlint.runner.config import ConfigError

    with pytest.raises(ConfigError, match=message):
        engine.lint([str(S2)], Config(**{"cache": False, "plugins": False, **config}))


_SLOW_RULE = """
import os, time
from irlint.rule import Rule

class Slow(Rule):
    code = "XX994"
    name = "slow"

    def check(self, ir):
        open(os.path.join(os.environ["PIDS"], str(os.getpid())), "w").close()
        time.sleep(120)
        yield from ()
"""

_RUN_CLI = """
import sys
sys.path.insert(0, sys.argv[1])
import slowrule
import irlint.cli as cli
import irlint.runner.engine as engine
import irlint.runner.workers as workers
workers.PARALLEL_MIN_BYTES = 0
workers._cores = lambda: 4
engine.active_rules = lambda config: [slowrule.Slow()]
sys.argv = ["irlint", "-n", "-q", "-j", "2", "--rule-timeout", "0", *sys.argv[2:]]
cli.main()
"""


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGKILL"])
def test_ending_irlint_ends_the_worker_processes(tmp_path, sig):
    import os
    import signal
    import subprocess
    import sys
    import time

    (tmp_path / "slowrule.py").write_text(_SLOW_RULE)
    (tmp_path / "run.py").write_text(_RUN_CLI)
    pids = tmp_path / "pids"
    pids.mkdir()
    files = [str(S2 / "21_validate_0076.ir"), str(S2 / "graph_build_0_0094.ir")]
    proc = subprocess.Popen(
        [sys.executable, str(tmp_path / "run.py"), str(tmp_path), *files],
        env={**os.environ, "PIDS": str(pids)},
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while len(list(pids.iterdir())) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        workers = [int(p.name) for p in pids.iterdir()]
        assert len(workers) == 2 and proc.pid not in workers
        proc.send_signal(getattr(signal, sig))
        assert proc.wait(timeout=30) == (143 if sig == "SIGTERM" else -signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() for pid in workers):
        time.sleep(0.1)
    survivors = []
    for pid in workers:
        status = Path(f"/proc/{pid}/status")
        if status.exists() and "zombie" not in status.read_text():
            survivors.append(pid)
            os.kill(pid, signal.SIGKILL)  # a failing run must not leave them behind either
    assert not survivors, f"workers {survivors} outlived irlint"
