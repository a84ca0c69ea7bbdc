"""The hashes a cache entry is keyed and checked by: a file's content (sha256, and a sample of its ends), irlint
itself (version, grammar, source) and the rules run (code, class, source of their modules)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .. import __version__

if TYPE_CHECKING:
    from pathlib import Path

_SAMPLE_BYTES = 64 * 1024


def sha256(data: bytes = b""):
    import hashlib  # here: a lint without a cache hashes nothing, and loading OpenSSL's hashes is part of a start

    return hashlib.sha256(data)


def content_hash(path: str) -> str:
    import hashlib

    # sha256 rather than blake2b: with SHA extensions it hashes about twice as fast here
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest() if hasattr(hashlib, "file_digest") else _hash_stream(f)


def content_sample(path: str) -> str:
    """Size and the first and last 64 KiB of a file: cheap to read whatever its size, and enough to
    tell that a cache entry was made from other content."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        h = sha256(str(size).encode() + b"\0" + f.read(_SAMPLE_BYTES))
        if size > _SAMPLE_BYTES:
            f.seek(max(_SAMPLE_BYTES, size - _SAMPLE_BYTES))
            h.update(f.read(_SAMPLE_BYTES))
    return h.hexdigest()


def _hash_stream(f) -> str:
    h = sha256()
    for block in iter(lambda: f.read(1 << 20), b""):
        h.update(block)
    return h.hexdigest()


# the cache entries' layout, in every key: a new one starts afresh
FORMAT = 3  # 1: pickles (never read: a pickle can run code); 2: findings without model names
_TOOL_HASH: str | None = None


def tool_hash() -> str:
    """irlint's version, grammar and the source of the modules that shape a result."""
    global _TOOL_HASH
    if _TOOL_HASH is None:
        from ..read.grammar_file import grammar_text

        h = sha256(f"{FORMAT}:{__version__}".encode())
        h.update(grammar_text().encode())
        # every module of the package: a new reader module must not be left out by a list
        from pathlib import Path  # the cache's: a lint without one never needs it

        package = Path(__file__).resolve().parent.parent
        for file in sorted(package.rglob("*.py")):
            name = file.relative_to(package).as_posix()
            if name.startswith("rules/"):  # an installed wheel's built-in rules: hashed per rule
                continue
            try:
                h.update(name.encode() + b"\0" + file.read_bytes())
            except OSError:
                h.update(name.encode())
        _TOOL_HASH = h.hexdigest()
    return _TOOL_HASH


_RULE_HASHES: dict[type, str] = {}
_TREE_HASHES: dict[str, str] = {}


def _source_root(module_name: str) -> Path | None:
    """The folder whose Python files a rule's verdicts depend on: rules share helper modules
    (``rules/recompute/evidence.py``), so a built-in rule stands for all of ``irlint.rules`` and a
    plugin in a package for its top-level package; a plugin that is a lone module has none."""
    for root_name in ("irlint.rules", module_name.split(".")[0]):
        if module_name == root_name or module_name.startswith(root_name + "."):
            paths = getattr(sys.modules.get(root_name), "__path__", None)
            if paths:
                from pathlib import Path

                return Path(list(paths)[0])
    return None


def _tree_hash(root: Path) -> str:
    key = str(root)
    if key not in _TREE_HASHES:
        h = sha256()
        for file in sorted(root.rglob("*.py")):
            try:
                h.update(str(file.relative_to(root)).encode() + b"\0" + file.read_bytes())
            except OSError:
                h.update(str(file).encode())
        _TREE_HASHES[key] = h.hexdigest()
    return _TREE_HASHES[key]


def rules_hash(rules: Iterable[Any]) -> str:
    """The identity of a rule list: code, class and the source of each rule's module and of the
    package it belongs to."""
    h = sha256()
    for rule in rules:
        cls = type(rule)
        part = _RULE_HASHES.get(cls)
        if part is None:
            src = b""
            try:
                file = getattr(sys.modules[cls.__module__], "__file__", None)
                if file:
                    with open(file, "rb") as f:
                        src = f.read()
            except (KeyError, OSError):
                pass
            root = _source_root(cls.__module__)
            if root is not None:
                src += _tree_hash(root).encode()
            part = sha256(f"{cls.code}:{cls.__module__}:{cls.__qualname__}:".encode() + src).hexdigest()
            _RULE_HASHES[cls] = part
        h.update(part.encode())
    return h.hexdigest()
