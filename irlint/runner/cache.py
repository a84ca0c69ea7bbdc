"""A cache of lint results per dump file, so that linting an unchanged folder again is instant.

An entry holds what the rules found in one file and the diagnostics of reading it. Its key is
the file's content hash, the rules run on it (code, class and a hash of the rule module's source),
the stage its name gives and irlint itself (version, grammar and source hash), so a change to any
of them is a miss; the path is not part of it (the file's own name is stored as a placeholder and
filled in on load), so the same dump under another path or working directory is a hit. A second, small entry maps a
file's stat (inode, size, mtime, ctime) to its content hash, so an unchanged file is not hashed
again.

Entries are JSON of plain values, written atomically (temporary file + ``os.replace``) and
validated on load: an entry must never be able to run code (no pickle), and one that is damaged,
foreign or of the wrong shape is ignored and removed. A lint entry also holds a sample of the
content it was made from (size, first and last 64 KiB), checked against the file before it is
used, so a stale or forged stat entry cannot give one dump another content's results. A folder
other users can write is not used at all (they could plant any entry), and entries are read only
when they belong to the user. The folder holds a ``CACHEDIR.TAG``; ``irlint clean`` removes only
files in the layout irlint writes (``vN/lint|stat/XX/KEY``), with the content it writes. The
folder is bounded in size (oldest entries go first) and can be deleted at any time.
"""

from __future__ import annotations

import os
import re
import stat as stat_module
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..diagnostics import Diagnostic
from ..findings import Finding
from ..findings_json import as_list, diagnostic_data, diagnostic_from_data, finding_data, finding_from_data
from .hashes import FORMAT, rules_hash, sha256, tool_hash

DEFAULT_MAX_BYTES = 2 * 1024**3
ENV_DIR = "IRLINT_CACHE_DIR"
# a file modified this recently may change again within the same mtime tick: hash it every time
_RACY_SECONDS = 2.0
# the Cache Directory Tagging Specification's tag: backup tools skip the folder, and it marks the
# folder as irlint's for `irlint clean`
TAG_NAME = "CACHEDIR.TAG"
TAG_TEXT = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by irlint (https://bford.info/cachedir/).\n"
)
_KINDS = ("lint", "stat")
_KEY = re.compile(r"[0-9a-f]{64}\Z")
_LEFTOVER = re.compile(r"\.([0-9a-f]{64})\.[A-Za-z0-9_]+\.tmp\Z")


def default_dir(configured: str | None = None) -> Path:
    """``Config.cache_dir``, else ``$IRLINT_CACHE_DIR``, else the user cache folder."""
    if configured:
        return Path(configured).expanduser()
    env = os.environ.get(ENV_DIR)
    if env:
        return Path(env).expanduser()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("irlint"))


def unsafe_folder(folder: str | os.PathLike) -> str | None:
    """Why a cache folder must not be used ('' or None: it may): one that another user owns or can
    write could hold planted entries."""
    if not hasattr(os, "getuid"):
        return None
    root = Path(folder)
    uid = os.getuid()
    for path in (root, root / f"v{FORMAT}", *(root / f"v{FORMAT}" / kind for kind in _KINDS)):
        try:
            st = os.stat(path)
        except OSError:
            continue  # created by irlint, for this user only, when first written
        if not stat_module.S_ISDIR(st.st_mode):
            return f"{path} is not a folder"
        if st.st_uid not in (uid, 0):
            return f"{path} belongs to another user (uid {st.st_uid})"
        if st.st_mode & 0o002 or (st.st_mode & 0o020 and not _private_group(st.st_gid)):
            return f"{path} is writable by other users (mode {stat_module.S_IMODE(st.st_mode):04o})"
    return None


def _private_group(gid: int) -> bool:
    """The user's own group (a umask of 002 with one group per user makes folders group-writable)."""
    try:
        import grp
        import pwd

        group, user = grp.getgrgid(gid), pwd.getpwuid(os.getuid())
    except (ImportError, KeyError):
        return False
    return gid == user.pw_gid and group.gr_name == user.pw_name and set(group.gr_mem) <= {user.pw_name}


