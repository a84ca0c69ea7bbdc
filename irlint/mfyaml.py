"""A fix plan applied to a MindFormers YAML config (``irlint fix``): the recompute keys, the model
options, in one place (``apply_fix_plan``); the config checked against the dumps (``mismatches``);
the depth a config gives (``depth``, for cost/memory).

The edit is an editor's, not a re-serialisation. The file's top-level keys are found by a bounded
scan (``yamlscan.scan``), and only the ``recompute_config`` block (and the token of an option's
value) is rewritten: every other byte is copied. A flow list the plan adds to is extended in place;
another form is rebuilt by ruamel.yaml's round trip of that block alone (comments, order, quoting
kept). The new text is then checked (``verify``): loaded again, everything outside what the plan
changes must equal the original (values, anchors, comments); else ``Refused`` names what would
differ, and nothing is written.

``select_recompute`` in every form MindFormers' ``LayerSetting`` reads: a list of keys; a dict of
key -> True/False or per-stage / per-chunk counts; a bool (True: the model's own default keys);
per-stage or per-chunk counts for the default keys; a single key as a string. A key is covered
as MindFormers matches it (``covers``).
"""

from __future__ import annotations

import io
import re
from typing import Any, NamedTuple

from .fixplan import yaml_text
from .yamlscan import (
    Layout,
    Refused,
    Segment,
    YamlError,
    closing,
    key_colon,
    outside_quotes,
    scan,
)

# above this, the file outside the edit is checked by its scan, not by a load (ruamel.yaml reads ~100 KB/s)
FULL_CHECK_BYTES = 64 << 10


# --- MindFormers' own patterns (mindformers/parallel_core/training_graph/transformer/utils.py) ------

DEFAULT_KEYS = {
    "legacy": [r"feed_forward\.mul", r"feed_forward\.w1\.activation\.silu"],
    "mcore": [
        r"mlp\.shared_experts\.mul",
        r"mlp\.shared_experts\.activation_func\.silu",
        r"mlp\.mul",
        r"mlp\.activation_func\.silu",
    ],
}
# the first cell of a key: which model code (legacy or mcore) its names come from
_FAMILY_CELLS = {
    "legacy": {"feed_forward", "attention", "attention_norm", "ffn_norm"},
    "mcore": {"mlp", "self_attention", "input_layernorm", "pre_mlp_layernorm"},
}


def family_of(keys) -> str | None:
    """legacy or mcore, from the first cell of the keys (the most of them); None when none says."""
    votes = {"legacy": 0, "mcore": 0}
    for k in keys:
        head = str(k).split("\\.", 1)[0]
        for fam, cells in _FAMILY_CELLS.items():
            votes[fam] += head in cells
    if votes["legacy"] == votes["mcore"]:
        return None
    return max(votes, key=lambda f: votes[f])


def _unescape(segment: str) -> str:
    return re.sub(r"\\(.)", r"\1", segment)


def covers(pattern: str, key: str) -> bool:
    """MindFormers' match (``LayerSetting.set_pattern_recompute``): the pattern split on ``\\.``,
    each segment fullmatched against the cell (then attribute) name at that depth of the key."""
    if pattern == key:
        return True
    want = [_unescape(s) for s in key.split("\\.")]
    parts = pattern.split("\\.")
    if len(parts) != len(want):
        return False
    try:
        return all(re.fullmatch(p, name) is not None for p, name in zip(parts, want))
    except re.error:
        return False


def covering(key: str, patterns) -> str | None:
    """The user's pattern that already matches ``key`` as MindFormers matches, or None."""
    for p in patterns:
        if isinstance(p, str) and covers(p, key):
            return p
    return None


def keys_to_drop(key: str, patterns: list[str]) -> list[str]:
    """The user's patterns that a fix taking out ``key`` (the op's cell path as the dump prints
    it) means: the one matching that path, else those of the same cell. A tagged primitive can
    print another instance's name: MindFormers' RMSNorm down-cast tagged by 'attention_norm\\.rcast'
    prints as 'cast' when its two Casts are one primitive."""
    have = covering(key, patterns)
    if have is not None:
        return [have]
    cell = key.rpartition("\\.")[0]
    return [p for p in patterns if cell and p.rpartition("\\.")[0] == cell]


def enabled(value) -> bool:
    """A dict entry of select_recompute that recomputes some layer: True, or counts with one above 0."""
    if isinstance(value, bool):
        return value
    if isinstance(value, list):
        return any(enabled(v) if isinstance(v, (bool, list)) else isinstance(v, int) and v > 0 for v in value)
    return False


def _is_counts(value) -> bool:
    """Per-stage (ints/bools) or per-chunk (lists of them) counts, as a non-string list is read."""
    return (
        isinstance(value, list)
        and bool(value)
        and all(
            isinstance(v, (int, bool)) or isinstance(v, list) and all(isinstance(n, (int, bool)) for n in v)
            for v in value
        )
    )


def select_patterns(current, family: str | None) -> list[str]:
    """The keys MindFormers applies from a select_recompute value (its ``_format_recompute_dict``):
    a dict's enabled keys; a list of keys; the default keys for True and for counts; none else."""
    if hasattr(current, "items"):
        return [str(k) for k, v in current.items() if enabled(v)]
    if isinstance(current, list) and all(isinstance(k, str) for k in current):
        return [str(k) for k in current]
    if current is True or _is_counts(current):
        return list(DEFAULT_KEYS.get(family or "", []))
    if isinstance(current, str):
        return [current]
    return []


