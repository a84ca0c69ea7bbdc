"""Save irlint's JSON outputs over every case folder, or compare them with a saved set byte for byte.

    python scripts/outputs_equal.py save /tmp/before        # on the old tree
    python scripts/outputs_equal.py compare /tmp/before     # on the new tree: exit 1 on any difference

Cases: each folder directly under ../shared/corpus and each folder two levels under tests/fixtures.
Per case: `irlint --all-stages --format json`, `irlint memory --format json` and `irlint comm --format json`,
the text, HTML and SARIF reports and `irlint comm`'s text (standard output, standard error and exit code), run with the irlint of this interpreter, without the cache.
Paths are given relative to the repository, so two worktrees give the same bytes.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO.parent / "shared" / "corpus"
COMMANDS = {
    "lint": ["check", "--all-stages", "--format", "json", "--no-cache"],
    "memory": ["memory", "--format", "json"],
    "comm": ["comm", "--format", "json"],
    # the outputs a finding's headline, fixes and waste reach by other roads than the JSON
    "text": ["check", "--all-stages", "--no-cache", "--color", "never"],
    "html": ["check", "--all-stages", "--format", "html", "--no-cache"],
    "sarif": ["check", "--all-stages", "--format", "sarif", "--no-cache"],
    "comm-text": ["comm"],
}


def cases() -> list[Path]:
    found = sorted(p for p in CORPUS.iterdir() if p.is_dir()) if CORPUS.is_dir() else []
    fixtures = REPO / "tests" / "fixtures"
    found += sorted(p for p in fixtures.glob("*/*") if p.is_dir() and "corpus-gen" not in p.parts)
    return found


def shown(case: Path) -> str:
    """The case as given on the command line: relative to the repository where it can be."""
    try:
        return str(case.relative_to(REPO))
    except ValueError:
        return "../" + str(case.relative_to(REPO.parent))


def outputs(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for case in cases():
        name = shown(case).replace("../", "").replace("/", "__")
        for kind, args in COMMANDS.items():
            done = subprocess.run([sys.executable, "-m", "irlint", *args, shown(case)], cwd=REPO, capture_output=True)
            (out / f"{name}.{kind}.json").write_bytes(
                done.stdout + b"\n--- stderr ---\n" + done.stderr + f"\n--- exit {done.returncode}\n".encode()
            )


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("save", "compare"):
        print(__doc__, file=sys.stderr)
        return 2
    if argv[0] == "save":
        outputs(Path(argv[1]))
        print(f"saved {len(list(Path(argv[1]).iterdir()))} outputs in {argv[1]}")
        return 0
    old = Path(argv[1])
    new = Path(str(old).rstrip("/") + ".now")
    outputs(new)
    names = sorted({p.name for p in old.iterdir()} | {p.name for p in new.iterdir()})
    differ = [
        n
        for n in names
        if not (old / n).is_file() or not (new / n).is_file() or (old / n).read_bytes() != (new / n).read_bytes()
    ]
    for n in differ:
        print(f"differs: {n}  (diff {old / n} {new / n})")
    print(f"{len(names) - len(differ)} of {len(names)} outputs byte-equal")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