class LintCache:
    def __init__(self, folder: str | os.PathLike, max_bytes: int = DEFAULT_MAX_BYTES):
        self.folder = Path(folder)
        self.root = self.folder / f"v{FORMAT}"
        self.max_bytes = max_bytes
        self.written = 0
        self.hits = 0
        # key -> the masked graph hash (irlint.runner.dedup) stored with the entry found there: which
        # files of a run hold the same graph, when none of them had to be read
        self.graph_by_key: dict[str, str] = {}

    # --- keys -----------------------------------------------------------------------------------
    @staticmethod
    def _stat_key(path: str) -> tuple[str, os.stat_result] | None:
        try:
            st = os.stat(path)
        except OSError:
            return None
        ident = f"{os.path.realpath(path)}\0{st.st_dev}\0{st.st_ino}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}"
        return sha256(ident.encode("utf-8", "surrogateescape")).hexdigest(), st

    def known_hash(self, path: str) -> str | None:
        """The content hash recorded for this exact stat of ``path``, if any."""
        sk = self._stat_key(path)
        if sk is None:
            return None
        value = self._load(self._file("stat", sk[0]))
        return value if isinstance(value, str) and len(value) == 64 and _is_hex(value) else None

    def remember_hash(self, path: str, digest: str) -> None:
        sk = self._stat_key(path)
        if sk is None or time.time() - sk[1].st_mtime < _RACY_SECONDS:
            return
        self._store(self._file("stat", sk[0]), digest)

    @staticmethod
    def key(digest: str, rules: Iterable[Any], stage: str = "") -> str:
        """Content, rules, irlint and the stage the file name gives (findings carry it): not the
        path, which the entry does not depend on."""
        ident = "\0".join((tool_hash(), digest, rules_hash(rules), stage))
        return sha256(ident.encode("utf-8", "surrogateescape")).hexdigest()

    # --- entries --------------------------------------------------------------------------------
    def get(self, key: str, display: str, sample: str | None = None) -> tuple[list[Finding], list[Diagnostic]] | None:
        """The findings and diagnostics stored under ``key``, naming the file ``display``; with
        ``sample`` (``content_sample`` of the file), only when the entry was made from that content."""
        file = self._file("lint", key)
        value = self._load(file)
        if value is None:
            return None
        if sample is not None and isinstance(value, dict) and value.get("sample") != sample:
            return None  # made from other content (the stat entry that led here was wrong): a miss
        try:
            if not (isinstance(value, dict) and value.get("key") == key):
                raise ValueError("not this entry")
            result = (
                [finding_from_data(d, display) for d in as_list(value.get("findings"))],
                [diagnostic_from_data(d, display) for d in as_list(value.get("diagnostics"))],
            )
        except (ValueError, TypeError, KeyError):
            _unlink(str(file))  # well-formed JSON of the wrong shape: dropped, never an error
            return None
        self.hits += 1
        graph = value.get("graph")
        if isinstance(graph, str):
            self.graph_by_key[key] = graph
        return result

    def put(
        self,
        key: str,
        value: tuple[list[Finding], list[Diagnostic]],
        display: str,
        sample: str | None = None,
        graph: str | None = None,
    ) -> None:
        findings, diagnostics = value
        try:
            data = {
                "key": key,
                "sample": sample,
                "findings": [finding_data(f, display) for f in findings],
                "diagnostics": [diagnostic_data(d, display) for d in diagnostics],
            }
            if graph is not None:
                data["graph"] = graph
        except TypeError:
            return  # a rule put a value JSON cannot hold in a finding: not cached
        self._store(self._file("lint", key), data)

    def _file(self, kind: str, key: str) -> Path:
        return self.root / kind / key[:2] / key

    def _load(self, file: Path) -> Any | None:
        import json  # here: a run without a cache never loads it

        try:
            with open(file, "rb") as f:
                if not _own(os.fstat(f.fileno())):
                    return None  # not written by this user: never trusted, left alone
                value = json.loads(f.read())
        except FileNotFoundError:
            return None
        except Exception:  # noqa: BLE001 - a damaged or foreign entry is a miss, never an error
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
        import json

        from ..reporters import write_atomically  # only a run that writes pays for the import

        try:
            text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
            self._make_folders(file.parent)
            write_atomically(file, text, durable=False, mode=0o600)
            self.written += file.stat().st_size
        except OSError:
            pass  # a read-only or full cache folder only costs speed
        except (TypeError, ValueError):
            pass  # a rule put something JSON cannot hold in a finding: not cached

    def _make_folders(self, folder: Path) -> None:
        """The entry's folder and those above it up to the cache folder, for this user only; the
        cache folder gets its tag."""
        if folder.is_dir():
            return
        self.folder.parent.mkdir(parents=True, exist_ok=True)
        path = self.folder
        for part in ("", *folder.relative_to(self.folder).parts):
            path = path / part if part else path
            try:
                path.mkdir(mode=0o700)
            except FileExistsError:
                pass
        tag = self.folder / TAG_NAME
        if not tag.exists():
            tag.write_text(TAG_TEXT, encoding="ascii")

    def looks_like_cache(self) -> bool:
        """Whether the folder holds irlint's tag or entries: the only folders ``clear`` empties."""
        if _is_tag(self.folder / TAG_NAME):
            return True
        return any(_entry_content(path, kind, key) for path, kind, key in self._entries())

    def _entries(self, with_leftovers: bool = False):
        """(path, kind, key or None) of every file in the layout irlint writes: ``vN/KIND/XX/KEY``
        with XX the first two characters of KEY (and ``.KEY.XXXX.tmp`` leftovers of a killed run);
        nothing else in the folder is ever touched."""
        if self.root.is_symlink():
            return  # irlint makes real folders: a link leads out of the cache
        for kind in _KINDS:
            top = self.root / kind
            if top.is_symlink():
                continue
            try:
                subs = sorted(os.listdir(top))
            except OSError:
                continue
            for sub in subs:
                folder = top / sub
                if len(sub) != 2 or not folder.is_dir() or folder.is_symlink():
                    continue
                try:
                    names = os.listdir(folder)
                except OSError:
                    continue
                for name in names:
                    leftover = _LEFTOVER.match(name)
                    key = name if _KEY.match(name) else (leftover.group(1) if leftover else None)
                    if key is None or key[:2] != sub:
                        continue
                    path = folder / name
                    if path.is_symlink() or not path.is_file():
                        continue
                    if leftover is None:
                        yield path, kind, key
                    elif with_leftovers:
                        yield path, kind, None

    def clear(self) -> tuple[int, int]:
        """Remove the entries irlint wrote (``irlint clean``), then the folders and tag it made
        when they are left empty; (entries removed, other files left alone)."""
        removed = 0
        for path, kind, key in list(self._entries(with_leftovers=True)):
            if key is not None and not _entry_content(path, kind, key):
                continue  # named like an entry, but not what irlint writes: left alone
            _unlink(str(path))
            removed += 1
        for kind in _KINDS:
            top = self.root / kind
            for sub in sorted(top.iterdir()) if top.is_dir() else ():
                _rmdir(sub)
            _rmdir(top)
        _rmdir(self.root)
        others = sum(len(files) for _, _, files in os.walk(self.folder)) if self.folder.is_dir() else 0
        tag = self.folder / TAG_NAME
        if others == 1 and _is_tag(tag):
            _unlink(str(tag))  # nothing of irlint's is left: the folder is no longer its cache
            others = 0
        return removed, others - (1 if _is_tag(tag) else 0)

    def prune(self) -> None:
        """Remove the least recently used entries while the cache is over its size bound."""
        entries = []
        total = 0
        for path, _, key in self._entries(with_leftovers=True):
            try:
                st = os.stat(path)
            except OSError:
                continue
            if key is None:
                if time.time() - st.st_mtime > 3600:
                    _unlink(str(path))  # left behind by a killed run
                continue
            entries.append((st.st_mtime, st.st_size, str(path)))
            total += st.st_size
        if total <= self.max_bytes:
            return
        entries.sort()
        for _, size, p in entries:
            if total <= self.max_bytes:
                break
            _unlink(p)
            total -= size


def _own(st: os.stat_result) -> bool:
    """An entry this user wrote, that nobody else can change."""
    if not hasattr(os, "getuid"):
        return True
    return st.st_uid == os.getuid() and not st.st_mode & 0o022


def _is_tag(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(len(TAG_TEXT) + 1).decode("ascii", "replace") == TAG_TEXT
    except OSError:
        return False


def _entry_content(path: Path, kind: str, key: str) -> bool:
    """Whether a file holds what irlint writes under that name: a lint entry naming its own key,
    or a stat entry holding a content hash."""
    import json

    try:
        if path.stat().st_size > 1 << 30:
            return False
        value = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return False
    if kind == "lint":
        return isinstance(value, dict) and value.get("key") == key
    return isinstance(value, str) and _KEY.match(value) is not None


def _rmdir(path: Path) -> None:
    try:
        os.rmdir(path)  # only when empty
    except OSError:
        pass


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _is_hex(text: str) -> bool:
    try:
        int(text, 16)
    except ValueError:
        return False
    return True