# --- the plan's recompute keys --------------------------------------------------------------------


class Edit(NamedTuple):
    text: str  # the new file text (the old one when nothing changed)
    added: list[str]  # keys added
    raised: list[str]  # per-stage counts raised or entries turned on: "key: [1, 1] -> [2, 2]"
    covered: list[str]  # plan keys one of the user's patterns already matches: "key (by pattern)"
    notes: list[str]  # what was not done, and why
    user_keys: list[str]  # the select_recompute keys the config held before (list or dict form)
    dropped: list[tuple[str, str]]  # the user's keys taken out, each with the keys that replace it


def _yaml():
    from ruamel.yaml import YAML

    y = YAML(typ="rt")
    y.preserve_quotes = True
    y.width = 4096  # never re-wrap a long line
    return y


def _parse(text: str, what: str = "is not valid YAML"):
    """ruamel.yaml's round-trip load, its errors as YamlError."""
    from ruamel.yaml.error import YAMLError

    try:
        return _yaml().load(text)
    except YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise YamlError(f"{what}{where}: {problem}") from None
    except RecursionError:
        raise YamlError("nests too deep for irlint fix") from None


def _split_bom(text: str) -> tuple[str, str]:
    return ("\ufeff", text[1:]) if text.startswith("\ufeff") else ("", text)


class _Block(NamedTuple):
    layout: Layout
    seg: Segment
    text: str  # the text ``doc`` was loaded from: the block's lines, or the whole file (``base`` 0)
    doc: Any  # its round-trip load ({recompute_config: ...} for the block alone)
    newline: str
    base: int  # the offset of ``text`` in the file

    @property
    def alone(self) -> bool:
        return self.base == self.seg.start and len(self.text) == self.seg.end - self.seg.start


def _block(body: str, name: str = "recompute_config") -> _Block:
    """The top-level ``name`` block of ``body`` (no BOM), loaded alone; the whole file when the
    block uses an anchor defined before it (a small file only)."""
    layout = scan(body, comments=len(body) <= FULL_CHECK_BYTES)
    found = [s for s in layout.segments if s.key == name]
    if not found:
        raise YamlError(
            f"has no {name} mapping (MindFormers' recompute settings): nothing to apply the keys to"
            if name == "recompute_config"
            else f"has no {name}"
        )
    if len(found) > 1:
        raise Refused(f"sets {name} twice (lines {found[0].line} and {found[1].line})")
    seg = found[0]
    text = body[seg.start : seg.end]
    newline = "\r\n" if text.split("\n", 1)[0].endswith("\r") else "\n"
    if name == "recompute_config":
        through = re.match(r"[^\n]*?:[ \t]*(?:&\S+[ \t]+)?\*(\S+)", text) or re.search(
            r"^[ \t]*<<[ \t]*:[^\n]*?\*(\S+)", text, re.M
        )
        if through:
            raise Refused(
                f"recompute_config is built from the alias *{through.group(1)} (an anchor defined elsewhere): irlint "
                "fix does not edit through an alias, which would change the anchor's other uses; write the block out"
            )
    outside = [
        alias
        for alias, at in layout.aliases
        if seg.start <= at < seg.end and not (seg.start <= layout.anchors.get(alias, -1) < at)
    ]
    if outside:
        if len(body) > FULL_CHECK_BYTES:
            raise Refused(
                f"{name} uses *{outside[0]}, an anchor defined elsewhere in the file: irlint fix edits such a "
                f"block only in a file under {FULL_CHECK_BYTES >> 10} KiB"
            )
        return _Block(layout, seg, body, _parse(body), newline, 0)
    return _Block(layout, seg, text, _parse(text), newline, seg.start)


def _recompute_block(body: str) -> _Block:
    """``_block`` of recompute_config; YamlError when the file's top is not a mapping, or has no
    recompute_config mapping."""
    blk = _block(body)
    if not hasattr(blk.doc, "get") or not hasattr(blk.doc.get("recompute_config"), "get"):
        raise YamlError(
            "has no recompute_config mapping (MindFormers' recompute settings): nothing to apply the keys to"
        )
    return blk


def parsed(text: str) -> _Block:
    """The recompute_config block of a config's text, scanned and loaded, for a caller that parses
    the text once and passes it on (``mismatches`` reads it, ``apply_plan`` edits its document: one
    edit per parse). YamlError when the file's top is not a mapping, or has no recompute_config mapping."""
    return _recompute_block(_split_bom(text)[1])


def load(text: str):
    """The recompute_config block's round-trip document (``{recompute_config: {...}}``); YamlError
    when the file's top is not a mapping, or has no recompute_config mapping."""
    return parsed(text).doc


