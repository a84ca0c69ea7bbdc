"""``irlint fix CONFIG.yaml DUMP...``: lint the dumps, check the config against them, and apply the
run's fix plan to the MindFormers YAML config (``mfyaml.apply_fix_plan``: the one place the YAML is
edited); strategy changes are printed with the model line, never written into Python. This module
reads and replaces the file: permissions, a lock, compare-and-swap, no temporary file left."""

from __future__ import annotations

import difflib
import hashlib
import os
import re
import signal
import stat
import sys
from typing import TYPE_CHECKING, NamedTuple

import click

from .exits import EXIT_CLEAN, fail
from .options import config_file_option, debug_option, ignore_option, no_cache_option, select_option

if TYPE_CHECKING:
    from ..mfyaml import DumpFacts

EXIT_LEFT = 1  # findings the plan leaves, or --diff with a change


@click.command("fix")
@click.argument("config_yaml", metavar="CONFIG.yaml")
@click.argument("dumps", nargs=-1, required=True, metavar="DUMP...")
@click.option("--diff", "show_diff", is_flag=True, help="Print the change as a unified diff and write nothing.")
@click.option(
    "--force",
    is_flag=True,
    help="Apply the plan even when the config does not look like the one the dumps were compiled with.",
)
@config_file_option("the first DUMP")
@select_option
@ignore_option
@no_cache_option
@debug_option
def fix_cmd(config_yaml, dumps, show_diff, force, config_file, select, ignore, no_cache):
    """Apply the fix plan of DUMP... (as a lint of them gives it) to CONFIG.yaml, a MindFormers
    config: the select_recompute keys the findings need are added to recompute_config (list,
    dict, per-stage or per-chunk form; True is written out as the model's own default keys; a key
    one of your patterns already matches, as MindFormers matches, is not added again; per-stage
    counts are raised where the dump shows a pipeline). Your keys, comments, order and quoting are
    kept, and no other line changes: the new text is loaded again and compared with yours, and an
    edit that would change anything outside the plan's keys is refused. The config is first
    checked against the dumps (default keys the dumps show applied that it lacks, full recompute
    on one side only, another model): a mismatch is refused unless --force. The file is replaced
    atomically (a temporary file in its folder, renamed over it, its mode and owner kept) after
    checking it did not change meanwhile; never through a symbolic link, never a read-only file.
    Config keys the plan names (a model option, parallel.enable_alltoall) are set where the config
    has them, with the type they have there. Strategy and Layout changes are printed with the model
    file:line, as is every other fix the plan holds but no YAML can (by hand); a key to take out is
    named as your config writes it.

    Exit codes: 0 nothing left to do by hand (with --diff: no change), 1 a change was shown
    (--diff) or something is left (strategy or Layout changes, ops no key can tag, fixes by hand),
    2 unusable input, a config that does not match the dumps, or an edit irlint fix will not make
    (nothing written).
    """
    from ..fixplan import fix_plan
    from ..mfyaml import YamlError, parsed
    from ..runner.config import ConfigError
    from ..runner.discover import InputError
    from ..runner.lint_file import READ_HOOKS

    text = _read_config(config_yaml, write=not show_diff)
    read = _FactsOfRead()
    READ_HOOKS.append(read)
    try:
        report, found = _lint(dumps, config_file, select, ignore, no_cache)
    except (ConfigError, InputError) as exc:
        fail(str(exc))
    finally:
        READ_HOOKS.remove(read)
    if _same_file(config_yaml, [f.path for f in found]):
        fail(f"{config_yaml}: is one of the dumps of this run, not a MindFormers config")
    try:
        # parsed once: the check and the edit take it while the text under the lock is this one
        first_block = parsed(text)
    except YamlError as exc:
        fail(f"{config_yaml}: {exc}")
    first_digest = hashlib.sha256(text.encode("utf-8")).digest()
    if report.diagnostics:
        for d in report.diagnostics:
            click.echo(f"{d.file}:{max(d.line, 1)}:1: {d.code} {d.message}", err=True)
        fail("some of the dumps could not be read: no fix is applied from a partial lint")
    plan = fix_plan(report.findings)
    # the config is checked against the dumps where it gets recompute keys (a model option alone is
    # the same in every recompute setting)
    facts = dump_facts(found, read.facts) if plan["recompute"]["select_recompute"] else None

    def edit_of(current: str, digest: bytes):
        """The plan applied to the config's text as it is now, ``digest`` its SHA-256 (exits 2 on a
        mismatch or a refusal)."""
        from ..mfyaml import apply_fix_plan, mismatches

        nonlocal first_digest
        try:
            block = first_block if digest == first_digest else parsed(current)
            first_digest = b""  # the edit changes the block's document: one edit per parse
            planned = plan["recompute"]["select_recompute"]
            wrong = mismatches(current, facts, planned, block) if facts is not None else []
            if wrong and not force:
                for w in wrong:
                    click.echo(f"{config_yaml}: does not match the dumps: {w}", err=True)
                fail(
                    f"{config_yaml}: is not the config the dumps were compiled with (above): nothing written; "
                    "give the config they were compiled with, or --force to apply the plan to this one"
                )
            for w in wrong:
                click.echo(f"{config_yaml}: warning: does not match the dumps: {w} (--force)", err=True)
            return apply_fix_plan(current, plan, facts.family if facts else None, block)
        except YamlError as exc:
            fail(f"{config_yaml}: {exc}")

    if show_diff:
        result = edit_of(text, first_digest)
        if result.edit.text != text:
            click.echo(_diff(config_yaml, text, result.edit.text), nl=False)
    else:
        del text  # read again under the lock (a large file is not held twice)
        text, result = _replace(config_yaml, edit_of)
    edit = result.edit
    changed = edit.text != text
    _say(config_yaml, edit, plan, changed, show_diff)
    for line in result.settings:
        click.echo(f"{config_yaml}: {'would set' if show_diff else 'set'} {line}", err=True)
    for line in result.by_hand:
        click.echo(f"{config_yaml}: {line}", err=True)
    left = bool(
        plan["strategies"]
        or plan["layouts"]
        or plan["by_hand"]
        or plan["recompute"]["no_key"]
        or edit.notes
        and not edit.added
        and not edit.raised
        and not edit.dropped
        and plan["recompute"]["select_recompute"]
    ) or bool(result.by_hand)
    sys.exit(EXIT_LEFT if left or (show_diff and changed) else EXIT_CLEAN)


