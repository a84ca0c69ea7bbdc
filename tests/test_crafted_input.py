"""Crafted input: no recursion, quadratic time, memory blow-up, escaping links, undecodable names,
or a dying rule process turns into an internal error, a hang or a silent pass."""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from irlint import diagnostics as D
from irlint.cli import main
from irlint.read.parser import MAX_NESTING
from irlint.read.reader import read_ir

S2 = Path(__file__).parent / "fixtures" / "corpus" / "s2_ffn_3d_reshape_blocks"
VALIDATE = S2 / "21_validate_0076.ir"


def run(*args, **kw):
    return CliRunner().invoke(main, ["--no-cache", *args], catch_exceptions=False, **kw)


def _lines() -> list[bytes]:
    return VALIDATE.read_bytes().split(b"\n")


def _first(lines: list[bytes], prefix: bytes, contains: bytes = b"") -> int:
    return next(i for i, ln in enumerate(lines) if ln.startswith(prefix) and contains in ln)


# --- 7: nesting depth --------------------------------------------------------------------------------
def _nested(depth: int, open_: str = "(", close: str = ")") -> bytes:
    return (open_ * depth + "1" + close * depth).encode()


def _deepen(where: str, depth: int) -> tuple[bytes, int]:
    """The s2 dump with one piece nested ``depth`` deep; the piece's line number."""
    lines = _lines()
    if where == "attribute":
        i = _first(lines, b"  %", b"primitive_attrs: {recompute: Bool(1)}")
        lines[i] = lines[i].replace(b"{recompute: Bool(1)}", b"{recompute: Bool(1), deep: " + _nested(depth) + b"}", 1)
    elif where == "list attribute":
        i = _first(lines, b"  %", b"primitive_attrs: {recompute: Bool(1)}")
        lines[i] = lines[i].replace(b"{recompute: Bool(1)}", b"{deep: " + _nested(depth, "[", "]") + b"}", 1)
    elif where == "call argument":
        i = _first(lines, b"  %", b"PrimFunc_SiLU(%5)")
        lines[i] = lines[i].replace(b"PrimFunc_SiLU(%5)", b"PrimFunc_SiLU(%5, " + _nested(depth) + b")", 1)
    elif where == "type":
        i = _first(lines, b"      : ")
        lines[i] = b"      : (<Tensor[Float32], " + _nested(depth) + b">) -> (<Tensor[Float32], (16, 32)>)"
    elif where == "angle type":
        i = _first(lines, b"      : ")
        lines[i] = b"      : (" + _nested(depth, "<", ">") + b") -> (<Tensor[Float32], (16, 32)>)"
    elif where == "subgraph header":
        i = _first(lines, b"subgraph @")
        lines[i] = lines[i].replace(b"(", b"(" + _nested(depth) + b", ", 1)
    else:
        i = _first(lines, b"%para")
        lines[i] = lines[i] + b" " + _nested(depth)
    return b"\n".join(lines), i + 1


WHERE = ["attribute", "list attribute", "call argument", "type", "angle type", "subgraph header", "parameter"]


@pytest.mark.parametrize("depth", [600, 50_000])
@pytest.mark.parametrize("where", WHERE)
def test_deep_nesting_skips_the_piece_with_a_diagnostic(tmp_path, where, depth):
    data, line = _deepen(where, depth)
    (tmp_path / "21_validate_0076.ir").write_bytes(data)
    ir = read_ir(str(tmp_path / "21_validate_0076.ir"))
    bad = [d for d in ir.diagnostics if d.code == D.BAD_RECORD]
    assert [d.line for d in bad] == [line]
    assert f"nested deeper than {MAX_NESTING}" in bad[0].message
    whole = read_ir(str(VALIDATE))
    # only a node record whose call or attributes are refused is lost; a type, header or parameter
    # line leaves its record in place
    lost = 1 if where in ("attribute", "list attribute", "call argument") else 0
    assert ir.cnode_count == whole.cnode_count - lost


@pytest.mark.parametrize("where", WHERE)
def test_nesting_up_to_the_limit_is_read_and_linted(tmp_path, where):
    data, _ = _deepen(where, MAX_NESTING - 3)  # the enclosing record adds up to three levels
    (tmp_path / "21_validate_0076.ir").write_bytes(data)
    assert read_ir(str(tmp_path / "21_validate_0076.ir")).diagnostics == []
    result = run(str(tmp_path), "--format", "json")
    assert result.exit_code == 1, result.output
    assert len(json.loads(result.output)["findings"]) == 2