def apply_plan(text: str, recompute: dict, family: str | None = None, block: _Block | None = None) -> Edit:
    """``text`` with the plan's keys (``fix_plan()["recompute"]``) added to its select_recompute.
    ``family`` (legacy or mcore: whose default keys ``select_recompute: True`` means) comes from the
    dump; without it, from the plan's keys. ``block``: ``parsed(text)``, when the caller has it."""
    bom, body = _split_bom(text)
    blk = block if block is not None else _recompute_block(body)
    doc = blk.doc
    cfg = doc["recompute_config"]
    current = cfg.get("select_recompute")
    mine = _user_keys(current)
    keys = list(dict.fromkeys(recompute.get("select_recompute") or []))
    per_stage = recompute.get("select_recompute_per_stage") or {}
    out = Edit(text, [], [], [], [], mine, [])
    if not keys:
        return out
    family = family or family_of(keys)
    if cfg.get("recompute") is True:
        out.notes.append("recompute: True recomputes every layer in full; the select keys are added for when it is off")
    inserted = None  # the new block text, when the list is extended in place
    if hasattr(current, "items"):
        _into_dict(current, keys, per_stage, recompute, out)
        for p in _replaced([k for k, v in current.items() if enabled(v)], recompute, out):
            del current[p]
    elif isinstance(current, list) and all(isinstance(k, str) for k in current):
        fresh = [k for k in keys if not _note_covered(k, current, out)]
        gone = _replaced(list(current), recompute, out)
        if fresh:
            out.added.extend(fresh)
            inserted = None if gone else _append_in_place(blk.text, cfg, current, fresh)
            if inserted is None:
                for k in fresh:
                    current.append(_quoted(k, current))
        for p in gone:
            current.remove(p)
        _per_stage_note(per_stage, out)
    elif _is_counts(current):
        defaults = DEFAULT_KEYS.get(family or "")
        if not defaults:
            raise Refused(
                f"select_recompute is {_show(current)}, counts for MindFormers' default keys, and the dump "
                "does not say whose defaults (legacy or mcore): write it as a dict of key -> counts"
            )
        table = _new_map(current)
        for d in defaults:
            table[d] = _copy(current)
        for k in keys:
            if covering(k, defaults) is None:
                want = per_stage.get(k)
                table[_key_like(k, [])] = _flow(list(want)) if want else _copy(current)
                out.added.append(k)
            else:
                out.covered.append(f"{k} (by the default '{covering(k, defaults)}')")
        cfg["select_recompute"] = table
        out.notes.append(
            f"select_recompute: {_show(current)} (counts for MindFormers' {family} default keys) is written as the "
            "dict of each default key -> those counts, with the new keys"
        )
    elif current is True:
        defaults = DEFAULT_KEYS.get(family or "")
        if not defaults:
            out.notes.append(
                "select_recompute: True uses MindFormers' own default keys, and the dump does not say whose "
                "(legacy or mcore): write it as a list with the keys " + ", ".join(f"'{k}'" for k in keys) + " added"
            )
            return out
        listed = _flow([_quoted(d, []) for d in defaults])
        for k in keys:
            if _note_covered(k, defaults, out):
                continue
            listed.append(_quoted(k, []))
            out.added.append(k)
        if not out.added:
            return out
        cfg["select_recompute"] = listed
        out.notes.append(
            f"select_recompute: True (MindFormers' {family} default keys) is written out as that list, "
            + ", ".join(f"'{d}'" for d in defaults)
            + ", with the new keys"
        )
    elif current is not None and current is not False and not isinstance(current, str):
        raise Refused(
            f"select_recompute is {_show(current)}: not a form MindFormers reads (a list of keys, a dict of key -> "
            "True or counts, counts for the default keys, a bool)"
        )
    else:  # missing, False, None, a single key as a string
        listed = _flow([])
        if isinstance(current, str):
            listed.append(current)
            out.notes.append(f"select_recompute: '{current}' (one key) is written as a list with the new keys")
        for k in keys:
            if _note_covered(k, list(listed), out):
                continue
            listed.append(_quoted(k, listed))
            out.added.append(k)
        if not out.added:
            return out
        if "select_recompute" in cfg:
            cfg["select_recompute"] = listed
        else:
            _insert_after(cfg, "recompute", "select_recompute", listed)
        _per_stage_note(per_stage, out)
    if not hasattr(current, "items") and not isinstance(current, list):
        for row in recompute.get("replace") or ():
            out.notes.append(f"take out the key that tags '{row['key']}' by hand: {_by(row)} takes its place")
    if not out.added and not out.raised and not out.dropped:
        return out
    if inserted is not None:
        new = bom + _spliced(body, blk.base, blk.base + len(blk.text), inserted)
    else:
        new = bom + _spliced(body, blk.seg.start, blk.seg.end, _dump_block(doc, blk, body))
    verify(text, new, blk, ("recompute_config", "select_recompute"))
    return out._replace(text=new)


def _by(row: dict) -> str:
    return " and ".join(f"'{k}'" for k in row.get("by") or ())


def _replaced(patterns: list, recompute: dict, out: Edit) -> list[str]:
    """The user's keys the plan replaces (``recompute["replace"]``: a one-op cell's key, whose
    primitive's tag MindSpore overrides: a recompute cell's output is never recomputed): each pattern that matches the
    cell's key as MindFormers matches. A key naming the primitive has one more segment, so it never
    matches the cell's."""
    gone: list[str] = []
    for row in recompute.get("replace") or ():
        for p in patterns:
            if isinstance(p, str) and p not in gone and covers(p, row["key"]):
                gone.append(p)
                out.dropped.append((p, _by(row)))
    return gone


