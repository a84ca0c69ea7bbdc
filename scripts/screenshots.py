"""Render real HTML reports from the dumps in tests/fixtures/corpus and screenshot them in headless
Chromium (docs/formats.md shows them). Re-run after changing the report:

    python scripts/screenshots.py            # writes docs/screenshots/*.png
    python scripts/screenshots.py --keep DIR # also keeps the HTML pages in DIR

Needs irlint installed (``pip install -e .``) and ``chromium`` on PATH (Debian: apt-get install chromium).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from chromium_cdp import Browser

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "fixtures" / "corpus"
OUT = ROOT / "docs" / "screenshots"

# (png name, irlint arguments, height of the screenshot in CSS pixels)
PAGES = [
    ("lint-parallel.png", ["par-mismatch-mm_rows8_to_cols8", "--format", "html"], 1180),
    ("diff-recompute.png", ["diff", "s2_ffn_3d_reshape_blocks", "s3_ffn_3d_reshape_fixed", "--format", "html"], 1420),
    (
        "diff-parallel.png",
        ["diff", "par-mismatch-mm_rows8_to_cols8", "par-fixed-mm_col_row_mp8", "--format", "html"],
        1250,
    ),
    ("comm-parallel.png", ["comm", "par-mismatch-ffn_mul_disagrees_8ranks/rank_0", "--format", "html"], 1250),
]
NO_CACHE = {"comm", "memory"}  # commands that keep no lint cache (no -n)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="keep the rendered HTML pages in this folder")
    parser.add_argument("--width", type=int, default=1100)
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="irlint-screens-"))
    work.mkdir(parents=True, exist_ok=True)
    OUT.mkdir(parents=True, exist_ok=True)
    with Browser(width=args.width, height=900) as browser:
        for png, irlint_args, height in PAGES:
            html = work / png.replace(".png", ".html")
            # from the corpus folder, so the page shows short paths; -n: no cache
            no_cache = [] if irlint_args[0] in NO_CACHE else ["-n"]
            done = subprocess.run(
                [sys.executable, "-m", "irlint", *irlint_args, *no_cache, "-o", str(html)], cwd=CORPUS
            )
            if done.returncode not in (0, 1):
                print(f"irlint {' '.join(irlint_args)}: exit {done.returncode}", file=sys.stderr)
                return 1
            browser.open(html)
            errors = browser.console_errors()
            if errors:
                print(f"{html}: console errors: {errors}", file=sys.stderr)
                return 1
            browser.screenshot(OUT / png, clip_height=height)
            print(
                f"{OUT.relative_to(ROOT) / png}: {(OUT / png).stat().st_size:,} bytes"
                + (f" (from {html})" if args.keep else "")
            )
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
