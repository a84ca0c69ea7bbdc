"""Issue 31: nothing lost, nothing claimed that was not read (the input side: cut and damaged
dumps, control bytes, what plugins may do to the report)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from irlint import diagnostics as D
from irlint.cli import main
from irlint.read.reader import read_ir

FIXTURES = Path(__file__).parent / "fixtures" / "corpus"
BLOCKS = FIXTURES / "s2_ffn_3d_reshape_blocks"


def run(*args, **kw):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False, **kw)


def _codes(ir) -> list[str]:
    return [d.code for d in ir.diagnostics]


# --- item 2: a dump cut after its first line ------------------------------------------------------
def test_an_entry_graph_never_defined_is_a_truncated_dump(tmp_path):
    first = (BLOCKS / "21_validate_0076.ir").read_bytes().split(b"\n", 1)[0] + b"\n"
    path = tmp_path / "21_validate_0076.ir"
    path.write_bytes(first)
    assert D.TRUNCATED in _codes(read_ir(str(path)))
    # the same with the subgraph total read, and cut before any subgraph
    two = b"\n".join((BLOCKS / "21_validate_0076.ir").read_bytes().split(b"\n")[:3]) + b"\n"
    path.write_bytes(two)
    assert D.TRUNCATED in _codes(read_ir(str(path)))


def test_a_validate_cut_after_its_first_line_falls_back_to_the_earlier_stage(tmp_path):
    folder = tmp_path / "h1"
    shutil.copytree(BLOCKS, folder)
    (folder / "MANIFEST.json").unlink()
    first = (BLOCKS / "21_validate_0076.ir").read_bytes().split(b"\n", 1)[0] + b"\n"
    (folder / "21_validate_0076.ir").write_bytes(first)
    result = run(folder, "--format", "json")
    assert result.exit_code != 0, result.output
    report = json.loads(result.stdout)
    found = {(f["code"], Path(f["file"]).name) for f in report["findings"]}
    # the earlier stage that holds both problems is read instead
    assert found == {("RC002", "opt_pass_20_cse_after_recomputation_0034.ir")}, found
    assert [d["code"] for d in report["diagnostics"]] == [D.TRUNCATED]


# --- item 8: control bytes in structural lines, records cut or without their type line -------------
_VALIDATE = (BLOCKS / "21_validate_0076.ir").read_bytes()
_LINES = _VALIDATE.split(b"\n")
# a record well past the first 4 KiB (a NUL there makes the whole file binary content)
_AT = next(i for i, line in enumerate(_LINES) if line.startswith(b"  %7(") and b"PrimFunc_Reshape" in line)


def _read_with(tmp_path, lines: list[bytes], sep: bytes = b"\n"):
    path = tmp_path / "21_validate_0076.ir"
    path.write_bytes(sep.join(lines))
    return read_ir(str(path))


def test_a_nul_in_an_op_name_is_a_diagnostic_not_another_op(tmp_path):
    lines = list(_LINES)
    lines[_AT] = lines[_AT].replace(b"PrimFunc_Reshape", b"PrimFunc_Re\0hape")
    ir = _read_with(tmp_path, lines)
    assert any(d.line == _AT + 1 and d.code == D.BAD_RECORD for d in ir.diagnostics), ir.diagnostics
    assert not any(data.get("raw_op", "").startswith("PrimFunc_Re\0") for _, data in ir.nodes.items())


def test_every_control_byte_position_in_a_record_is_reported(tmp_path):
    for sep in (b"\n", b"\r\n"):  # read as whole records, and line by line (a copied dump)
        for j in (_AT, _AT + 1, _AT + 2):  # node, type and scope line
            for k in range(0, len(_LINES[j]), 5):
                for byte in (0x00, 0x1B, 0x0B, 0x08, 0x1F):
                    lines = list(_LINES)
                    lines[j] = lines[j][:k] + bytes([byte]) + lines[j][k + 1 :]
                    ir = _read_with(tmp_path, lines, sep)
                    assert any(
                        d.line <= j + 1
                        and d.code in (D.BAD_RECORD, D.UNKNOWN_LINE)
                        and (d.line == j + 1 or "consecutive" in d.message)
                        for d in ir.diagnostics
                    ), (j, k, byte)


def test_a_control_byte_in_any_piece_of_a_block_is_found(tmp_path, monkeypatch):
    # the scanner tests a block for control bytes piece by piece: one far past the first piece counts
    import irlint.read.scanner

    monkeypatch.setattr(irlint.read.scanner, "_CONTROL_TEST_BYTES", 7)
    lines = list(_LINES)
    lines[_AT] = lines[_AT].replace(b"PrimFunc_Reshape", b"PrimFunc_Re\x1bhape")
    ir = _read_with(tmp_path, lines)
    assert [(d.line, d.code) for d in ir.diagnostics if d.line == _AT + 1] == [(_AT + 1, D.BAD_RECORD)]


def test_tabs_and_control_bytes_in_source_traces_are_not_damage(tmp_path):
    lines = list(_LINES)
    lines[_AT] = lines[_AT].replace(b"(%6, (", b"(%6,\t(") + b"\t"
    trace = next(i for i in range(_AT, len(lines)) if lines[i].startswith(b"      # In file"))
    lines[trace] = lines[trace] + b"\x0c"
    assert _codes(_read_with(tmp_path, lines)) == []


def test_a_record_without_its_type_line_is_a_diagnostic(tmp_path):
    lines = _LINES[: _AT + 1] + _LINES[_AT + 2 :]
    ir = _read_with(tmp_path, lines)
    assert [(d.line, d.code) for d in ir.diagnostics] == [(_AT + 1, D.BAD_RECORD)]
    assert "type line" in ir.diagnostics[0].message


def test_a_record_cut_inside_its_attribute_blocks_is_a_diagnostic(tmp_path):
    line = _LINES[_AT]
    for k in range(line.index(b"{instance"), len(line) - 1, 3):
        # the cut line, then the next record (its type and scope lines are gone with the cut)
        ir = _read_with(tmp_path, _LINES[:_AT] + [line[:k]] + _LINES[_AT + 3 :])
        assert any(d.line == _AT + 1 and d.code == D.BAD_RECORD for d in ir.diagnostics), (k, ir.diagnostics)


def test_a_dump_without_types_is_not_a_dump_of_untyped_records():
    ir = read_ir(str(Path(__file__).parent / "fixtures" / "dump-formats" / "format0" / "21_validate_0076.ir"))
    assert D.BAD_RECORD not in _codes(ir)


# --- items 10, 11, 12: what is printed from a dump or a file name is escaped -----------------------
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f]")


def _hostile_folder(tmp_path) -> Path:
    """Two copies of a dump with findings: one under a name with a newline, one under a terminal
    escape; a third with an escape in a scope line (a diagnostic quoting it)."""
    root = tmp_path / "in"
    (root / "a\nb").mkdir(parents=True)
    shutil.copy(BLOCKS / "21_validate_0076.ir", root / "a\nb" / "21_validate_0076.ir")
    (root / "d\x1b]0;pwned\x07x").mkdir()
    shutil.copy(BLOCKS / "21_validate_0076.ir", root / "d\x1b]0;pwned\x07x" / "21_validate_0076.ir")
    (root / "c").mkdir()
    lines = list(_LINES)
    lines[_AT + 2] = lines[_AT + 2].replace(b"Reshape-op0", b"Resh\x1b[2J\x08ape-op0")
    (root / "c" / "21_validate_0076.ir").write_bytes(b"\n".join(lines))
    return root


def test_text_and_concise_print_no_control_character(tmp_path):
    root = _hostile_folder(tmp_path)
    for fmt in ("text", "concise", "github"):
        # grouped, the copy under the escaping name is an occurrence of the other copy's finding
        out = run(root, "--no-dedup", "--format", fmt).output
        assert not _CONTROL.search(out), (fmt, _CONTROL.search(out))
        out = run(root, "--no-dedup", "--no-group", "--format", fmt).output
        assert not _CONTROL.search(out), (fmt, _CONTROL.search(out))
        assert "\\x1b" in out, fmt


def test_the_other_commands_print_no_control_character(tmp_path):
    root = _hostile_folder(tmp_path)
    for args in (["memory"], ["comm"], ["inspect"], ["--show-files"], ["diff", root / "c", root / "a\nb"]):
        result = run(*args, *([] if args[0] == "diff" else [root]))
        assert not _CONTROL.search(result.output), (args, _CONTROL.search(result.output))


def test_concise_gives_one_line_per_finding_whatever_the_file_names(tmp_path):
    root = _hostile_folder(tmp_path)
    result = run(root, "--no-dedup", "--format", "concise")
    report = json.loads(run(root, "--no-dedup", "--format", "json").stdout)
    # the README's problem matcher: every line is a whole finding, none is made up
    matcher = re.compile(r"^(.+):(\d+):(\d+): (\w+) \[(\w+)\] (.*)$")
    lines = result.stdout.splitlines()
    assert len(lines) == len(report["findings"]) + len(report["diagnostics"])
    for line in lines:
        assert matcher.match(line), line
        assert line.startswith(str(root)), line


def test_a_carriage_return_in_a_message_is_not_printed(tmp_path):
    from irlint.findings import Finding, Report
    from irlint.reporters import render

    finding = Finding(
        code="X001",
        rule="x",
        severity="warning",
        file="f\r.ir",
        line=3,
        graph="@g",
        node="%1",
        op="Mul",
        scope="s",
        message="fine\roverwritten\x1b[1A",
    )
    for fmt in ("concise", "text", "junit", "github"):
        out = render(Report(findings=[finding], files=["f\r.ir"]), fmt)
        assert "\r" not in out and "\x1b" not in out, fmt
        assert "fine\\roverwritten\\x1b[1A" in out, fmt


def test_junit_is_well_formed_xml_with_control_characters_in_names_and_dump_text(tmp_path):
    from xml.dom import minidom

    root = _hostile_folder(tmp_path)
    result = run(root, "--no-dedup", "--format", "junit")
    doc = minidom.parseString(result.stdout.encode("utf-8"))
    names = [c.getAttribute("name") for c in doc.getElementsByTagName("testcase")]
    assert any("\\x1b]0;pwned\\x07" in n for n in names), names


# --- items 9 and 13: what a plugin may do to the report and to the machine ---------------------------
_NOISY_PLUGIN = '''
import os, sys, time
from irlint.rule import Rule

print("::error::printed at import")
os.write(1, b"written to fd 1 at import\\n")


class Noisy(Rule):
    """Prints (a test plugin)."""
    code = "XN001"
    name = "prints-to-stdout"
    summary = "a test plugin"
    stages = ("validate",)

    def check(self, ir):
        print("::error::printed in check")
        sys.stdout.flush()
        os.write(1, b"written to fd 1 in check\\n")
        if os.environ.get("FORK_GRANDCHILD") and os.fork() == 0:
            with open(os.environ["FORK_GRANDCHILD"], "w") as f:
                f.write(str(os.getpid()))
            time.sleep(600)
            os._exit(0)
        if os.environ.get("FORK_GRANDCHILD"):
            time.sleep(600)   # past the rule-timeout
        yield from ()
'''


def _install_plugin(site: Path, name: str, source: str) -> None:
    site.mkdir(exist_ok=True)
    (site / f"{name}.py").write_text(source)
    info = site / f"{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[irlint.rules]\n{name} = {name}\n")


def _irlint(tmp_path, site: Path, *args, env=None, timeout=120):
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), *sys.path]), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "irlint", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=tmp_path,
    )


def test_a_plugin_never_writes_to_the_report_stream(tmp_path):
    site = tmp_path / "site"
    _install_plugin(site, "noisy_rules", _NOISY_PLUGIN)
    for jobs in ("1", "2"):
        proc = _irlint(tmp_path, site, "--no-cache", "-j", jobs, "--format", "json", BLOCKS)
        report = json.loads(proc.stdout)  # nothing but the report
        assert {f["code"] for f in report["findings"]} == {"RC002"}
        assert "::error::" not in proc.stdout
        assert "printed in check" in proc.stderr and "written to fd 1 in check" in proc.stderr


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie is dead, waiting to be reaped
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")
def test_a_plugins_forked_process_does_not_outlive_irlint_after_its_timeout(tmp_path):
    import os
    import signal
    import subprocess
    import time

    site = tmp_path / "site"
    _install_plugin(site, "noisy_rules", _NOISY_PLUGIN)
    pid_file = tmp_path / "grandchild.pid"
    proc = None
    try:
        proc = _irlint(
            tmp_path,
            site,
            "--no-cache",
            "-j",
            "1",
            "--rule-timeout",
            "1",
            "--format",
            "json",
            BLOCKS / "21_validate_0076.ir",
            env={"FORK_GRANDCHILD": str(pid_file)},
            timeout=40,
        )
    except subprocess.TimeoutExpired:  # the grandchild kept irlint's output pipes open
        pass
    pid = int(pid_file.read_text())
    try:
        deadline = time.monotonic() + 10
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(pid)
    finally:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
    assert proc is not None
    report = json.loads(proc.stdout)
    assert any(d["code"] == D.RULE_FAILED and "XN001" in d["message"] for d in report["diagnostics"])


_INVALID_PLUGIN = '''
from irlint.rule import Rule


class TakesAnInputCode(Rule):
    """A test plugin."""
    code = "IR001"
    name = "takes-an-input-code"


class FatalSeverity(Rule):
    """A test plugin."""
    code = "XB001"
    name = "fatal-severity"
    severity = "fatal"


class StagesAsText(Rule):
    """A test plugin."""
    code = "XB002"
    name = "stages-as-text"
    stages = "validate"


class Fine(Rule):
    """A test plugin."""
    code = "XB003"
    name = "fine"
    stages = ("validate",)

    def check(self, ir):
        yield from ()
'''


def test_a_plugin_rule_that_is_not_valid_is_refused_with_a_clear_diagnostic(tmp_path):
    site = tmp_path / "site"
    _install_plugin(site, "invalid_rules", _INVALID_PLUGIN)
    proc = _irlint(tmp_path, site, "--no-cache", "--format", "json", BLOCKS)
    assert proc.returncode == 2, proc.stderr
    report = json.loads(proc.stdout)
    problems = [d["message"] for d in report["diagnostics"] if d["code"] == D.PLUGIN_FAILED]
    assert len(problems) == 3, problems
    assert any("IR001" in m and "input problems" in m for m in problems), problems
    assert any("'fatal'" in m and "severity" in m for m in problems), problems
    assert any("stages" in m and "tuple" in m for m in problems), problems
    listed = _irlint(tmp_path, site, "rules").stdout
    assert "XB003" in listed and "XB001" not in listed and "XB002" not in listed


# --- item 15: memory and comm JSON say how each file was read --------------------------------------
def test_memory_and_comm_json_say_which_file_was_not_read_or_read_in_part(tmp_path):
    import jsonschema

    failed = tmp_path / "failed" / "analyze_fail.ir"
    failed.parent.mkdir()
    shutil.copy(Path(__file__).parent / "fixtures" / "versions" / "2.7_analyze_fail.ir", failed)
    cut = tmp_path / "cut" / "21_validate_0076.ir"
    cut.parent.mkdir()
    cut.write_bytes(_VALIDATE[: len(_VALIDATE) // 2])
    whole = BLOCKS / "21_validate_0076.ir"
    for command in ("memory", "comm"):
        result = run(command, "--format", "json", failed, cut, whole)
        assert result.exit_code == 2
        data = json.loads(result.stdout)
        schema = Path(__file__).parent / "fixtures" / "schemas" / f"irlint-{command}-1.json"
        jsonschema.validate(data, json.loads(schema.read_text(encoding="utf-8")))
        files = {Path(e["file"]).parent.name: e for e in data["files"]}
        assert files["failed"]["read"] == "not", command
        assert not any(k.endswith("_bytes") for k in files["failed"]), files["failed"]  # not "0 bytes"
        assert [d["code"] for d in files["failed"]["diagnostics"]] == [D.DUPLICATE_GRAPH, D.COMPILE_FAILURE]
        assert files["cut"]["read"] == "partly" and files["cut"]["diagnostics"][0]["code"] == D.TRUNCATED
        assert files[BLOCKS.name]["read"] == "whole" and files[BLOCKS.name]["diagnostics"] == []


# --- item 16: the same run gives the same JSON, cache or not ----------------------------------------
def test_graphs_read_is_the_same_cold_and_warm_and_cache_hits_are_counted_apart(tmp_path):
    from irlint.runner.config import Config
    from irlint.runner.engine import lint

    folder = FIXTURES / "full-folder-1layer"
    args = (folder, "--all-stages", "--cache-dir", tmp_path / "cache", "--format", "json")
    cold = json.loads(run(*args).stdout)
    warm = json.loads(run(*args).stdout)
    assert cold["summary"]["graphs_read"] < cold["summary"]["files"]  # the folder repeats graphs
    assert warm == cold
    config = Config(cache=True, cache_dir=str(tmp_path / "cache"), jobs=1, plugins=False, all_stages=True)
    again = lint([str(folder)], config)
    assert again.cache_hits == len(again.files) and again.graphs_read == cold["summary"]["graphs_read"]
    fresh = lint(
        [str(folder)], Config(cache=True, cache_dir=str(tmp_path / "other"), jobs=1, plugins=False, all_stages=True)
    )
    assert fresh.cache_hits == 0 and fresh.graphs_read == again.graphs_read


# --- item 7: a plugin that reads ir.path gets its own file's results -------------------------------
def _rank_probe(path_free: bool):
    from irlint.rule import Rule

    class RankProbe(Rule):
        """Test probe: a plugin rule that flags rank 5 only (it reads ir.path)."""

        code = "TST931"
        name = "test-rank-probe"

        def check(self, ir):
            if "rank_5" in ir.path:
                yield self.finding(ir, next(iter(ir.cnodes())), "rank 5 only")

    RankProbe.path_free = path_free
    return RankProbe


def test_a_plugin_reading_the_path_never_gets_another_files_results(tmp_path, monkeypatch):
    import os

    from irlint.runner import engine
    from irlint.runner.config import Config

    folder = tmp_path / "cluster"
    for r in range(8):
        (folder / f"rank_{r}").mkdir(parents=True)
        shutil.copy(BLOCKS / "21_validate_0076.ir", folder / f"rank_{r}" / "21_validate_0076.ir")
        st = (folder / f"rank_{r}" / "21_validate_0076.ir").stat()  # old enough for the cache to trust
        os.utime(folder / f"rank_{r}" / "21_validate_0076.ir", ns=(st.st_atime_ns, st.st_mtime_ns - 10**10))
    monkeypatch.setattr(engine, "active_rules", lambda config: [_rank_probe(False)()])
    for dedup in (True, False):
        config = Config(cache=True, cache_dir=str(tmp_path / f"cache-{dedup}"), jobs=1, plugins=False, dedup=dedup)
        for _ in ("cold", "warm"):
            report = engine.lint([str(folder)], config)
            assert [(f.code, Path(f.file).parent.name, f.ranks) for f in report.findings] == [
                ("TST931", "rank_5", ())
            ], (dedup, report.findings)
            assert not report.shared


def test_a_plugin_declared_path_free_shares_results(tmp_path, monkeypatch):
    from irlint.runner import engine
    from irlint.runner.config import Config

    folder = tmp_path / "cluster"
    for r in range(4):
        (folder / f"rank_{r}").mkdir(parents=True)
        shutil.copy(BLOCKS / "21_validate_0076.ir", folder / f"rank_{r}" / "21_validate_0076.ir")
    monkeypatch.setattr(engine, "active_rules", lambda config: [_rank_probe(True)()])
    report = engine.lint([str(folder)], Config(cache=False, jobs=1, plugins=False))
    assert len(report.shared) == 3  # read once: the plugin promised its findings do not depend on the path