def _spliced(body: str, start: int, end: int, new: str) -> str:
    """``body`` with ``body[start:end]`` replaced by ``new``, in one copy of a large file (not three)."""
    old = body[start:end]
    if body.find(old) == start:
        return body.replace(old, new, 1)
    return body[:start] + new + body[end:]


def _user_keys(current) -> list[str]:
    """The keys a select_recompute value names: a dict's keys, a list's strings, a single key."""
    if hasattr(current, "keys"):
        return [str(k) for k in current.keys()]
    if isinstance(current, list):
        return [k for k in current if isinstance(k, str)]
    return [current] if isinstance(current, str) else []


def _show(value) -> str:
    """A value for a message, as YAML writes it (shared nodes once, at most 200 of them)."""
    try:
        return yaml_text(_unanchored(_plain(value, budget=[200])))
    except Refused:
        return "(a large value)"


def _unanchored(plain):
    if isinstance(plain, tuple):
        return "*" + str(plain[1]) if plain[0] == "*" else _unanchored(plain[1])
    if isinstance(plain, dict):
        return {k: _unanchored(v) for k, v in plain.items()}
    if isinstance(plain, list):
        return [_unanchored(v) for v in plain]
    return plain


def _note_covered(key: str, patterns, out: Edit) -> bool:
    have = covering(key, patterns)
    if have is not None:
        out.covered.append(f"{key} (by '{have}')")
    return have is not None


def _per_stage_note(per_stage: dict, out: Edit) -> None:
    if per_stage and any(per_stage.values()):
        out.notes.append(
            "the flat list applies the keys to every layer; MindFormers' per-stage form would be "
            "{" + ", ".join(f"'{k}': {v}" for k, v in per_stage.items()) + "}"
        )


def _into_dict(current, keys: list[str], per_stage: dict, recompute: dict, out: Edit) -> None:
    """Dict form: key -> True/False or per-stage / per-chunk counts. A disabled entry covers nothing."""
    for key in keys:
        want = per_stage.get(key)
        on = [k for k, v in current.items() if enabled(v)]
        have = covering(key, on)
        if have is None:
            if key in current:  # the user's own entry for it, off
                was = _show(current[key])
                current[key] = _flow(list(want)) if want else True
                out.raised.append(f"{key}: {was} -> {_show(current[key])}")
            else:
                current[_key_like(key, list(current.keys()))] = _flow(list(want)) if want else True
                out.added.append(key)
            continue
        value = current[have]
        if want and isinstance(want[0], list) and isinstance(value, list):  # interleave: [chunk][stage]
            note = _raise_per_chunk(value, want, recompute.get("chunks") or [])
            if note is None:
                out.covered.append(f"{key} (by '{have}')")
            elif note.startswith(NOTE):
                out.notes.append(f"'{have}': " + note.removeprefix(NOTE))
            else:
                out.raised.append(f"{have}: {note}")
            continue
        if want and isinstance(value, list) and len(value) == len(want) and all(_count(n) for n in value):
            new = [max(_num(a), int(b)) for a, b in zip(value, want)]
            if new != [_num(n) for n in value]:
                before = list(value)
                for i, n in enumerate(new):
                    if not isinstance(value[i], bool) or n != _num(value[i]):
                        value[i] = n
                out.raised.append(f"{have}: {before} -> {list(value)}")
                continue
        elif want and isinstance(value, list):
            out.notes.append(
                f"'{have}' has counts {_show(value)} for another number of stages than the dump's "
                f"{len(want)}; the dump needs {want}"
            )
        out.covered.append(f"{key} (by '{have}')")


def _count(n) -> bool:
    return isinstance(n, int)


def _num(n) -> int:
    """A per-stage entry as a count: True is every layer of the stage (counted as such by max)."""
    return 1 << 30 if n is True else int(n)


NOTE = "note: "


def _raise_per_chunk(value, want: list, chunks: list) -> str | None:
    """Raise a per-stage value to the plan's [chunk][stage] counts in place: a [chunk][stage] value
    element by element; a per-stage list of counts is first split over the chunks as MindFormers
    does (its LayerSetting gives each stage's count to the chunks in turn, one layer at a time) and
    written back in the [chunk][stage] form. Returns "before -> after", None when nothing was
    raised, or a note when the value's shape is not the dump's (``NOTE`` first)."""
    stages = len(want[0])
    sizes = [[len(run) for run in chunk] for chunk in chunks] or [[0] * stages for _ in want]
    nested = [list(row) for row in value] if all(isinstance(row, list) for row in value) else None
    if nested is None and len(value) == stages and all(isinstance(n, int) and not isinstance(n, bool) for n in value):
        nested = [[0] * stages for _ in want]
        for j, count in enumerate(value):
            count = min(int(count), sum(row[j] for row in sizes))
            while count:
                for i in range(len(want)):
                    if count and nested[i][j] < sizes[i][j]:
                        nested[i][j] += 1
                        count -= 1
    if (
        nested is None
        or len(nested) != len(want)
        or any(len(row) != stages or not all(isinstance(n, int) for n in row) for row in nested)
    ):
        return (
            NOTE
            + f"{_show(value)} is not a count per stage nor per [chunk][stage] of the dump's pipeline; the dump needs {want}"
        )
    new = [[max(int(a), int(b)) for a, b in zip(row, need)] for row, need in zip(nested, want)]
    if new == nested:
        return None
    before = [list(row) if isinstance(row, list) else row for row in value]
    value.clear()
    value.extend(_flow(row) for row in new)
    return f"{before} -> {new}"