def test_a_deeply_nested_dump_does_not_abort_the_folder(tmp_path):
    data, line = _deepen("attribute", 5000)
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "21_validate_0076.ir").write_bytes(data)
    shutil.copytree(S2, tmp_path / "b")
    result = run(str(tmp_path), "--format", "json")
    assert "internal error" not in result.output
    assert result.exit_code == 2, result.output  # an input problem
    report = json.loads(result.output)
    assert {Path(f["file"]).parent.name for f in report["findings"]} >= {"b"}
    assert any(d["line"] == line and d["code"] == D.BAD_RECORD for d in report["diagnostics"])


# --- 8: every line in linear time ---------------------------------------------------------------------
def _forget_parses() -> None:
    """Empty the memo tables, so that each timed read parses again."""
    from irlint.read.record import clear_memos

    clear_memos()


def _best_time(fn, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        _forget_parses()
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def _grows_linearly(make, n: int, read) -> tuple[float, float]:
    """Times ``read(make(n))`` and ``read(make(4n))``: linear work grows 4x, quadratic 16x."""
    small, large = make(n), make(4 * n)
    return _best_time(lambda: read(small)), _best_time(lambda: read(large))


# Lines a dump could hold, each of which once took time quadratic in its length; the size N.
CRAFTED_LINES = {
    # a type entry with many "(1)" groups and no shape at its end: _SHAPED tried each "(" (issue 21)
    "type line of shapes": (
        b"      : ",
        lambda n: (
            b"      : (<Tensor[Float32]"
            + b", (1)" * n
            + b" =>, <Tensor[Float32], (2)>) -> (<Tensor[Float32], (16, 32)>)"
        ),
        8000,
    ),
    # an unclosed string with escaped quotes: the template regex rescanned from every quote
    "escaped quotes": (
        b"  %",
        lambda n: b"  %5(x) = PrimFunc_SiLU(%5) primitive_attrs: {k: " + b'"\\' * n + b"}",
        2500,
    ),
    # a comment line of spaces: the key regex tried every split of them between key and padding
    "comment of spaces": (b"# ", lambda n: b"#a" + b" " * n + b"x", 20000),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CRAFTED_LINES))
def test_a_crafted_line_is_read_in_linear_time(tmp_path, name):
    prefix, make, n = CRAFTED_LINES[name]
    lines = _lines()
    at = 1 if prefix == b"# " else _first(lines, prefix, b"PrimFunc_SiLU" if prefix == b"  %" else b"")

    def dump(k: int) -> Path:
        path = tmp_path / f"{k}" / "21_validate_0076.ir"
        path.parent.mkdir()
        path.write_bytes(b"\n".join(lines[:at] + [make(k)] + lines[at + (prefix != b"# ") :]))
        return path

    small, large = _grows_linearly(dump, n, lambda p: read_ir(str(p)))
    assert large < 9 * small + 0.05, (small, large)  # 4x for linear work; quadratic would be 16x


def test_a_crafted_trace_line_is_matched_in_linear_time():
    from irlint.rules.recompute.keys import attribute_from_trace

    def trace(n: int) -> list[str]:  # a trace line of many ":1, 1~1/" and no closing "/"
        return ["# In file " + ":1, 1~1/" * n + "x"]

    small, large = _grows_linearly(trace, 5000, attribute_from_trace)
    assert large < 9 * small + 0.05, (small, large)


# --- 12: a rule process that dies ----------------------------------------------------------------------
_DYING_PLUGIN = '''
import os, signal, time
from irlint.rule import Rule


class Dies(Rule):
    """Ends its process (a test plugin)."""
    code = "XD001"
    name = "ends-its-process"
    summary = "a test plugin"

    def check(self, ir):
        how = os.environ["HOW"]
        if how == "exit":
            os._exit(0)
        if how == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        if how == "hang":   # beyond the reach of the rule-timeout's SIGALRM
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
            time.sleep(600)
        yield from ()
'''

