"""A cache of lint results per dump file, so that linting an unchanged folder again is instant.

An entry holds what the rules found in one file and the diagnostics of reading it. Its key is
the file's content hash, the paths it is opened and reported under, the rules run on it (code, class and a
hash of the rule module's source) and irlint itself (version, grammar and source hash), so a
change to any of them is a miss. A second, small entry maps a file's stat (inode, size, mtime,
ctime) to its content hash, so an unchanged file is not hashed again.

Entries are pickles written atomically (temporary file + ``os.replace``); an entry that cannot
be read is ignored and removed. The folder is bounded in size (oldest entries go first) and
can be deleted at any time.
"""
from __future__ import annotations

import hashlib
import os
import pickle
import sys
import time
from pathlib import Path
from typing import Any, Iterable

from . import __version__

FORMAT = 1
DEFAULT_MAX_BYTES = 2 * 1024 ** 3
ENV_DIR = "IRLINT_CACHE_DIR"
# a file modified this recently may change again within the same mtime tick: hash it every time
_RACY_SECONDS = 2.0
_SOURCES = ("reader.py", "syntax.py", "grammar_file.py", "model.py", "values.py", "stages.py", "rule.py", "findings.py",
            "diagnostics.py", "engine.py", "cache.py", "memory.py")


def default_dir(configured: str | None = None) -> Path:
    """``Config.cache_dir``, else ``$IRLINT_CACHE_DIR``, else the user cache folder."""
    if configured:
        return Path(configured).expanduser()
    env = os.environ.get(ENV_DIR)
    if env:
        return Path(env).expanduser()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("irlint"))


def content_hash(path: str) -> str:
    # sha256 rather than blake2b: with SHA extensions it hashes about twice as fast here
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest() if hasattr(hashlib, "file_digest") \
            else _hash_stream(f)


def _hash_stream(f) -> str:
    h = hashlib.sha256()
    for block in iter(lambda: f.read(1 << 20), b""):
        h.update(block)
    return h.hexdigest()


_TOOL_HASH: str | None = None


def tool_hash() -> str:
    """irlint's version, grammar and the source of the modules that shape a result."""
    global _TOOL_HASH
    if _TOOL_HASH is None:
        from .grammar_file import grammar_text

        h = hashlib.sha256(f"{FORMAT}:{__version__}".encode())
        h.update(grammar_text().encode())
        here = Path(__file__).resolve().parent
        for name in _SOURCES:
            try:
                h.update((here / name).read_bytes())
            except OSError:
                h.update(name.encode())
        _TOOL_HASH = h.hexdigest()
    return _TOOL_HASH


_RULE_HASHES: dict[type, str] = {}


def rules_hash(rules: Iterable[Any]) -> str:
    """The identity of a rule list: code, class and the source of each rule's module."""
    h = hashlib.sha256()
    for rule in rules:
        cls = type(rule)
        part = _RULE_HASHES.get(cls)
        if part is None:
            src = b""
            try:
                file = getattr(sys.modules[cls.__module__], "__file__", None)
                src = Path(file).read_bytes() if file else b""
            except (KeyError, OSError):
                pass
            part = hashlib.sha256(f"{cls.code}:{cls.__module__}:{cls.__qualname__}:".encode() + src).hexdigest()
            _RULE_HASHES[cls] = part
        h.update(part.encode())
    return h.hexdigest()


class LintCache:
    def __init__(self, folder: str | os.PathLike, max_bytes: int = DEFAULT_MAX_BYTES):
        self.root = Path(folder) / f"v{FORMAT}"
        self.max_bytes = max_bytes
        self.written = 0
        self.hits = 0

    # --- keys -----------------------------------------------------------------------------------
    @staticmethod
    def _stat_key(path: str) -> tuple[str, os.stat_result] | None:
        try:
            st = os.stat(path)
        except OSError:
            return None
        ident = f"{os.path.realpath(path)}\0{st.st_dev}\0{st.st_ino}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}"
        return hashlib.sha256(ident.encode()).hexdigest(), st

    def known_hash(self, path: str) -> str | None:
        """The content hash recorded for this exact stat of ``path``, if any."""
        sk = self._stat_key(path)
        if sk is None:
            return None
        value = self._load(self._file("stat", sk[0]))
        return value if isinstance(value, str) and len(value) == 64 else None

    def remember_hash(self, path: str, digest: str) -> None:
        sk = self._stat_key(path)
        if sk is None or time.time() - sk[1].st_mtime < _RACY_SECONDS:
            return
        self._store(self._file("stat", sk[0]), digest)

    @staticmethod
    def key(digest: str, names: tuple[str, ...], rules: Iterable[Any]) -> str:
        """``names``: the path as opened and as displayed; findings and diagnostics carry them."""
        ident = "\0".join((tool_hash(), digest, *names, rules_hash(rules)))
        return hashlib.sha256(ident.encode()).hexdigest()

    # --- entries --------------------------------------------------------------------------------
    def get(self, key: str) -> Any | None:
        value = self._load(self._file("lint", key))
        if isinstance(value, tuple) and len(value) == 2 and value[0] == key:
            self.hits += 1
            return value[1]
        return None

    def put(self, key: str, value: Any) -> None:
        self._store(self._file("lint", key), (key, value))

    def _file(self, kind: str, key: str) -> Path:
        return self.root / kind / key[:2] / key

    def _load(self, file: Path) -> Any | None:
        try:
            with open(file, "rb") as f:
                value = pickle.load(f)
        except FileNotFoundError:
            return None
        except Exception:  # a damaged or foreign entry is a miss, never an error
            try:
                file.unlink()
            except OSError:
                pass
            return None
        try:
            os.utime(file)  # keeps recently used entries from being evicted first
        except OSError:
            pass
        return value

    def _store(self, file: Path, value: Any) -> None:
        import tempfile  # only a run that writes pays for the import

        try:
            file.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=file.parent, prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as f:
                    pickle.dump(value, f, protocol=pickle.HIGHEST_PROTOCOL)
                os.replace(tmp, file)
            except BaseException:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
                raise
            self.written += file.stat().st_size
        except OSError:
            pass  # a read-only or full cache folder only costs speed
        except (pickle.PicklingError, TypeError, AttributeError):
            pass  # a rule put something unpicklable in a finding: not cached

    def prune(self) -> None:
        """Remove the least recently used entries while the cache is over its size bound."""
        if not self.root.is_dir():
            return
        entries = []
        total = 0
        for dirpath, _, names in os.walk(self.root):
            for name in names:
                p = os.path.join(dirpath, name)
                try:
                    st = os.stat(p)
                except OSError:
                    continue
                if name.startswith(".tmp-") and time.time() - st.st_mtime > 3600:
                    _unlink(p)  # left behind by a killed run
                    continue
                entries.append((st.st_mtime, st.st_size, p))
                total += st.st_size
        if total <= self.max_bytes:
            return
        entries.sort()
        for _, size, p in entries:
            if total <= self.max_bytes:
                break
            _unlink(p)
            total -= size


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