def _flow(items: list):
    from ruamel.yaml.comments import CommentedSeq

    seq = CommentedSeq(items)
    seq.fa.set_flow_style()
    return seq


def _copy(value):
    if isinstance(value, list):
        return _flow([_copy(v) for v in value])
    return value


def _new_map(like):
    from ruamel.yaml.comments import CommentedMap

    table = CommentedMap()
    if getattr(getattr(like, "fa", None), "flow_style", False):
        table.fa.set_flow_style()
    return table


def _insert_after(cfg, after: str, key: str, value) -> None:
    keys = list(cfg.keys())
    cfg.insert(keys.index(after) + 1 if after in keys else len(keys), key, value)


def _key_like(key: str, keys: list):
    """A new mapping key quoted as the mapping's keys are: plain when none is quoted."""
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString, SingleQuotedScalarString

    if any(isinstance(k, (DoubleQuotedScalarString, SingleQuotedScalarString)) for k in keys):
        return _quoted(key, keys)
    return key


def _quoted(key: str, seq):
    """A new item quoted as the list's existing items are (single quotes by default: a regex's
    backslashes stay literal in a single-quoted YAML string)."""
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString, SingleQuotedScalarString

    if any(isinstance(x, DoubleQuotedScalarString) for x in seq) and not any(
        isinstance(x, SingleQuotedScalarString) for x in seq
    ):
        return DoubleQuotedScalarString(key)
    return SingleQuotedScalarString(key)


def _spelled(key: str, seq) -> str:
    """A new list item as YAML text, quoted as ``_quoted`` would."""
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString

    if isinstance(_quoted(key, seq), DoubleQuotedScalarString):
        return '"' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return "'" + key.replace("'", "''") + "'"


def _append_in_place(block: str, cfg, current, new: list[str]) -> str | None:
    """``block`` with ``new`` keys written before the closing ``]`` of select_recompute's flow list
    (its comments, spacing and line endings untouched); None for a block-style list."""
    if not getattr(current.fa, "flow_style", False):
        return None
    start = _value_at(block, *cfg.lc.value("select_recompute"))
    if block[start : start + 1] != "[":
        return None
    end = closing(block, start)
    if end is None:
        return None
    # after the last item (a trailing comma kept in its place), before blanks and comments
    k = end
    while True:
        k -= 1
        while k > start and block[k] in " \t\r\n":
            k -= 1
        ln_start = block.rfind("\n", 0, k) + 1
        hashes = [m.start() for m in re.finditer(r"(?:^|(?<=[ \t]))#", block[ln_start : k + 1])]
        comment = next((h for h in hashes if outside_quotes(block[ln_start : ln_start + h])), None)
        if comment is not None:
            k = ln_start + comment
            continue
        break
    text = ", ".join(_spelled(key, current) for key in new)
    if k == start:  # empty list
        return block[: start + 1] + text + block[start + 1 :]
    if block[k] == ",":
        return block[: k + 1] + " " + text + "," + block[k + 1 :]
    return block[: k + 1] + ", " + text + block[k + 1 :]


_PROPERTIES = re.compile(r"(?:[&!]\S*[ \t]+)*")


def _value_at(text: str, line: int, col: int) -> int:
    """The offset in ``text`` of the value ruamel.yaml places at 0-based ``line``, ``col``, after
    an anchor or tag before it (they stay)."""
    start = 0
    for _ in range(line):
        start = text.index("\n", start) + 1
    props = _PROPERTIES.match(text, start + col)
    return props.end() if props else start + col


def _dump_block(doc, blk: _Block, body: str) -> str:
    """The recompute_config block as ruamel.yaml writes it, indented as the file's block was."""
    from ruamel.yaml.comments import CommentedMap

    y = _yaml()
    text = body[blk.seg.start : blk.seg.end]
    indent = _child_indent(text.split("\n")[1:])
    y.indent(mapping=indent, sequence=indent + 2, offset=indent)
    if len(re.findall(r":\s+(?:True|False)\b", text)) >= len(re.findall(r":\s+(?:true|false)\b", text)):
        # ruamel writes every bool as true/false; MindFormers' configs spell them True/False
        y.representer.add_representer(
            bool, lambda r, d: r.represent_scalar("tag:yaml.org,2002:bool", "True" if d else "False")
        )
    for node in _walk(doc):  # an anchor of the block is written even when the block alone never uses it
        anchor = getattr(node, "anchor", None)
        if anchor is not None and getattr(anchor, "value", None):
            anchor.always_dump = True
    block = CommentedMap()
    block["recompute_config"] = doc["recompute_config"]
    out = io.StringIO()
    y.dump(block, out)
    new_first, _, rest = out.getvalue().partition("\n")
    # the key as the file spells it ("recompute_config", recompute_config :)
    old_first = text.split("\n", 1)[0].rstrip("\r")
    a, b = key_colon(old_first), key_colon(new_first)
    if a is not None and b is not None:
        new_first = old_first[:a] + new_first[b:]
    new = new_first + "\n" + rest
    if not new.endswith("\n"):
        new += "\n"
    if not text.endswith("\n"):
        new = new[:-1]
    return new.replace("\n", "\r\n") if blk.newline == "\r\n" else new


