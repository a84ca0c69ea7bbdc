"""The irlint program ends without the interpreter's teardown (``cli.run``), and loses nothing by it:
the report, the exit code, exit handlers, running threads, a profiler around it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from irlint.cli import main

S2 = Path(__file__).parent / "fixtures" / "corpus" / "s2_ffn_3d_reshape_blocks"
VALIDATE = S2 / "21_validate_0076.ir"

# irlint called the way the console script calls it, with something left for the end of the process
_PROGRAM = """
import atexit, sys, threading, time
from pathlib import Path
out = Path(sys.argv[1])
if "--late-thread" in sys.argv:
    sys.argv.remove("--late-thread")
    def late():
        time.sleep(0.5)
        (out / "thread-done").write_text("done")
    threading.Thread(target=late).start()
atexit.register(lambda: (out / "atexit-ran").write_text("ran"))
sys.argv = ["irlint", *sys.argv[2:]]
from irlint.cli import run
sys.exit(run())
"""


def _irlint(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "irlint", "--no-cache", *args], capture_output=True, text=True, cwd=cwd, timeout=120
    )


def test_the_program_reports_as_the_command_does(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # where the program runs: files are shown relative to it
    expected = CliRunner().invoke(main, ["--no-cache", str(VALIDATE), "--format", "json"])
    proc = _irlint(str(VALIDATE), "--format", "json", cwd=tmp_path)
    assert proc.returncode == expected.exit_code == 1, proc.stderr
    assert json.loads(proc.stdout) == json.loads(expected.output)
    to_file = _irlint(str(VALIDATE), "-o", str(tmp_path / "report.txt"), cwd=tmp_path)
    assert to_file.returncode == 1 and to_file.stdout == ""
    assert "RC002" in (tmp_path / "report.txt").read_text()


def test_exit_codes_are_kept(tmp_path):
    assert _irlint(str(VALIDATE), "--exit-zero", cwd=tmp_path).returncode == 0
    assert _irlint(str(tmp_path / "missing"), cwd=tmp_path).returncode == 2


def test_exit_handlers_run_and_threads_are_waited_for(tmp_path):
    script = tmp_path / "program.py"
    script.write_text(_PROGRAM)
    args = [sys.executable, str(script), str(tmp_path), "--no-cache", "-q", str(VALIDATE)]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "RC002" in proc.stdout, proc.stderr
    assert (tmp_path / "atexit-ran").read_text() == "ran"
    proc = subprocess.run([*args, "--late-thread"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert (tmp_path / "thread-done").read_text() == "done"


def test_a_profiler_around_irlint_still_writes_its_profile(tmp_path):
    profile = tmp_path / "irlint.prof"
    proc = subprocess.run(
        [sys.executable, "-m", "cProfile", "-o", str(profile), "-m", "irlint", "--no-cache", "-q", str(VALIDATE)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert "RC002" in proc.stdout, proc.stderr  # (cProfile ends with 0 whatever the program's code)
    import pstats

    assert any(
        path.endswith(os.path.join("cli", "check.py")) and name == "check_cmd"
        for path, _, name in pstats.Stats(str(profile)).stats
    )
