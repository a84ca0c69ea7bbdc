"""Node lines of the dumps, read by line number only for the lines a report shows."""

from __future__ import annotations

from collections import defaultdict
from itertools import islice

MAX_CHARS = 240  # dump lines carry full type and attribute lists; a report shows their head


class SourceLines:
    def __init__(self) -> None:
        self._lines: dict[str, dict[int, str]] = {}
        # reported name -> (path as opened, compression): standard input, compressed dumps
        self.streams: dict[str, tuple[str, str | None]] = {}

    def prefetch(self, wanted: dict[str, set[int]]) -> None:
        """Read each file once, keeping only the wanted lines."""
        for path, numbers in wanted.items():
            if path in self._lines:
                numbers = numbers - set(self._lines[path])
                if not numbers:
                    continue
            got = self._lines.setdefault(path, {})
            try:
                with self._open(path) as f:
                    for i, raw in _numbered(f, numbers):
                        got[i] = _clip(raw.decode("utf-8", "replace").rstrip("\r\n"))
            except (OSError, EOFError, ValueError):  # gone, or a damaged compressed stream
                pass
            for n in numbers:
                got.setdefault(n, "")

    def _open(self, name: str):
        from ..runner.discover import compression_of, open_dump

        if name in self.streams:
            return open_dump(*self.streams[name])
        with open(name, "rb") as f:  # a compressed dump is shown decompressed, whoever linted it
            compression = compression_of(f.read(8))
        return open_dump(name, compression)

    def line(self, path: str, number: int) -> str:
        if number <= 0:
            return ""
        if number not in self._lines.get(path, {}):
            self.prefetch({path: {number}})
        return self._lines[path][number]

    def whole_lines(self, path: str, numbers: set[int]) -> dict[int, str]:
        """Lines by number, not cut (a type line of a long call runs past what a report shows)."""
        got: dict[int, str] = {}
        try:
            with self._open(path) as f:
                for i, raw in _numbered(f, numbers):
                    got[i] = raw.decode("utf-8", "replace").strip()
        except (OSError, EOFError, ValueError):
            pass
        return got

    def prefetch_findings(self, findings) -> None:
        wanted: dict[str, set[int]] = defaultdict(set)
        for f in findings:
            if f.line > 0:
                wanted[f.file].add(f.line)
            for r in f.related:
                if r.line > 0:
                    wanted[r.file].add(r.line)
        self.prefetch(wanted)


def _numbered(f, numbers: set[int]):
    """(number, line) for the wanted line numbers (1-based) of a binary stream, in order; the lines
    between are skipped by islice, in C (a Python step per line costs more on large dumps)."""
    at = 0  # lines read so far
    for number in sorted(n for n in numbers if n > 0):
        raw = next(islice(f, number - at - 1, None), None)
        if raw is None:  # past the end
            return
        yield number, raw
        at = number


def _clip(text: str) -> str:
    text = text.strip()
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 1] + "…"
