"""A generated N-layer folder has the findings of its source, once per layer: none lost, none added."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from irlint import Config, lint

ROOT = Path(__file__).resolve().parents[1]
GEN = ROOT / "bench" / "gen_dump.py"
SOURCE = Path(__file__).parent / "fixtures" / "corpus" / "full-folder-1layer"
LAYERS = 3
_LAYER = re.compile(r"layers-CellList/0-")
_OP_SUFFIX = re.compile(r"-op\d+$")

pytestmark = pytest.mark.skipif(not GEN.exists(), reason="bench/gen_dump.py is not here")


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    out = tmp_path_factory.mktemp("gen") / f"dump{LAYERS}"
    subprocess.run(
        [sys.executable, str(GEN), "--input", str(SOURCE), "--layers", str(LAYERS), "--out", str(out), "--jobs", "1"],
        check=True,
        capture_output=True,
    )
    return out


def _problems(folder: Path, **config) -> Counter:
    report = lint([str(folder)], Config(cache=False, **config))
    assert report.diagnostics == []
    # each occurrence of a finding grouped by root cause: the copies are what is counted
    return Counter((f.code, f.stage, f.op, _OP_SUFFIX.sub("", f.scope)) for g in report.findings for f in g.occurrences)


def _per_layer(found: Counter) -> Counter:
    out: Counter = Counter()
    for (code, stage, op, scope), n in found.items():
        layers = range(LAYERS) if _LAYER.search(scope) else [0]
        for k in layers:
            out[(code, stage, op, _LAYER.sub(f"layers-CellList/{k}-", scope))] += n
    return out


@pytest.mark.parametrize("jobs", [1, 2])
def test_generated_folder_has_the_source_findings_per_layer(generated, jobs):
    source = _problems(SOURCE, jobs=1)
    assert any(_LAYER.search(scope) for _, _, _, scope in source), "the source has layer-0 findings"
    assert _problems(generated, jobs=jobs) == _per_layer(source)