# the irlint program, with a pool of workers even for small files when asked
_PROGRAM = """
import sys
import irlint.runner.sandbox as sandbox
import irlint.runner.workers as workers
workers.PARALLEL_MIN_BYTES = 0
workers._cores = lambda: 2
sandbox.CHILD_GRACE_SECONDS = 1
from irlint.cli import run
sys.argv = ["irlint", *sys.argv[1:]]
sys.exit(run())
"""


def _install_dying_plugin(site: Path) -> None:
    (site / "xd_rules.py").write_text(_DYING_PLUGIN)
    info = site / "xd_rules-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: xd-rules\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[irlint.rules]\nends-its-process = xd_rules\n")


@pytest.mark.slow
@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("how", ["exit", "kill", "hang"])
def test_a_rule_whose_process_dies_is_an_error_naming_the_rule(tmp_path, how, jobs):
    import os
    import subprocess
    import sys

    site = tmp_path / "site"
    site.mkdir()
    _install_dying_plugin(site)
    (tmp_path / "irlint_program.py").write_text(_PROGRAM)
    report = tmp_path / "report.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), *sys.path]), "HOW": how}
    proc = subprocess.run(
        [
            sys.executable,
            str(tmp_path / "irlint_program.py"),
            "--no-cache",
            "-j",
            jobs,
            "--rule-timeout",
            "1",
            "--format",
            "json",
            "-o",
            str(report),
            str(VALIDATE),
            str(S2 / "graph_build_0_0094.ir"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    data = json.loads(report.read_text())
    failed = [d for d in data["diagnostics"] if d["code"] == D.RULE_FAILED]
    assert len(failed) == 2 and all("XD001 (ends-its-process)" in d["message"] for d in failed), failed
    assert {f["code"] for f in data["findings"]} >= {"RC002"}  # the other rules' findings are kept


# --- 10: links out of the named folder -----------------------------------------------------------------
def test_links_out_of_the_named_folder_are_not_followed(tmp_path):
    from irlint.runner.discover import discover

    named = tmp_path / "graph"
    shutil.copytree(S2, named / "rank_0")
    (tmp_path / "elsewhere").mkdir()
    shutil.copy(VALIDATE, tmp_path / "elsewhere" / "21_validate_0076.ir")
    (named / "up").symlink_to("..", target_is_directory=True)
    (named / "rank_0" / "other").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (named / "again").symlink_to("rank_0", target_is_directory=True)  # inside: followed, read once
    (named / "rank_0" / "self").symlink_to(".", target_is_directory=True)
    files, diags = discover([str(named)])
    # a link out of the named folder is followed when its target holds dumps (issue 31), not to ".."
    assert sorted(Path(f.path).name for f in files) == sorted(
        [*(p.name for p in S2.glob("*.ir")), "21_validate_0076.ir"]
    )
    assert all(str(named) in f.path for f in files)
    assert sorted((Path(d.file).name, d.code) for d in diags) == [("up", D.UNREADABLE)]
    assert "holds no graph IR dump" in diags[0].message and "-L/--follow-links" in diags[0].message
    # the folder a link leads to is read when it is named
    files, diags = discover([str(named / "rank_0" / "other")])
    assert [Path(f.path).name for f in files] == ["21_validate_0076.ir"] and diags == []


def test_a_link_to_the_root_folder_is_not_walked(tmp_path):
    import subprocess
    import sys

    shutil.copytree(S2, tmp_path / "graph")
    (tmp_path / "graph" / "root").symlink_to("/", target_is_directory=True)
    proc = subprocess.run(
        [sys.executable, "-m", "irlint", "--no-cache", "--show-files", str(tmp_path / "graph")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr  # not everything named was read
    lines = proc.stdout.splitlines()
    assert len([ln for ln in lines if ln.startswith(("read", "skip"))]) == len(list(S2.glob("*.ir")))
    assert any("root" in ln and "a link to /," in ln for ln in lines), lines


# --- 11: names that are not UTF-8, narrow or closed streams --------------------------------------------
def _program(*args, env=None, preexec_fn=None, cwd=None):
    import os
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", "irlint", *args],
        capture_output=True,
        timeout=120,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        preexec_fn=preexec_fn,
    )


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _undecodable_folder(tmp_path: Path) -> Path:
    import os

    folder = tmp_path / "graph"
    folder.mkdir()
    shutil.copytree(S2, Path(os.fsdecode(bytes(folder) + b"/rank_\xff")))
    return folder


@pytest.mark.parametrize("fmt", ["text", "concise", "json", "json-lines", "sarif", "github", "gitlab", "junit"])
def test_a_folder_name_that_is_not_utf8_is_reported_in_every_format(tmp_path, fmt):
    folder = _undecodable_folder(tmp_path)
    out = tmp_path / f"report.{fmt}"
    # with the cache: its keys hold the path too
    proc = _program(str(folder), "--format", fmt, "-o", str(out), env={"XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert proc.returncode == 1, proc.stderr
    assert b"internal error" not in proc.stderr
    text = out.read_bytes().decode("utf-8")  # a valid UTF-8 report
    if fmt.startswith("json") or fmt in ("sarif", "gitlab"):
        documents = [json.loads(ln) for ln in text.splitlines()] if fmt == "json-lines" else [json.loads(text)]
        # the name, its byte written as a backslash escape
        assert any(
            "rank_\\xff" in value or "rank_%5Cxff" in value for value in _strings(documents)
        )  # %5C: SARIF's URIs
    else:
        assert "rank_\\xff" in text
    piped = _program("--no-cache", str(folder), "--format", fmt)  # to a pipe
    assert piped.returncode == 1 and b"internal error" not in piped.stderr
    assert b"rank_\\" in piped.stdout or b"rank_%5C" in piped.stdout


def test_an_output_encoding_without_the_report_characters(tmp_path):
    folder = _undecodable_folder(tmp_path)
    proc = _program("--no-cache", str(folder), env={"PYTHONIOENCODING": "latin-1"})
    assert proc.returncode == 1, proc.stderr
    assert b"internal error" not in proc.stderr and b"RC002" in proc.stdout
    named = _program(
        "--no-cache", "-", "--stdin-filename", "r\u00e9sum\u00e9_\u2603.ir", env={"PYTHONIOENCODING": "ascii"}
    )
    assert named.returncode == 2 and b"internal error" not in named.stderr


def test_closed_standard_streams_are_named_not_internal_errors(tmp_path):
    import os

    no_stdin = _program("--no-cache", "-", preexec_fn=lambda: os.close(0))
    assert no_stdin.returncode == 2
    assert b"standard input is closed" in no_stdin.stderr and b"internal error" not in no_stdin.stderr
    no_stdout = _program("--no-cache", str(S2), preexec_fn=lambda: os.close(1))
    assert no_stdout.returncode == 2
    assert b"standard output is closed" in no_stdout.stderr and b"internal error" not in no_stdout.stderr
    no_stderr = _program("--no-cache", str(S2), preexec_fn=lambda: os.close(2))
    assert no_stderr.returncode == 1 and b"RC002" in no_stderr.stdout


# --- 9: memory in proportion to the input; streams with an end ------------------------------------------
def test_records_of_many_repeated_operands_take_memory_in_proportion(tmp_path):
    import tracemalloc

    lines = _lines()
    at = _first(lines, b"  Return(")
    operands = 50_000
    big = [b"  %%%d(x0) = MakeTuple(" % (9000 + i) + b", ".join([b"%0"] * operands) + b")" for i in range(3)]
    data = b"\n".join(lines[:at] + big + lines[at:])
    path = tmp_path / "21_validate_0076.ir"
    path.write_bytes(data)
    tracemalloc.start()
    try:
        ir = read_ir(str(path))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert ir.graph.number_of_edges() == read_ir(str(VALIDATE)).graph.number_of_edges() + 3 * operands
    assert peak < 90 * len(data), peak / len(data)  # 134x before: a template, a dict per edge, a Ref per operand


def test_a_named_character_device_is_not_read_to_its_end(tmp_path):
    import os

    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero")
    (tmp_path / "21_validate_0076.ir").symlink_to("/dev/zero")
    for path in ("/dev/zero", str(tmp_path / "21_validate_0076.ir")):
        proc = _program("--no-cache", "--format", "json", path)
        assert proc.returncode == 2, proc.stderr
        assert [d["code"] for d in json.loads(proc.stdout)["diagnostics"]] == [D.BINARY]


class _EndlessDump:
    """A stream that looks like a dump and never ends (``yes '  %1(x) = A(%0)'``)."""

    def read(self, n: int = -1) -> bytes:
        return (b"# IR entry: @g\n" + b"  %1(x) = A(%0)\n" * (n // 16))[:n]


def test_an_endless_stream_is_refused_at_the_cap(monkeypatch):
    from irlint.runner import streams
    from irlint.runner.discover import InputError, Spool

    monkeypatch.setattr(streams, "MAX_STREAM_BYTES", 64 << 20)
    with pytest.raises(InputError, match="more than 64 MiB"):
        Spool(_EndlessDump(), "-: standard input")
    result = CliRunner().invoke(main, ["--no-cache", "-"], input=_EndlessDump().read(80 << 20))
    assert result.exit_code == 2 and "more than 64 MiB" in result.output


_WORKER_KILLER = """
import os, sys
sys.path.insert(0, sys.argv[1])
import irlint.runner.engine as engine
import irlint.runner.workers as workers
from irlint.rule import Rule


class EndsTheWorker(Rule):
    code = "XD002"
    name = "ends-the-worker"

    def check(self, ir):
        os._exit(0)
        yield


workers.PARALLEL_MIN_BYTES = 0
workers._cores = lambda: 2
engine.active_rules = lambda config: [EndsTheWorker()]
from irlint.cli import run
sys.argv = ["irlint", *sys.argv[2:]]
sys.exit(run())
"""


def test_a_worker_process_that_dies_is_reported_per_file(tmp_path):
    import subprocess
    import sys

    (tmp_path / "program.py").write_text(_WORKER_KILLER)
    proc = subprocess.run(
        [
            sys.executable,
            str(tmp_path / "program.py"),
            str(tmp_path),
            "--no-cache",
            "-j",
            "2",
            "--format",
            "json",
            str(VALIDATE),
            str(S2 / "graph_build_0_0094.ir"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert "internal error" not in proc.stderr
    diags = json.loads(proc.stdout)["diagnostics"]
    assert len(diags) == 2 and all("worker process ended unexpectedly" in d["message"] for d in diags), diags


@pytest.mark.slow
def test_a_flood_of_junk_lines_is_one_diagnostic_and_little_memory(tmp_path):
    import tracemalloc

    lines = _lines()
    at = _first(lines, b"}")
    junk = 200_000
    data = b"\n".join(lines[: at + 1] + [b"x"] * junk + lines[at + 1 :])
    path = tmp_path / "21_validate_0076.ir"
    path.write_bytes(data)

    def peak_of(dump: Path):
        tracemalloc.start()
        try:
            return read_ir(str(dump)), tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    read_ir(str(path))  # imports done
    ir, peak = peak_of(path)
    plain = peak_of(VALIDATE)[1]  # the reader's own block buffer and the model
    assert [(d.line, d.code) for d in ir.diagnostics] == [(at + 2, D.UNKNOWN_LINE)]
    assert f"{junk} consecutive lines skipped" in ir.diagnostics[0].message
    extra = len(data) - len(VALIDATE.read_bytes())
    assert peak - plain < 10 * extra, (peak - plain) / extra  # a diagnostic per line until the end: 85x


@pytest.mark.slow
def test_a_record_of_many_equal_constants_makes_one_node_per_value(tmp_path):
    lines = _lines()
    at = _first(lines, b"  Return(")
    operands = 100_000
    record = b"  %9000(x0) = MakeTuple(" + b", ".join([b"1", b"2.5", b"Bool(1)"] * operands) + b")"
    path = tmp_path / "21_validate_0076.ir"
    path.write_bytes(b"\n".join(lines[:at] + [record] + lines[at:]))
    ir, whole = read_ir(str(path)), read_ir(str(VALIDATE))
    assert ir.graph.number_of_nodes() == whole.graph.number_of_nodes() + 1 + 3  # the MakeTuple, 3 values
    tuple_key = next(k for k, d in ir.graph.nodes(data=True) if d.get("id") == "%9000")
    into = sorted((key, ir.graph.nodes[u]["value"]) for u, _, key in ir.graph.in_edges(tuple_key, keys=True))
    assert len(into) == 3 * operands and into[:3] == [(0, 1), (1, 2.5), (2, True)]
