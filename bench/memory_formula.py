"""irlint's kept-activation figure per GPT layer next to Korthikanti et al. 2022 ("Reducing
Activation Recomputation in Large Transformer Models"), from the GPT-layer fixtures made by
``bench/gpt_layer.py`` (MindSpore 2.10, CPU, fp16). Run: ``python bench/memory_formula.py``.

The paper counts one layer as s*b*h*(34 + 5*a*s/h) bytes with no recompute, 34*s*b*h with
selective (core attention) recompute and 2*s*b*h with full recompute. MindSpore keeps two things
the paper leaves out or sizes otherwise, and the "explained" column adds exactly those:
- dropout masks in the activation dtype (fp16, 2 bytes) instead of 1 byte: +a*s*s*b for the
  attention-probability mask (none only: selective recomputes it) and +s*b*h for each of the two
  hidden dropouts (attention output, MLP output);
- LayerNorm's saved statistics (mean and 1/std, fp32, (b, s, 1)) of both LayerNorms: +16*s*b.
Each layer counts its own output (the next layer's input) instead of its input: the same 2*s*b*h.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from irlint.accounts.memory import account  # noqa: E402
from irlint.read.reader import read_ir  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "memory"
MODES = ("none", "selective", "full")  # layer i of each fixture: bench/gpt_layer.py --modes
_NAME = re.compile(r"gpt-s(\d+)-b(\d+)-h(\d+)-a(\d+)\Z")


def paper(mode: str, s: int, b: int, h: int, a: int) -> float:
    sbh = s * b * h
    return {"none": sbh * (34 + 5 * a * s / h), "selective": 34 * sbh, "full": 2 * sbh}[mode]


def mindspore_extra(mode: str, s: int, b: int, h: int, a: int) -> dict[str, int]:
    """The terms MindSpore keeps beyond the paper's count, by name."""
    if mode == "full":
        return {}
    extra = {
        "fp16 hidden dropout masks (+1 byte each)": 2 * s * b * h,
        "LayerNorm mean and 1/std (fp32)": 2 * 2 * 4 * s * b,
    }
    if mode == "none":
        extra["fp16 attention dropout mask (+1 byte)"] = a * s * s * b
    return extra


def rows() -> list[dict]:
    out = []
    for folder in sorted(FIXTURES.iterdir()):
        m = _NAME.match(folder.name)
        if not m:
            continue
        s, b, h, a = map(int, m.groups())
        report = account(read_ir(str(folder / "21_validate_0076.ir")))
        kept = {row.layer: row.kept_bytes for row in report.layers()}
        for i, mode in enumerate(MODES):
            formula = paper(mode, s, b, h, a)
            extra = mindspore_extra(mode, s, b, h, a)
            out.append(
                {
                    "case": folder.name,
                    "mode": mode,
                    "s": s,
                    "b": b,
                    "h": h,
                    "a": a,
                    "irlint": kept[str(i)],
                    "paper": formula,
                    "explained": formula + sum(extra.values()),
                    "extra": extra,
                }
            )
    return out


def main() -> None:
    head = (
        f"{'s':>3} {'b':>2} {'h':>3} {'a':>2}  {'recompute':<9} {'irlint':>7} {'paper':>7} {'ratio':>6} "
        f"{'paper+MS terms':>14} {'ratio':>6}"
    )
    print(head)
    for r in rows():
        print(
            f"{r['s']:>3} {r['b']:>2} {r['h']:>3} {r['a']:>2}  {r['mode']:<9} {r['irlint']:>7} "
            f"{r['paper']:>7.0f} {r['irlint'] / r['paper']:>6.3f} {r['explained']:>14.0f} "
            f"{r['irlint'] / r['explained']:>6.3f}"
        )
    print("\nMindSpore terms: " + "; ".join(f"{k}" for k in mindspore_extra("none", 1, 1, 1, 1)))


if __name__ == "__main__":
    main()
