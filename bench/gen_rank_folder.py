"""Build a many-rank save_graphs folder from the ranks of a real semi_auto_parallel one, each copy
differing as separate processes do: the numbers of ``compile_phase: train.<n>.<n>.<n>`` and the
``subgraph instance: … : 0x<address>`` of every subgraph are new per rank (random-looking, of the
same width as a real process prints them, so line lengths and byte offsets move as they would).

    python3 bench/gen_rank_folder.py --ranks 256 --out /work/scratch/speed/rank256
    python3 bench/gen_rank_folder.py --input FOLDER --ranks 32 --out DIR

Rank r copies real rank ``r % R`` (R real ranks in --input) file for file; a stage file that rank
lacks is taken from rank_0 (the corpus keeps a full folder for rank_0 only), so every rank has the
full stage set. Standard library only; the same arguments give the same bytes.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
from pathlib import Path

DEFAULT_INPUT = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "par-mismatch-ffn_col_col"
if not DEFAULT_INPUT.is_dir():
    DEFAULT_INPUT = Path("/work/shared/corpus/par-mismatch-ffn_col_col")

_PHASE = re.compile(rb"^(compile_phase: [A-Za-z_]+)((?:\.\d+)+)$", re.M)
_INSTANCE = re.compile(rb"^(subgraph instance: .* : 0x)([0-9a-fA-F]+)$", re.M)


def process_copy(data: bytes, rng: random.Random) -> bytes:
    """``data`` as another process would print it: one compile phase per file set (a process
    compiles once), one address per subgraph instance."""
    phase = (
        b"."
        + b".".join(
            str(rng.randrange(10 ** (len(p) - 1), 10 ** len(p))).encode()
            for p in (b"1795429483071950848", b"140239953514512")
        )
        + b".0"
    )
    data = _PHASE.sub(lambda m: m.group(1) + phase, data)
    return _INSTANCE.sub(lambda m: m.group(1) + b"%x" % rng.randrange(0x550000000000, 0x560000000000), data)


def ranks_of(folder: Path) -> list[Path]:
    found = sorted(
        (p for p in folder.iterdir() if p.is_dir() and re.fullmatch(r"rank_\d+", p.name)), key=lambda p: int(p.name[5:])
    )
    if not found:
        sys.exit(f"{folder}: no rank_N folders")
    return found


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--input", type=Path, default=DEFAULT_INPUT)
    ap.add_argument("--ranks", type=int, default=256)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    real = ranks_of(args.input)
    full = {p.name: p for p in real[0].iterdir() if p.suffix == ".ir"}
    total = files = 0
    for r in range(args.ranks):
        rng = random.Random(args.seed * 1_000_003 + r)
        source = real[r % len(real)]
        own = {p.name: p for p in source.iterdir() if p.suffix == ".ir"}
        dest = args.out / f"rank_{r}"
        dest.mkdir(parents=True, exist_ok=True)
        phase_rng_state = rng.getstate()
        for name in sorted(full):
            rng.setstate(phase_rng_state)  # the same compile phase in every file of the rank
            rng.random()
            data = process_copy((own.get(name) or full[name]).read_bytes(), random.Random(rng.random()))
            (dest / name).write_bytes(data)
            total += len(data)
            files += 1
    print(f"{args.out}: {args.ranks} ranks, {files} files, {total / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
