"""Issue 31: nothing lost, nothing claimed that was not read (the input side: cut and damaged
dumps, control bytes, what plugins may do to the report)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from irlint import diagnostics as D
from irlint.cli import main
from irlint.reader import read_ir

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