def _walk(node, seen: set | None = None):
    seen = set() if seen is None else seen
    if id(node) in seen:
        return
    seen.add(id(node))
    yield node
    if hasattr(node, "items"):
        for k, v in node.items():
            yield from _walk(k, seen)
            yield from _walk(v, seen)
    elif isinstance(node, list):
        for v in node:
            yield from _walk(v, seen)


def _child_indent(block: list[str]) -> int:
    for ln in block:
        if ln.strip() and not ln.lstrip().startswith("#"):
            return len(ln) - len(ln.lstrip(" "))
    return 2


# --- the check: nothing changed outside the plan's keys -------------------------------------------

MAX_NODES = 100_000


def _plain(node, budget: list[int], inside: set | None = None):
    """A node as plain values with its anchors (``(name, value)``), aliases expanded as a load
    gives them, up to ``budget[0]`` nodes (Refused beyond: an alias bomb); a node inside itself
    (a recursive anchor) is ``("*", name)``."""
    inside = set() if inside is None else inside
    budget[0] -= 1
    if budget[0] < 0:
        raise Refused("holds more values (aliases expanded) than irlint fix compares: an alias bomb?")
    anchor = getattr(getattr(node, "anchor", None), "value", None)
    if id(node) in inside:
        return ("*", anchor or "?")
    if hasattr(node, "items") or isinstance(node, list):
        inside.add(id(node))
        try:
            if hasattr(node, "items"):
                out: Any = {str(k): _plain(v, budget, inside) for k, v in node.items()}
            else:
                out = [_plain(v, budget, inside) for v in node]
        finally:
            inside.discard(id(node))
    elif isinstance(node, (bool, int, float, type(None))):
        out = node
    else:
        out = str(node)
    return (anchor, out) if anchor else out


def _diff(old, new, path: str) -> str | None:
    """The first path where two ``_plain`` values differ."""
    if type(old) is not type(new):
        return path
    if isinstance(old, dict):
        for k in list(old) + [k for k in new if k not in old]:
            if k not in old or k not in new:
                return f"{path}.{k}".lstrip(".")
            found = _diff(old[k], new[k], f"{path}.{k}")
            if found:
                return found.lstrip(".")
        if list(old) != list(new):
            return f"{path} (order of keys)".lstrip(".")
        return None
    if isinstance(old, (list, tuple)):
        if len(old) != len(new):
            return path
        for i, (a, b) in enumerate(zip(old, new)):
            found = _diff(a, b, f"{path}[{i}]")
            if found:
                return found
        return None
    return None if old == new and type(old) is type(new) else path


def _drop(plain, path: tuple[str, ...]):
    """``plain`` without the value at ``path`` (what the plan changes)."""
    if not path:
        return None
    if isinstance(plain, tuple) and len(plain) == 2 and isinstance(plain[1], (dict, list)):
        return (plain[0], _drop(plain[1], path))
    if isinstance(plain, dict):
        out = dict(plain)
        if len(path) == 1:
            out[path[0]] = "<changed by the plan>"  # also where the key was not
        elif path[0] in plain:
            out[path[0]] = _drop(plain[path[0]], path[1:])
        return out
    return plain


def verify(old: str, new: str, blk: _Block, *changed: tuple[str, ...]) -> None:
    """Refused unless ``new`` says what ``old`` says everywhere but at the ``changed`` paths:
    the whole documents compared when the file is small, else the block loaded alone and the
    rest of the file scanned (its bytes are the old ones); every comment kept."""
    small = len(old) <= FULL_CHECK_BYTES
    if small:
        before, after = _parse(_split_bom(old)[1]), None
        try:
            after = _parse(_split_bom(new)[1], "would not be valid YAML after the edit")
        except YamlError as exc:
            raise Refused(f"{exc}: nothing written") from None
    else:
        assert blk.alone
        bom = 1 if new.startswith("\ufeff") else 0
        after_block = len(old) - bom - blk.seg.end  # the bytes after the block: the old ones
        block = new[bom + blk.seg.start : len(new) - after_block]
        try:
            ours = scan(block, comments=False)
        except YamlError as exc:
            raise Refused(f"the edited block {exc}: nothing written") from None
        if [s.key for s in ours.segments] != [blk.seg.key]:
            raise Refused("the edited block would not be one top-level key: nothing written")
        before = _parse(blk.text)  # as read (the edit may have changed blk.doc)
        after = _parse(block, "would not be valid YAML after the edit")
        used = {a for a, at in blk.layout.aliases if not blk.seg.start <= at < blk.seg.end}
        defined = {a for a, at in blk.layout.anchors.items() if blk.seg.start <= at < blk.seg.end}
        if used & defined:
            name = sorted(used & defined)[0]
            raise Refused(f"recompute_config defines &{name}, used elsewhere in the file: an edit would change both")
    a = _plain(before, [MAX_NODES])
    b = _plain(after, [MAX_NODES])
    for path in changed:
        a, b = _drop(a, path), _drop(b, path)
    where = _diff(a, b, "")
    if where is not None:
        raise Refused(
            f"{where} would change too (an anchor or alias shares it with what the plan changes?): nothing written"
        )
    lost = _lost_comments(old, new, blk.layout)
    if lost:
        raise Refused(f"the comment {lost!r} would be lost by the edit: nothing written")


