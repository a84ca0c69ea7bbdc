"""Reading in worker processes gives exactly what reading in-process gives."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import irlint.runner.engine as engine
import irlint.runner.workers as workers
from irlint.findings_json import extra_data
from irlint.rule import Rule
from irlint.runner.config import Config
from irlint.runner.discover import discover
from irlint.runner.engine import lint

CORPUS = Path(__file__).parent / "fixtures" / "corpus"


class RecomputedNodes(Rule):
    """Test probe: every recompute-marked cnode, tagged with the process that found it."""

    code = "TST911"
    name = "test-recomputed-nodes-pid"

    def check(self, ir):
        for key in ir.cnodes():
            if ir[key]["cnode_attrs"].get("recompute") is True:
                yield self.finding(ir, key, f"{ir[key]['op']} is recomputed", facts={"pid": os.getpid()})


class Validate(Rule):
    """Test probe with a stage choice: only the validate file of a folder."""

    code = "TST912"
    name = "test-validate-matmuls"
    stages = ("validate",)

    def check(self, ir):
        for key in ir.nodes_by_op("MatMul", "BatchMatMul"):
            yield self.finding(ir, key, "matmul", identity=(ir[key]["scope"],))


@pytest.fixture
def probes(monkeypatch, tmp_path):
    monkeypatch.setattr(engine, "active_rules", lambda config: [RecomputedNodes(), Validate()])
    monkeypatch.setattr(workers, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setenv("IRLINT_CACHE_DIR", str(tmp_path / "cache"))


def _plain(report):
    findings = []
    pids = set()
    for f in report.findings:
        d = f.to_dict()
        extra = extra_data(f)
        pids.add(extra.pop("pid", None))
        d["extra"] = extra
        findings.append(d)
    pids.discard(None)
    return findings, [d.to_dict() for d in report.diagnostics], report.files, pids


@pytest.mark.slow
def test_parallel_lint_equals_serial(probes):
    paths = [str(CORPUS / "llama-recompute-modes"), str(CORPUS / "s2_ffn_3d_reshape_blocks")]
    serial = _plain(lint(paths, Config(jobs=1, cache=False)))
    parallel = _plain(lint(paths, Config(jobs=2, cache=False)))
    assert serial[0], "the probes find something in these fixtures"
    assert parallel[:3] == serial[:3]
    assert serial[3] == {os.getpid()}
    assert parallel[3] - {os.getpid()}, "the parallel run used worker processes"


def test_parallel_lint_with_cache_equals_serial(probes, tmp_path):
    paths = [str(CORPUS / "llama-cast")]
    serial = _plain(lint(paths, Config(jobs=1, cache=False)))
    cold = _plain(lint(paths, Config(jobs=2, cache_dir=str(tmp_path / "c"))))
    warm = _plain(lint(paths, Config(jobs=2, cache_dir=str(tmp_path / "c"))))
    assert cold[:3] == serial[:3] == warm[:3]


def test_one_small_file_stays_in_process(monkeypatch, tmp_path):
    monkeypatch.setenv("IRLINT_CACHE_DIR", str(tmp_path / "cache"))
    files, _ = discover([str(CORPUS / "s1_ffn_2d")])
    assert workers.jobs_for(files[:1], Config(jobs=4)) == 1
    assert workers.jobs_for(files, Config(jobs=4)) == 1  # a few hundred KB in all
    big = [f.__class__(**{**{s: getattr(f, s) for s in f.__slots__}, "size": 64 << 20}) for f in files[:2]]
    assert workers.jobs_for(big, Config(jobs=4)) == 2
    assert workers.jobs_for(big, Config(jobs=1)) == 1


def test_progress_is_reported_per_file_in_order(probes):
    seen = []
    paths = [str(CORPUS / "s2_ffn_3d_reshape_blocks")]
    lint(paths, Config(jobs=2, cache=False, progress=lambda name, size: seen.append(name)))
    files, _ = discover(paths)
    assert seen == [f.display for f in files]


def _built() -> tuple[int, int]:
    """(scanner patterns compiled, Lark parsers built) in this process."""
    from irlint.read import parser, scanner

    return scanner.record_pattern.cache_info().currsize, parser._parser.cache_info().currsize


def test_workers_that_read_fork_with_what_a_first_read_builds():
    from irlint.read import parser, scanner

    scanner.record_pattern.cache_clear()
    parser._parser.cache_clear()
    pool = workers.start_pool(2, reads=False)  # hashing only (a cache may answer every file): nothing built
    try:
        assert _built() == (0, 0) and pool.submit(_built).result() == (0, 0)
    finally:
        workers.stop_pool(pool, wait=True)
    pool = workers.start_pool(2)
    try:
        # the scanner's pattern, not Lark's parser: the fast parser reads common dumps without it
        assert _built() == (1, 0)
        assert [pool.submit(_built).result() for _ in range(4)] == [(1, 0)] * 4
    finally:
        workers.stop_pool(pool, wait=True)
