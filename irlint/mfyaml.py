"""A fix plan's recompute keys applied to a MindFormers YAML config (``irlint fix``), and a model
option the plan names (``set_option``); the depth a config gives (``depth``, for cost/memory).

Only the ``recompute_config`` block changes: it is read and written with ruamel.yaml's round trip
(the user's keys, comments, order and quoting are kept) and put back in place of its own lines, so
every other line of the file stays byte for byte what it was, and a file that needs no change is
returned unchanged. ``select_recompute`` in its three forms: a list of keys, a dict of key -> True
or per-stage layer counts (``[n_stage0, n_stage1, …]``), or a bool.
"""

from __future__ import annotations

import io
import re
from typing import NamedTuple


class YamlError(Exception):
    """The config cannot be used: not YAML, or no ``recompute_config`` mapping."""


class Edit(NamedTuple):
    text: str  # the new file text (the old one when nothing changed)
    added: list[str]  # keys added
    raised: list[str]  # per-stage counts raised: "key: [1, 1] -> [2, 2]"
    covered: list[str]  # plan keys one of the user's patterns already matches: "key (by pattern)"
    notes: list[str]  # what was not done, and why
    user_keys: list[str]  # the select_recompute keys the config held before (list or dict form)


def _yaml():
    from ruamel.yaml import YAML

    y = YAML(typ="rt")
    y.preserve_quotes = True
    y.width = 4096  # never re-wrap a long line
    return y


def load(text: str):
    """The round-trip document; YamlError when it does not parse or is not a mapping with a
    ``recompute_config`` mapping."""
    from ruamel.yaml.error import YAMLError

    try:
        doc = _yaml().load(text)
    except YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise YamlError(f"is not valid YAML{where}: {problem}") from None
    if not hasattr(doc, "get") or not hasattr(doc.get("recompute_config"), "get"):
        raise YamlError(
            "has no recompute_config mapping (MindFormers' recompute settings): nothing to apply the keys to"
        )
    return doc


def covering(key: str, patterns) -> str | None:
    """The user's pattern that already matches ``key``'s cell path (as MindFormers matches a key:
    a regex on the path below the layer), or None."""
    path = key.replace("\\.", ".")
    for p in patterns:
        p = str(p)
        if p == key:
            return p
        try:
            if re.fullmatch(p, path):
                return p
        except re.error:
            continue
    return None


def _select_keys(current) -> list[str]:
    """The user's select_recompute keys (list or dict form); none for True, False or no setting."""
    if hasattr(current, "keys"):
        return [str(k) for k in current.keys()]
    return [str(k) for k in current] if isinstance(current, list) else []


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


def apply_plan(text: str, recompute: dict) -> Edit:
    """``text`` with the plan's keys (``fix_plan()["recompute"]``) added to its select_recompute."""
    doc = load(text)
    cfg = doc["recompute_config"]
    mine = _select_keys(cfg.get("select_recompute"))  # before any key is added
    keys = list(recompute.get("select_recompute") or [])
    per_stage = recompute.get("select_recompute_per_stage") or {}
    added: list[str] = []
    raised: list[str] = []
    covered: list[str] = []
    notes: list[str] = []
    if not keys:
        return Edit(text, added, raised, covered, notes, mine)
    if cfg.get("recompute") is True:
        notes.append("recompute: True recomputes every layer in full; the select keys are added for when it is off")
    current = cfg.get("select_recompute")
    if current is True:
        notes.append(
            "select_recompute: True uses MindFormers' own default keys; irlint does not know that list "
            "for your model, so it does not replace it: write it as a list with the keys "
            + ", ".join(f"'{k}'" for k in keys)
            + " added"
        )
        return Edit(text, added, raised, covered, notes, mine)
    if hasattr(current, "items"):  # dict form: key -> True or per-stage counts
        for key in keys:
            have = covering(key, list(current.keys()))
            want = per_stage.get(key)
            if have is None:
                current[_key_like(key, list(current.keys()))] = _flow(list(want)) if want else True
                added.append(key)
                continue
            value = current[have]
            if want and isinstance(want[0], list) and isinstance(value, list):  # interleave: [chunk][stage]
                note = _raise_per_chunk(value, want, recompute.get("chunks") or [])
                if note is None:
                    covered.append(f"{key} (by '{have}')")
                elif note.startswith(NOTE):
                    notes.append(f"'{have}': " + note.removeprefix(NOTE))
                else:
                    raised.append(f"{have}: {note}")
                continue
            if want and isinstance(value, list) and len(value) == len(want) and all(isinstance(n, int) for n in value):
                new = [max(int(a), int(b)) for a, b in zip(value, want)]
                if new != [int(n) for n in value]:
                    before = list(value)
                    for i, n in enumerate(new):
                        value[i] = n
                    raised.append(f"{have}: {before} -> {new}")
                    continue
            elif want and isinstance(value, list):
                notes.append(
                    f"'{have}' has counts {list(value)} for another number of stages than the dump's "
                    f"{len(want)}; the dump needs {want}"
                )
            covered.append(f"{key} (by '{have}')")
    else:
        from ruamel.yaml.comments import CommentedSeq

        if not isinstance(current, list):  # missing, False or None: a new list
            current = _flow([])
            cfg["select_recompute"] = current
        for key in keys:
            have = covering(key, current)
            if have is not None:
                covered.append(f"{key} (by '{have}')")
                continue
            current.append(_quoted(key, current) if isinstance(current, CommentedSeq) else key)
            added.append(key)
        if per_stage and any(per_stage.values()):
            notes.append(
                "the flat list applies the keys to every layer; MindFormers' per-stage form would be "
                "{" + ", ".join(f"'{k}': {v}" for k, v in per_stage.items()) + "}"
            )
    if not added and not raised:
        return Edit(text, added, raised, covered, notes, mine)
    return Edit(_splice(text, doc), added, raised, covered, notes, mine)


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
            + f"{list(value)} is not a count per stage nor per [chunk][stage] of the dump's pipeline; the dump needs {want}"
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