def dump_facts(found, known: dict | None = None) -> DumpFacts:
    """What the linted dumps say about the config they were compiled with (``mfyaml.DumpFacts``);
    ``known``: path -> ``file_facts`` of the dumps the lint read here (the others are read now)."""
    from ..mfyaml import DumpFacts, family_of
    from ..runner.lint_file import read_dump

    tagged: set[str] = set()
    untagged: set[str] = set()
    models: dict[str, list[str]] = {}
    full = False
    for f in found:
        facts = (known or {}).get(f.path) or file_facts(read_dump(f))
        tagged |= facts.tagged
        untagged |= facts.untagged
        full |= facts.full_layer
        for cls in facts.classes:
            models.setdefault(cls, []).append(f.display)
    return DumpFacts(family_of(tagged), frozenset(tagged), full, models, frozenset(untagged - tagged))


class _FactsOfRead:
    """``file_facts`` of each dump the lint reads in this process (not in a forked worker) whose
    findings name select keys: a plan with keys checks the config against every dump."""

    def __init__(self) -> None:
        self.facts: dict[str, FileFacts] = {}
        self.pid = os.getpid()

    def __call__(self, f, ir, findings) -> None:
        if os.getpid() == self.pid and any(x.fixes.recompute and x.fixes.recompute.keys for x in findings):
            self.facts[f.path] = file_facts(ir)


class FileFacts(NamedTuple):
    """``dump_facts`` of one dump."""

    tagged: frozenset[str]
    untagged: frozenset[str]  # keys of untagged forward primitives, its own tagged keys left out
    full_layer: bool
    classes: tuple[str, ...]  # its decoder layer classes, sorted