def _lost_comments(old: str, new: str, layout: Layout) -> str | None:
    """A comment of ``old`` (``layout``: its scan, which reads comments in a small file) not in ``new``."""
    from collections import Counter

    if len(old) > FULL_CHECK_BYTES:
        return None  # the bytes outside the block are copied; the block's were checked by its scan
    have = Counter(c.strip() for c in scan(_split_bom(new)[1]).comments)
    for c in layout.comments:
        c = c.strip()
        if have[c] <= 0:
            return c
        have[c] -= 1
    return None


# --- model options --------------------------------------------------------------------------------


def set_option(text: str, path: str, value) -> tuple[str, str]:
    """``text`` with the value at the dotted ``path`` (``model.model_config.hidden_dropout``) set
    to ``value``, written with the type the option has in the config (a float stays a float, a
    list of ints is a flow list), only where the config has that key: (new text, what was done).
    The value's token is replaced in its line, so every other byte stays."""
    bom, body = _split_bom(text)
    parts = path.split(".")
    try:
        blk = _block(body, parts[0])
    except Refused:
        raise
    except YamlError:
        return text, _absent(path)
    node = blk.doc
    for name in parts[:-1]:
        node = node.get(name) if hasattr(node, "get") else None
        if node is None:
            break
    last = parts[-1]
    if not hasattr(node, "lc") or last not in node:
        return text, _absent(path)
    current = node[last]
    want = typed(value, current)
    if isinstance(current, dict):
        return text, f"{path} is not a single value: nothing written"
    if _value(current) == _value(want) and type(current) is type(want):
        return text, f"{path} is {yaml_text(current)} already"
    seg_text = blk.text
    start = _value_at(seg_text, *node.lc.value(last))
    lineno = body.count("\n", 0, blk.base + start) + 1
    if isinstance(current, list):
        if not getattr(getattr(current, "fa", None), "flow_style", False) or seg_text[start : start + 1] != "[":
            return text, f"{path} is a block-style list: nothing written (set it to {yaml_text(want)} yourself)"
        close = closing(seg_text, start)
        if close is None:
            return text, f"{path}: its value could not be found in line {lineno}: nothing written"
        end = close + 1
    else:
        token = re.match(
            r"""('(?:[^']|'')*'|"(?:[^"\\]|\\.)*"|[^\s#,}\]][^#,}\]\r\n]*?)(?=[ \t]*(?:#|,|}|]|\r|\n|\Z))""",
            seg_text[start:],
        )
        if token is None or not token.group(0):
            return text, f"{path}: its value could not be found in line {lineno}: nothing written"
        end = start + token.end()
    spelled = yaml_text(want, lower=seg_text[start:end] in ("true", "false"))
    new_seg = seg_text[:start] + spelled + seg_text[end:]
    new = bom + _spliced(body, blk.base, blk.base + len(seg_text), new_seg)
    check = _parse(new_seg)
    for name in parts:
        check = check.get(name) if hasattr(check, "get") else None
    if _value(check) != _value(want) or type(check) is not type(want) and not isinstance(check, type(want)):
        return text, f"{path}: could not be set in line {lineno}: nothing written"
    try:
        verify(text, new, blk, tuple(parts))
    except Refused as exc:
        return text, f"{path}: not written: {exc}"
    return new, f"{path}: {yaml_text(current)} -> {spelled}"


def _value(node):
    """A small option value as plain data, its anchors left out."""
    return _unanchored(_plain(node, [1000]))


def _absent(path: str) -> str:
    return (
        f"{path} is not in the config: add it yourself if your model sets it elsewhere "
        f"(irlint fix changes only a key the config has)"
    )


def typed(value, current):
    """``value`` as the YAML type the option has in the config: '0.0' is 0.0 where the option is a
    number, 0 is 0.0 where it is a float, True stays a bool; lists element by element."""
    if isinstance(value, str) and not isinstance(current, str):
        from ruamel.yaml import YAML
        from ruamel.yaml.error import YAMLError

        try:
            parsed = YAML(typ="safe", pure=True).load(value)
        except YAMLError:  # not YAML: written as the string it is
            parsed = value
        if parsed is not None:
            value = parsed
    if isinstance(current, float) and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, (list, tuple)):
        like = current[0] if isinstance(current, list) and current else None
        return [typed(v, like) for v in value]
    return value


# --- the config against the dumps -----------------------------------------------------------------


class DumpFacts(NamedTuple):
    """What the dumps say about the config they were compiled with."""

    family: str | None  # legacy or mcore
    tagged: frozenset[str]  # select keys of the forward primitives tagged for recompute
    full_layer: bool  # some decoder layer recomputed whole (Cell.recompute on the layer)
    models: dict[str, list[str]]  # the decoder layer class -> files
    untagged: frozenset[str] = frozenset()  # select keys of forward primitives never tagged