_TOP_KEY = re.compile(r"^[^\s#-][^:#]*:")


def _splice(text: str, doc) -> str:
    """``text`` with the lines of the top-level ``recompute_config`` block replaced by the block
    as ruamel.yaml writes it (its comments inside it kept); the other lines untouched."""
    lines = text.splitlines(keepends=True)
    start = next(i for i, ln in enumerate(lines) if ln.startswith("recompute_config:"))
    end = next((i for i in range(start + 1, len(lines)) if _TOP_KEY.match(lines[i])), len(lines))
    # the comment and blank lines right before the next top-level key stay where they are
    while (
        end > start + 1
        and (not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#"))
        and not lines[end - 1].startswith(" ")
    ):
        end -= 1
    indent = _child_indent(lines[start + 1 : end])
    from ruamel.yaml.comments import CommentedMap

    y = _yaml()
    y.indent(mapping=indent, sequence=indent + 2, offset=indent)
    if len(re.findall(r":\s+(?:True|False)\b", text)) >= len(re.findall(r":\s+(?:true|false)\b", text)):
        # ruamel writes every bool as true/false; MindFormers' configs spell them True/False
        y.representer.add_representer(
            bool, lambda r, d: r.represent_scalar("tag:yaml.org,2002:bool", "True" if d else "False")
        )
    block = CommentedMap()
    block["recompute_config"] = doc["recompute_config"]
    out = io.StringIO()
    y.dump(block, out)
    # ruamel keeps the comment and blank lines after the block's last value with it: they are
    # kept in place instead (in the lines after the block)
    new_lines = out.getvalue().splitlines(keepends=True)
    while new_lines and (not new_lines[-1].strip() or not new_lines[-1].startswith(" ")):
        new_lines.pop()
    body = "".join(new_lines)
    if not body.endswith("\n"):
        body += "\n"
    return "".join(lines[:start]) + body + "".join(lines[end:])


def _child_indent(block: list[str]) -> int:
    for ln in block:
        if ln.strip() and not ln.lstrip().startswith("#"):
            return len(ln) - len(ln.lstrip(" "))
    return 2


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


def set_option(text: str, path: str, value) -> tuple[str, str]:
    """``text`` with the scalar at the dotted ``path`` (``model.model_config.use_rope_slice``) set to
    ``value``, only where the config has that key: (new text, what was done). The value's token is
    replaced in its line, so every other byte stays (comments, quoting, the rest of the line)."""
    doc = load_any(text)
    parts = path.split(".")
    node = doc
    for name in parts[:-1]:
        node = node.get(name) if hasattr(node, "get") else None
        if node is None:
            break
    last = parts[-1]
    if not hasattr(node, "lc") or last not in node:
        return text, (
            f"{path} is not in the config: add it yourself if your model sets it elsewhere "
            f"(irlint fix changes only a key the config has)"
        )
    current = node[last]
    if current == value and type(current) is type(value):
        return text, f"{path} is {current} already"
    if isinstance(current, (dict, list)):
        return text, f"{path} is not a single value: nothing written"
    line, col = node.lc.value(last)
    lines = text.splitlines(keepends=True)
    row = lines[line]
    token = re.match(r"""('[^']*'|"[^"]*"|[^\s#,}\]]+)""", row[col:])
    if token is None:
        return text, f"{path}: its value could not be found in line {line + 1}: nothing written"
    spelled = ("True" if value else "False") if isinstance(value, bool) else str(value)
    if isinstance(value, bool) and token.group(0) in ("true", "false"):
        spelled = spelled.lower()
    lines[line] = row[:col] + spelled + row[col + token.end() :]
    new = "".join(lines)
    check = load_any(new)
    for name in parts:
        check = check.get(name) if hasattr(check, "get") else None
    if check != value:  # the edit must say what was meant, or nothing is written
        return text, f"{path}: could not be set in line {line + 1}: nothing written"
    return new, f"{path}: {current} -> {spelled}"


def load_any(text: str):
    """The round-trip document, whatever its keys; YamlError when it does not parse."""
    from ruamel.yaml.error import YAMLError

    try:
        return _yaml().load(text)
    except YAMLError as exc:
        raise YamlError(f"is not valid YAML: {getattr(exc, 'problem', None) or exc}") from None