def file_facts(ir) -> FileFacts:
    """What one dump's model says about the config."""
    from ..model.keys import CELL_PREFIX, node_select_key
    from ..rules.recompute.evidence import BOOKKEEPING_OPS
    from ..rules.recompute.keys import tagged_keys

    mine = {key for _, key in tagged_keys(ir)}
    untagged: set[str] = set()
    classes: set[str] = set()
    in_layers = recomputed = 0
    for k in ir.cnodes():
        d = ir[k]
        if ir.is_backward(k) or ir.is_recompute_copy(k) or d["op"] in BOOKKEEPING_OPS:
            continue
        if (d.get("primitive_attrs") or {}).get("recompute") is not True:
            key, guessed = node_select_key(ir, k)
            if key is not None and not guessed and key not in mine:
                untagged.add(key)
        scope = d.get("scope", "")
        m = _LAYER_PART.search(scope)
        if m is None:
            continue
        classes.add(m.group(1))
        in_layers += 1
        recomputed += scope.startswith(CELL_PREFIX)
    # a layer's Cell.recompute() prefixes the scope of (nearly) every forward op in it
    full = bool(in_layers) and recomputed * 2 > in_layers
    return FileFacts(frozenset(mine), frozenset(untagged), full, tuple(sorted(classes)))


_LAYER_PART = re.compile(r"/layers-CellList/\d+-(\w+)(?=/|$)")  # a decoder layer of the model's list


def _diff(path: str, old: str, new: str) -> str:
    """A unified diff of the lines between the texts' common start and end, found a piece at a
    time (a large file is neither split into lines nor compared line by line)."""
    head = _common(old, new, 1)
    tail = _common(old, new, -1, limit=min(len(old), len(new)) - head)
    # whole lines, with context enough on each side (unified_diff keeps three lines of it)
    start = head
    for _ in range(4):
        start = old.rfind("\n", 0, max(start - 1, 0)) + 1 if start else 0
    old_end, new_end = len(old) - tail, len(new) - tail
    for _ in range(4):
        nl = old.find("\n", old_end)
        if nl < 0:
            old_end, new_end = len(old), len(new)
            break
        new_end += nl + 1 - old_end
        old_end = nl + 1
    first = old.count("\n", 0, start)
    a = old[start:old_end].splitlines(keepends=True)
    b = new[start:new_end].splitlines(keepends=True)
    out = "".join(difflib.unified_diff(a, b, fromfile=path, tofile=path))
    if first:  # the hunks' line numbers counted from the start of the file
        out = re.sub(
            r"^@@ -(\d+)((?:,\d+)?) \+(\d+)((?:,\d+)?) @@",
            lambda m: f"@@ -{int(m.group(1)) + first}{m.group(2)} +{int(m.group(3)) + first}{m.group(4)} @@",
            out,
            flags=re.M,
        )
    return out


