"""The layout of a YAML file as an edit needs it, read without parsing it: its top-level keys and
their extent, anchors, aliases and comments (``scan``), by one bounded pass over the lines that
follows quotes, flow collections and block scalars, with nesting and aliases capped. What
``irlint fix`` edits is only the block it finds here; the rest of the file is copied."""

from __future__ import annotations

import re
from typing import NamedTuple


class YamlError(Exception):
    """The file cannot be used: not YAML, or not what the edit needs (no ``recompute_config``)."""


class Refused(YamlError):
    """The config holds a construct the edit cannot change without changing something else."""


MAX_FLOW_DEPTH = 64
MAX_INDENT = 200
MAX_ALIASES = 10_000


class Segment(NamedTuple):
    key: str
    start: int  # offset of its first line
    end: int  # offset after its last content line (comments and blank lines after it excluded)
    line: int  # 1-based


class Layout(NamedTuple):
    segments: list[Segment]
    anchors: dict[str, int]  # name -> offset of its (last) definition
    aliases: list[tuple[str, int]]
    comments: list[str]


_SPECIAL = re.compile(r"""['"\[\]{}#&*!|>]""")
_NAME = re.compile(r"[^\s,\[\]{}]+")
_BLOCK_HEAD = re.compile(r"[|>][0-9+-]*[ \t]*(?:#.*)?\Z")
PLAIN_KEY = re.compile(
    r"""(?P<k>(?:[^\s#'"\[\]{},&*!|>%@`:-]|-(?=\S)|:(?=\S))(?:[^:#]|#(?<!\s#)|:(?=\S))*?)[ \t]*:(?:[ \t]|\Z)"""
)
QUOTED_KEY = re.compile(r"""(?:'(?P<s>(?:[^']|'')*)'|"(?P<d>(?:[^"\\]|\\.)*)")[ \t]*:(?:[ \t]|\Z)""")


# Indented lines that open nothing across lines (no multi-line quote, bracket or block scalar) and
# hold no anchor or alias: read by one regex, a run at a time. Anything else is read token by token.
_Q = r"'(?:[^'\n]|'')*+'" + r'|"(?:[^"\\\n]|\\.)*+"'
_P = r"[^'\"\[\]{}#&*!|>\n]++"
_F1 = rf"\[(?:{_P}|{_Q})*+\]|\{{(?:{_P}|{_Q})*+\}}"
_F2 = rf"\[(?:{_P}|{_Q}|{_F1})*+\]|\{{(?:{_P}|{_Q}|{_F1})*+\}}"
_FIRST = r"[^ \t\r\n#'\"\[\]{}&*!|>-]"  # not a comment, quote, bracket, property, block scalar or "- "
_CLOSED_LINES = re.compile(
    rf"(?:[ \t]{{1,{MAX_INDENT}}}(?:-[ \t]++)*+{_FIRST}(?:{_P}|{_Q}|{_F2})*+(?:(?<=[ \t])#[^\n]*+)?\n){{1,4096}}"
)


def _top_key(line: str) -> str | None:
    """The key of a top-level ``key: value`` line, or None."""
    m = QUOTED_KEY.match(line)
    if m:
        return m.group("s").replace("''", "'") if m.group("s") is not None else m.group("d")
    m = PLAIN_KEY.match(line)
    return m.group("k").rstrip() if m else None