def mismatches(
    text: str, facts: DumpFacts, planned: tuple[str, ...] | list[str] = (), block: _Block | None = None
) -> list[str]:
    """How the config cannot be the one the dumps were compiled with (empty: it can be). A key of
    the plan (``planned``) the config already asks for is no mismatch: irlint fix wrote it.
    ``block``: ``parsed(text)``, when the caller has it (read, not changed)."""
    out = []
    if len(facts.models) > 1:
        out.append(
            "the dumps are of different models ("
            + "; ".join(f"{m}: {', '.join(files[:2])}" for m, files in sorted(facts.models.items()))
            + "): one config cannot be both"
        )
    cfg = (block.doc if block is not None else load(text))["recompute_config"]
    current = cfg.get("select_recompute")
    recompute = cfg.get("recompute")
    mine = _user_keys(current)
    theirs = family_of(mine)
    if theirs and facts.family and theirs != facts.family:
        out.append(
            f"select_recompute names {theirs} cells ({', '.join(repr(k) for k in mine[:2])}) and the dumps are of a "
            f"{facts.family} model: the config is for another model"
        )
    full = recompute is True or isinstance(recompute, list) and enabled(recompute)
    if full and not facts.full_layer:
        out.append(
            f"recompute is {_show(recompute)} in the config, and no decoder layer of the dumps is recomputed whole"
        )
    elif not full and facts.full_layer:
        out.append(f"recompute is {_show(recompute)} in the config, and the dumps recompute decoder layers whole")
    if not full:
        applied = select_patterns(current, facts.family)
        defaults = DEFAULT_KEYS.get(facts.family or "", [])
        missing = sorted(k for k in facts.tagged if k in defaults and covering(k, applied) is None)
        if missing:
            out.append(
                "the dumps show "
                + ", ".join(f"'{k}'" for k in missing)
                + f" applied, which select_recompute ({_show(current)}) does not ask for"
            )
        for p in applied:
            if any(covers(p, k) for k in planned):
                continue
            named = sorted(k for k in facts.untagged if covers(p, k))
            if named and not any(covers(p, k) for k in facts.tagged):
                out.append(
                    f"select_recompute asks for '{p}', and the dumps show the op it names ("
                    + ", ".join(f"'{k}'" for k in named[:2])
                    + ") not tagged: they were compiled without it"
                )
    return out


# --- depth (cost/memory --config) -----------------------------------------------------------------


class Depth(NamedTuple):
    """The model that runs, as a MindFormers config gives it (``irlint cost/memory --config``)."""

    layers: int  # model.model_config.num_layers (num_hidden_layers in the mcore configs)
    stages: int  # parallel_config.pipeline_stage (1 when absent)


def depth(text: str) -> Depth:
    """The decoder layers and pipeline stages a MindFormers YAML config sets; YamlError when it does
    not parse or sets no depth (an mcore config that reads it from ``pretrained_model_dir``'s
    config.json names none: give ``--layers``)."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    try:
        doc = YAML(typ="safe").load(text)
    except YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        raise YamlError(f"is not valid YAML{where}: {getattr(exc, 'problem', None) or exc}") from None
    model = doc.get("model") if isinstance(doc, dict) else None
    cfg = model.get("model_config") if isinstance(model, dict) else None
    found = next((cfg[k] for k in ("num_layers", "num_hidden_layers") if isinstance(cfg, dict) and k in cfg), None)
    if not isinstance(found, int) or isinstance(found, bool) or found < 1:
        raise YamlError(
            "sets no model.model_config.num_layers (nor num_hidden_layers)"
            + ("" if found is None else f" that is a positive number (it is {found!r})")
            + ": give the depth with --layers"
        )
    par = doc.get("parallel_config")
    stages = par.get("pipeline_stage", 1) if isinstance(par, dict) else 1
    if stages is None:
        stages = 1
    if not isinstance(stages, int) or isinstance(stages, bool) or stages < 1:
        raise YamlError(f"has parallel_config.pipeline_stage {stages!r}, not a positive number")
    return Depth(found, stages)


def stage_layers(layers: int, stages: int) -> list[int]:
    """The decoder layers of each pipeline stage as MindFormers places them without an offset:
    ``layers // stages`` each (its LayerSetting), the remainder one more each on the last stages
    (MindFormers asks for an ``offset`` that says where they go; irlint cannot read it from the dump)."""
    base, extra = divmod(layers, stages)
    return [base + (1 if i >= stages - extra else 0) for i in range(stages)]


# --- the whole plan, in one place -----------------------------------------------------------------


class ConfigEdit(NamedTuple):
    edit: Edit  # the recompute keys (its text: the file with every change of the plan)
    settings: list[str]  # config keys set
    by_hand: list[str]  # config changes left to the user


def apply_fix_plan(text: str, plan: dict, family: str | None = None, block: _Block | None = None) -> ConfigEdit:
    """Every change of a fix plan irlint writes: the recompute keys, then the config keys the plan
    writes (``written_by_fix``); the rest listed for the user. ``block``: ``parsed(text)``, when the
    caller has it (its document is edited)."""
    edit = apply_plan(text, plan["recompute"], family, block)
    new = edit.text
    done, by_hand = [], []
    for c in plan.get("config") or []:
        want = f"{c['key']}: {yaml_text(c['value'])}"
        if not c["written_by_fix"]:
            by_hand.append(f"not written, set it yourself: {want} ({c['why']}; {c['note']})")
            continue
        changed, said = set_option(new, c["key"], c["value"])
        if changed != new:
            done.append(said)
            new = changed
        elif not said.endswith("already"):
            by_hand.append(f"not written: {said}")
    return ConfigEdit(edit._replace(text=new), done, by_hand)
