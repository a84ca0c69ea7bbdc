"""What a lint loads: a run pays only for the modules its work needs (start-up is most of a small lint)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

S2 = Path(__file__).parent / "fixtures" / "corpus" / "s2_ffn_3d_reshape_blocks"
VALIDATE = S2 / "21_validate_0076.ir"

# a lint in a fresh interpreter; prints its exit code, its report and the modules it loaded
_LINT = '''
import json, sys
from click.testing import CliRunner
from irlint.cli import main
result = CliRunner().invoke(main, sys.argv[1:])
print(json.dumps({"code": result.exit_code, "output": result.output, "modules": sorted(sys.modules)}))
'''


def _lint(*args) -> dict:
    proc = subprocess.run([sys.executable, "-c", _LINT, "--no-cache", *args], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_a_clean_quiet_lint_prints_nothing_and_loads_no_rich():
    run = _lint("-q", "--select", "PC001", str(VALIDATE))
    assert run["code"] == 0 and run["output"] == ""
    assert "rich" not in run["modules"]
    assert "irlint.memory_cli" not in run["modules"]   # the `memory` command's module
    assert "irlint.reader" in run["modules"]   # it did read the dump


def test_a_lint_with_findings_still_renders_with_rich():
    run = _lint("-q", str(VALIDATE))
    assert run["code"] == 1 and "RC002" in run["output"]
    assert "rich" in run["modules"]


def test_the_memory_command_is_loaded_when_used():
    from click.testing import CliRunner

    from irlint.cli import main

    result = CliRunner().invoke(main, ["memory", "--format", "json", str(VALIDATE)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)
    assert "memory" in CliRunner().invoke(main, ["--help"]).output