def scan(text: str, comments: bool = True) -> Layout:
    """Top-level keys with their extent, anchors, aliases and (with ``comments``) comments of
    ``text`` (no BOM), in one pass over its lines; YamlError for what an edit will not take (not
    one top-level mapping, too deep, too many aliases, an unterminated quote or bracket). Without
    ``comments``, runs of lines that open nothing are read by one regex (a large file)."""
    segments: list[Segment] = []
    anchors: dict[str, int] = {}
    aliases: list[tuple[str, int]] = []
    said: list[str] = []
    depth = 0  # flow nesting
    quote = ""  # the quote of a scalar open across lines
    block_indent = -1  # > -1: inside a block scalar whose parent line has that indentation
    seg_key: str | None = None
    seg_start = seg_line = last_end = 0
    docs = opened = 0
    pos, n, lineno = 0, len(text), 0
    fast = not comments
    while pos < n:
        if fast and not quote and not depth and block_indent < 0:
            run = _CLOSED_LINES.match(text, pos)
            if run is not None and run.end() > pos:
                lineno += text.count("\n", pos, run.end())
                pos = last_end = run.end()
                continue
        nl = text.find("\n", pos)
        stop = n if nl < 0 else nl + 1
        line = text[pos:stop].rstrip("\r\n")
        lineno += 1
        here = pos
        pos = stop
        stripped = line.lstrip(" ")
        indent = len(line) - len(stripped)
        if block_indent >= 0:
            if not stripped.strip() or indent > block_indent:
                last_end = stop
                continue
            block_indent = -1
        if not quote and not depth:
            if not stripped or stripped.startswith("#"):
                if stripped:
                    said.append(stripped)
                continue
            if indent > MAX_INDENT:
                raise YamlError(f"is indented {indent} columns at line {lineno}: deeper than irlint fix reads")
            if indent == 0:
                if line.startswith(("---", "...")) and (len(line) == 3 or line[3] in " \t"):
                    docs += line.startswith("---") and bool(segments or seg_key)
                    if docs:
                        raise Refused(f"holds more than one YAML document (line {lineno}): irlint fix edits one")
                    if seg_key is not None:
                        segments.append(Segment(seg_key, seg_start, last_end, seg_line))
                        seg_key = None
                    continue
                if line.startswith(("- ", "-\t")) or line == "-" or line[0] in "[{":
                    raise Refused(f"is not a mapping of keys at its top (line {lineno})")
                key = _top_key(line)
                if key is None:
                    if line[0] in "%":
                        continue  # a directive
                    raise YamlError(
                        f"is not valid YAML (line {lineno}): a top-level line that is not a key: {line[:60]!r}"
                    )
                if seg_key is not None:
                    segments.append(Segment(seg_key, seg_start, last_end, seg_line))
                seg_key, seg_start, seg_line = key, here, lineno
        last_end = stop
        # the tokens of the line that change the scanner's state
        i = 0
        if quote:
            i = close_quote(line, 0, quote)
            if i < 0:
                continue
            quote = ""
        for m in _SPECIAL.finditer(line, i):
            c, j = m.group(), m.start()
            if j < i:
                continue  # inside a quoted scalar or name already read
            at_token = token_start(line, j, depth)
            if c == "#":
                if j == 0 or line[j - 1] in " \t":
                    said.append(line[j:])
                    break
            elif c in "'\"":
                if at_token:
                    end = close_quote(line, j + 1, c)
                    if end < 0:
                        quote, opened = c, lineno
                        break
                    i = end
            elif c in "[{":
                if at_token or depth:
                    if not depth:
                        opened = lineno
                    depth += 1
                    if depth > MAX_FLOW_DEPTH:
                        raise YamlError(f"nests flow collections more than {MAX_FLOW_DEPTH} deep (line {lineno})")
            elif c in "]}":
                if depth:
                    depth -= 1
            elif c in "&*!":
                if at_token:
                    name = _NAME.match(line, j + 1)
                    end = name.end() if name else j + 1
                    if c == "&" and name:
                        anchors[name.group()] = here + j
                    elif c == "*" and name:
                        aliases.append((name.group(), here + j))
                        if len(aliases) > MAX_ALIASES:
                            raise YamlError(f"holds more than {MAX_ALIASES} aliases: more than irlint fix reads")
                    i = end
            elif c in "|>" and at_token and not depth and _BLOCK_HEAD.match(line, j):
                block_indent = indent
                break
    if quote:
        raise YamlError(f"is not valid YAML (line {opened}): a quoted scalar ({quote}) that is never closed")
    if depth:
        raise YamlError(f"is not valid YAML (line {opened}): a flow collection ([ or {{) that is never closed")
    if seg_key is not None:
        segments.append(Segment(seg_key, seg_start, last_end, seg_line))
    return Layout(segments, anchors, aliases, said)


def close_quote(line: str, i: int, q: str) -> int:
    """The index after the quote closing a scalar opened before ``i``, or -1 (it goes on)."""
    while True:
        j = line.find(q, i)
        if j < 0:
            return -1
        if q == "'":
            if line.startswith("''", j):
                i = j + 2
                continue
            return j + 1
        back = 0
        while j - back - 1 >= 0 and line[j - back - 1] == "\\":
            back += 1
        if back % 2 == 0:
            return j + 1
        i = j + 1


def token_start(line: str, j: int, depth: int) -> bool:
    """Whether a node can start at ``line[j]`` (after indentation, ``: ``, ``- ``, ``? ``, a flow
    indicator, or a property)."""
    k = j - 1
    while k >= 0 and line[k] in " \t":
        k -= 1
    if k < 0:
        return True
    c = line[k]
    if c in "[{,":
        return True
    if c in ":-?" and k + 1 < j:
        return True
    if depth and c == ":":
        return True
    # after an anchor or a tag: the word before starts with & or !
    w = k
    while w >= 0 and line[w] not in " \t":
        w -= 1
    return k + 1 < j and line[w + 1 : w + 2] in ("&", "!") and token_start(line, w + 1, depth)


def outside_quotes(s: str) -> bool:
    """Whether ``s`` (a line's start) leaves no quoted scalar open."""
    i, q = 0, ""
    while i < len(s):
        c = s[i]
        if q:
            if c == q and not (q == '"' and s[i - 1] == "\\"):
                q = ""
        elif c in "'\"" and token_start(s, i, 1):
            q = c
        i += 1
    return not q


def closing(text: str, start: int) -> int | None:
    """The offset of the bracket closing the one at ``start`` (quotes and comments skipped)."""
    depth, i, n = 0, start, len(text)
    while i < n:
        c = text[i]
        if c in "'\"":
            ls = text.rfind("\n", 0, i) + 1
            if token_start(text[ls : i + 1], i - ls, 1):
                j = close_quote(text, i + 1, c)
                if j < 0:
                    return None
                i = j
                continue
        elif c == "#" and (i == 0 or text[i - 1] in " \t\n"):
            nl = text.find("\n", i)
            if nl < 0:
                return None
            i = nl + 1
            continue
        elif c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None


def key_colon(line: str) -> int | None:
    """The offset of the colon after a top-level line's key."""
    m = QUOTED_KEY.match(line) or PLAIN_KEY.match(line)
    return line.rfind(":", 0, m.end()) if m else None
