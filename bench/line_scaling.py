"""Time to read a dump holding one crafted long line, at N and 4N: linear work grows 4x.

    python bench/line_scaling.py [N]   (default 5000)

Each shape replaces (or adds) one line of tests/fixtures/corpus/s2_ffn_3d_reshape_blocks; the
memo tables are emptied before each read, median of 3 (bench/harness.py). grep over the 4N file
is timed in the same run for scale.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from harness import FIXTURES, grep, summary, timed

from irlint.read import record
from irlint.read.reader import read_ir

SOURCE = FIXTURES / "s2_ffn_3d_reshape_blocks" / "21_validate_0076.ir"
_SILU = b"  %5(x) = PrimFunc_SiLU(%5)"

# name -> (where: the prefix of the line it replaces, "#" to insert a line; the line for a size n)
SHAPES = {
    "type line of shapes": (
        b"      : ",
        lambda n: (
            b"      : (<Tensor[Float32]"
            + b", (1)" * n
            + b" =>, <Tensor[Float32], (2)>) -> (<Tensor[Float32], (16, 32)>)"
        ),
    ),
    "type line of n entries": (
        b"      : ",
        lambda n: (
            b"      : ("
            + b", ".join(b"<Tensor[Float32], (%d)>" % i for i in range(n))
            + b") -> (<Tensor[Float32], (16, 32)>)"
        ),
    ),
    "unclosed type line": (b"      : ", lambda n: b"      : (<Tensor[Float32], (" + b"1, " * n),
    "MakeTuple of n operands": (b"  %", lambda n: b"  %5(x) = MakeTuple(" + b", ".join([b"%0"] * n) + b")"),
    "attribute tuple": (b"  %", lambda n: _SILU + b" primitive_attrs: {k: (" + b"1, " * n + b"1)}"),
    "escaped quotes": (b"  %", lambda n: _SILU + b" primitive_attrs: {k: " + b'"\\' * n + b"}"),
    "single quotes": (b"  %", lambda n: _SILU + b" primitive_attrs: {k: " + b"'\\" * n + b"}"),
    "mixed quotes": (b"  %", lambda n: _SILU + b" primitive_attrs: {k: " + b"\"'" * n + b"}"),
    "key=name values": (b"  %", lambda n: _SILU + b" primitive_attrs: {k: " + b"=a " * n + b"}"),
    "attribute markers": (b"  %", lambda n: _SILU + b" primitive_attrs: {" * n),
    "strategy blocks": (b"  %", lambda n: _SILU + b" primitive_attrs: {a: 1}" + b" {in_strategy: 1}" * n),
    "unbalanced call": (b"  %", lambda n: b"  %5(x) = PrimFunc_SiLU(%5" + b", (" * n),
    "subgraph header": (
        b"subgraph @",
        lambda n: b"subgraph @g(" + b", ".join(b"%%para%d_x" % i for i in range(n)) + b") {",
    ),
    "parameter line": (b"%para", lambda n: b"%para1_x: <Tensor[Float32], (" + b"1, " * n + b"1)> : has_default"),
    "scope line": (b"      # Fullname", lambda n: b"      # Fullname with scope: (" + b"a/" * n),
    "comment of spaces": (b"#", lambda n: b"#a" + b" " * n + b"x"),
    "comment of words": (b"#", lambda n: b"# " + b"a " * n + b":"),
    "unknown line": (b"#", lambda n: b"x" * n + b": " * n),
}


def dump(where: bytes, line: bytes) -> bytes:
    lines = SOURCE.read_bytes().split(b"\n")
    if where == b"#":
        return b"\n".join(lines[:1] + [line] + lines[1:])
    at = next(i for i, ln in enumerate(lines) if ln.startswith(where) and (where != b"  %" or b"SiLU" in ln))
    return b"\n".join(lines[:at] + [line] + lines[at + 1 :])


def median_read(path: Path) -> float:
    """Median wall time of reading ``path`` with the memo tables emptied first (a first read)."""
    return summary([(record.clear_memos(), timed(lambda: read_ir(str(path))))[1] for _ in range(3)]).wall


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    print(f"{'shape':26} {'line (4N)':>11} {'N':>9} {'4N':>9} {'ratio':>6} {'grep 4N':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "21_validate_0076.ir"
        for name, (where, make) in SHAPES.items():
            times = []
            for k in (n, 4 * n):
                path.write_bytes(dump(where, make(k)))
                times.append(median_read(path))
            g = summary([grep([path], Path(tmp) / "grep.txt") for _ in range(3)]).wall
            print(
                f"{name:26} {len(make(4 * n)):>9} B {times[0]:>8.4f}s {times[1]:>8.4f}s {times[1] / times[0]:>6.1f} "
                f"{g:>8.4f}s",
                flush=True,
            )


if __name__ == "__main__":
    main()