def _common(a: str, b: str, step: int, limit: int | None = None) -> int:
    """The length of the common start (``step`` 1) or end (-1) of two texts, at most ``limit``."""
    most = min(len(a), len(b)) if limit is None else limit
    done, piece = 0, 1 << 16
    while done < most:
        size = min(piece, most - done)
        if step > 0:
            x, y = a[done : done + size], b[done : done + size]
        else:
            x, y = a[len(a) - done - size : len(a) - done], b[len(b) - done - size : len(b) - done]
        if x == y:
            done += size
            continue
        if size == 1:
            break
        piece = max(1, size // 16)
    return done


def _writable(path: str, st: os.stat_result) -> bool:
    """Write permission as the mode says, for root too (for whom os.access always says yes)."""
    return bool(st.st_mode & 0o222) and os.access(path, os.W_OK)


def _read_config(path: str, write: bool) -> str:
    if os.path.islink(path):
        if write:
            fail(
                f"{path}: is a symbolic link; irlint fix replaces only a regular file it is given "
                f"(give the file the link points to: {os.path.realpath(path)})"
            )
    if not os.path.exists(path):
        fail(f"{path}: no such file")
    if not os.path.isfile(path):
        fail(f"{path}: is not a regular file")
    if path.endswith((".ir", ".ir.gz", ".ir.bz2", ".ir.xz")):
        fail(
            f"{path}: is a graph dump, not a MindFormers config; the config comes first: irlint fix CONFIG.yaml DUMP..."
        )
    if write:
        _check_permissions(path)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as exc:
        fail(f"{path}: cannot read: {exc.strerror or exc}")
    return _decoded(path, raw)


def _check_permissions(path: str) -> None:
    st = os.stat(path)
    folder = os.path.dirname(os.path.abspath(path))
    if not _writable(path, st):
        fail(f"{path}: cannot write: permission denied (the file is read-only, mode {stat.S_IMODE(st.st_mode):04o})")
    if not _writable(folder, os.stat(folder)) or not os.access(folder, os.X_OK):
        fail(f"{path}: cannot replace it: its folder {folder} is not writable")
    if st.st_uid != os.geteuid() and os.geteuid() != 0:
        fail(
            f"{path}: belongs to another user (uid {st.st_uid}): replacing it would make it yours; "
            "irlint fix edits only a file it can keep as it was"
        )


def _decoded(path: str, raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        fail(f"{path}: is not UTF-8 text")


class _Changed(Exception):
    """The file changed between its read under the lock and the rename."""


def _replace(path: str, edit_of):
    """Apply ``edit_of`` to the file's text as it is now and replace the file with the result:
    under an exclusive lock (``flock``: concurrent irlint fix runs take turns), on the content read
    under the lock (an edit saved since the first read is kept), and renamed over the file only if
    it is still that content (compare-and-swap on inode, size, mtime and hash). The temporary file
    is written with SIGINT/SIGTERM held back, so it is never left behind. (the text, the edit)."""
    for _ in range(5):
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
        except OSError as exc:
            fail(f"{path}: cannot read: {exc.strerror or exc}")
        try:
            _lock(fd)
            st = os.fstat(fd)
            try:
                now = os.stat(path, follow_symlinks=False)
            except OSError:
                continue  # renamed away meanwhile: open it again
            if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
                continue  # replaced while waiting for the lock: lock the new file
            _check_permissions(path)
            with os.fdopen(os.dup(fd), "rb") as f:
                raw = f.read()
            text = _decoded(path, raw)
            digest = hashlib.sha256(raw).digest()
            del raw
            result = edit_of(text, digest)
            if result.edit.text != text:
                try:
                    _write_over(path, result.edit.text, st, digest)
                except _Changed:
                    fail(f"{path}: changed while irlint fix was writing it: nothing written; run irlint fix again")
            return text, result
        finally:
            os.close(fd)
    return fail(f"{path}: keeps being replaced by another program: nothing written")


def _lock(fd: int) -> None:
    try:
        import fcntl
    except ImportError:  # no flock here: the compare-and-swap alone guards the write
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError:  # a file system without locks
        pass


def _same_content(path: str, st: os.stat_result, digest: bytes) -> bool:
    try:
        now = os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    if (now.st_dev, now.st_ino, now.st_size, now.st_mtime_ns) != (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns):
        return False
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for piece in iter(lambda: f.read(1 << 20), b""):
            h.update(piece)
    return h.digest() == digest


_HELD = (signal.SIGINT, signal.SIGTERM)


def _write_over(path: str, text: str, st: os.stat_result, digest: bytes) -> None:
    """``text`` in a temporary file beside ``path`` (mode and owner of the old one), renamed over it
    if ``path`` is still what was read (``st``, ``digest``); _Changed when it is not."""
    from ..reporters import new_temporary

    folder = os.path.dirname(os.path.abspath(path))
    held = hasattr(signal, "pthread_sigmask")
    if held:
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
    tmp = None
    try:
        fd, tmp = new_temporary(folder, prefix="." + os.path.basename(path) + ".", suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            for i in range(0, len(text), 1 << 20):  # encoded a piece at a time: a large file is not copied whole
                f.write(text[i : i + (1 << 20)].encode("utf-8"))
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, stat.S_IMODE(st.st_mode))
        if (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
            try:
                os.chown(tmp, st.st_uid, st.st_gid)
            except OSError:
                if st.st_uid != os.geteuid():
                    raise
        if not _same_content(path, st, digest):
            raise _Changed()
        os.replace(tmp, path)
        tmp = None
    except OSError as exc:
        fail(f"{path}: cannot replace it: {exc.strerror or exc}")
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        if held:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _lint(dumps, config_file, select, ignore, no_cache):
    from .. import rule as rule_module
    from ..runner.config import check_selectors, shown
    from ..runner.discover import discover_inputs, forget_buffers
    from ..runner.engine import lint_files
    from .options import apply_options, check_option_selectors, load_config_for

    forget_buffers()
    config, source = load_config_for(config_file, dumps[0])
    known = rule_module.load_rules(plugins=config.plugins)
    check_selectors(config, known, config_file or (shown(source) if source else None))
    check_option_selectors(known, select=select, extend_select=(), ignore=ignore)
    apply_options(config, select, (), ignore, None, None, no_cache, None)
    found = discover_inputs(list(dumps))
    if found.empty:
        raw, why = next(iter(found.empty.items()))
        from ..runner.discover import InputError

        raise InputError(f"{raw}: no graph IR dumps (*.ir written by save_graphs) found: {why}")
    return lint_files(found.files, found.diagnostics, config), found.files


def _same_file(path: str, inputs: list[str]) -> bool:
    try:
        st = os.stat(path)
    except OSError:
        return False
    for p in inputs:
        try:
            other = os.stat(p)
        except OSError:
            continue
        if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
            return True
    return False


def _say(path: str, edit, plan: dict, changed: bool, show_diff: bool) -> None:
    from ..fixplan import model_line
    from ..mfyaml import keys_to_drop

    verb = "would add" if show_diff else "added"
    if edit.added:
        click.echo(f"{path}: {verb} to select_recompute: " + ", ".join(f"'{k}'" for k in edit.added), err=True)
    for key, by in edit.dropped:
        click.echo(
            f"{path}: {'would take' if show_diff else 'took'} out of select_recompute: '{key}' (replaced by {by}: "
            "MindSpore never recomputes a recompute cell's output, whatever its primitive's tag)",
            err=True,
        )
    for r in edit.raised:
        click.echo(f"{path}: {'would raise' if show_diff else 'raised'} per-stage counts {r}", err=True)
    for c in edit.covered:
        click.echo(f"{path}: already covered: {c}", err=True)
    for n in edit.notes:
        click.echo(f"{path}: note: {n}", err=True)
    if not changed and not plan["recompute"]["select_recompute"]:
        click.echo(f"{path}: no recompute key to add", err=True)
    for op in plan["recompute"]["no_key"]:
        click.echo(
            f"{op['source']}: no select_recompute key can be derived for {op['node']} {op['op']} "
            f"({op['file']}): recompute it in the model code",
            err=True,
        )
    for s in plan["strategies"]:
        click.echo(
            f"{model_line(s)}: {s['shard']}   # {s['node']} {s['op']} ({s['scope']}): not written, change it in the model code",
            err=True,
        )
    for row in plan["layouts"]:
        click.echo(
            f"{model_line(row)}: {row['change']}   # {row['code']}: not written, change it in the model code", err=True
        )
    for row in plan["by_hand"]:
        fix, why = row["fix"], ""
        for key in row.get("drop_select_recompute") or ():
            mine = keys_to_drop(key, edit.user_keys)
            if mine and mine != [key]:  # the dump prints the op under another name than the user's key
                fix = "select_recompute - " + " or ".join(f"'{k}'" for k in mine)
                why = f" ({'your key' if len(mine) == 1 else 'one of your keys'} that tags it; the dump names the op '{key}')"
        click.echo(
            f"{model_line(row)}: {fix}   # {row['code']} {row['node']} {row['op']}{why}: not written, yours to do",
            err=True,
        )
