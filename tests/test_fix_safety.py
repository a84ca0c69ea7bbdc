"""``irlint fix`` as safe as an editor: nothing outside the plan's keys lost or changed, whatever
form the YAML takes; refused (exit 2, file untouched, the construct named) where an edit cannot keep
that; every ``select_recompute`` form MindFormers' ``LayerSetting`` reads; the config checked
against the dumps; concurrent writers, permissions, signals and hostile input."""

from __future__ import annotations

import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import time
import warnings

import pytest
from click.testing import CliRunner
from conftest import TESTS
from ruamel.yaml import YAML

import irlint.cli
import irlint.cli.fix as fix_module
from irlint.mfyaml import (
    DEFAULT_KEYS,
    DumpFacts,
    Refused,
    YamlError,
    apply_fix_plan,
    apply_plan,
    covering,
    mismatches,
    set_option,
)

MF = TESTS / "fixtures" / "recompute" / "par-rc-mf_dp2_mp4_select_blocked"  # Llama (legacy names)
QWEN0 = TESTS / "fixtures" / "recompute" / "mf-qwen3-dp2_mp4_irlint_fix_round0"  # Qwen3 (mcore names)
LLAMA0 = TESTS / "fixtures" / "recompute" / "mf-dp2_mp4_irlint_fix_round0"
CONFIGS = TESTS / "fixtures" / "mindformers-configs"
KEYS = ["attention\\.reshape", "feed_forward\\.w2\\.reshape"]
DEFAULTS = "['feed_forward\\.mul', 'feed_forward\\.w1\\.activation\\.silu']"  # what the MF dump shows applied


def plan(*keys: str, **more) -> dict:
    return {"select_recompute": list(keys or KEYS), **more}


def safe(text: str):
    return YAML(typ="safe", pure=True).load(text)


def run(*args):
    return CliRunner().invoke(irlint.cli.main, ["fix", *map(str, args), "--no-cache"])


def only_select_changed(old: str, new: str) -> None:
    """``new`` loads, and equals ``old`` but for recompute_config.select_recompute."""
    a, b = safe(old), safe(new)
    a["recompute_config"].pop("select_recompute", None)
    b["recompute_config"].pop("select_recompute", None)
    assert a == b


# --- 1-4: the block's extent and spelling ---------------------------------------------------------


@pytest.mark.parametrize(
    "block",
    [
        "recompute_config: {recompute: False, select_recompute: ['feed_forward\\.mul']}\n",
        "recompute_config: {select_recompute: [feed_forward\\.mul],\n  recompute: false}\n",
        "recompute_config: {\n  recompute: False,\n  select_recompute: [\n    'feed_forward\\.mul'\n  ]\n}\n",
    ],
    ids=["one-line", "two-lines", "brackets-on-own-lines"],
)
def test_a_flow_style_block_keeps_everything_and_gets_the_keys(block):
    text = "seed: 0\n" + block + "model:\n  arch: llama\n"
    edit = apply_plan(text, plan())
    assert edit.added == KEYS
    new = safe(edit.text)
    assert new["recompute_config"]["select_recompute"] == ["feed_forward\\.mul", *KEYS]
    assert new["seed"] == 0 and new["model"] == {"arch": "llama"}
    only_select_changed(text, edit.text)


def test_an_anchor_on_the_block_is_kept_and_an_alias_of_it_elsewhere_is_refused():
    kept = "recompute_config: &rc\n  select_recompute: ['feed_forward\\.mul']\nseed: 0\n"
    edit = apply_plan(kept, plan())
    assert edit.text.startswith("recompute_config: &rc\n") and safe(edit.text)["seed"] == 0
    used = "recompute_config: &rc_all\n  select_recompute: []\neval_recompute: *rc_all\nseed: 0\n"
    with pytest.raises(Refused, match="eval_recompute"):
        apply_plan(used, plan())


@pytest.mark.parametrize("line", ["a#b: 1", "-weird: 1", "'quoted key': 2", "x:y: 3", "odd_key : 4"])
def test_any_top_level_line_after_the_block_stays(line):
    text = "recompute_config:\n  recompute: False\n  select_recompute: ['feed_forward\\.mul']\n" + line + "\nz: 9\n"
    edit = apply_plan(text, plan())
    assert edit.text.endswith(line + "\nz: 9\n")
    only_select_changed(text, edit.text)


@pytest.mark.parametrize(
    "head",
    [
        "\ufeffrecompute_config:",
        '"recompute_config":',
        "'recompute_config':",
        "recompute_config :",
        "recompute_config:   # mine",
    ],
    ids=["bom", "double-quoted", "single-quoted", "space-before-colon", "comment"],
)
def test_a_bom_or_a_spelled_key_is_no_internal_error(head):
    text = head + "\n  select_recompute:\n  - 'feed_forward\\.mul'\nseed: 1\n"
    edit = apply_plan(text, plan())
    assert edit.added == KEYS
    assert edit.text.startswith(head + "\n")
    body = edit.text.removeprefix("\ufeff")
    assert safe(body)["recompute_config"]["select_recompute"] == ["feed_forward\\.mul", *KEYS]
    assert safe(body)["seed"] == 1


def test_the_cli_on_a_bom_config_keeps_the_bom(tmp_path):
    path = tmp_path / "cfg.yaml"
    path.write_bytes(("\ufeffrecompute_config :\n  select_recompute: " + DEFAULTS + "\n").encode())
    result = run(path, MF)
    assert result.exit_code == 0, result.output
    data = path.read_bytes()
    assert data.startswith(b"\xef\xbb\xbfrecompute_config :\n") and b"attention\\.reshape" in data


# --- 5: concurrent edits -------------------------------------------------------------------------


def _config(tmp_path, extra: str = "") -> os.PathLike:
    path = tmp_path / "cfg.yaml"
    path.write_text(f"recompute_config:\n  recompute: False\n  select_recompute: {DEFAULTS}\nseed: 0\n{extra}")
    return path


def test_an_edit_saved_during_the_lint_is_kept(tmp_path, monkeypatch):
    path = _config(tmp_path)
    real = fix_module._lint

    def lint_while_the_user_saves(*a):
        out = real(*a)
        path.write_text(path.read_text().replace("seed: 0", "seed: 42  # saved meanwhile"))
        return out

    monkeypatch.setattr(fix_module, "_lint", lint_while_the_user_saves)
    result = run(path, MF)
    assert result.exit_code == 0, result.output
    text = path.read_text()
    assert "seed: 42  # saved meanwhile" in text and "'attention\\.reshape'" in text


def test_the_config_is_parsed_once_and_anew_only_when_it_changed_during_the_lint(tmp_path, monkeypatch):
    import irlint.mfyaml as mfyaml

    loads: list[str] = []
    real_parse = mfyaml._parse
    monkeypatch.setattr(mfyaml, "_parse", lambda text, *a: loads.append(text) or real_parse(text, *a))
    path = _config(tmp_path)
    block = path.read_text().split("seed:")[0]
    result = run(path, MF)
    assert result.exit_code == 0 and "'attention\\.reshape'" in path.read_text(), result.output
    # the block once (the check and the edit), the whole file before and after the edit (verify)
    assert loads.count(block) == 1 and len(loads) == 3, loads
    # a block changed during the lint is the one edited (the first parse would splice the old one in)
    path = _config(tmp_path)
    real = fix_module._lint

    def lint_while_the_user_adds_a_key(*a):
        out = real(*a)
        path.write_text(path.read_text().replace("select_recompute: [", "select_recompute: ['mine\\.key', "))
        return out

    monkeypatch.setattr(fix_module, "_lint", lint_while_the_user_adds_a_key)
    loads.clear()
    result = run(path, MF)
    text = path.read_text()
    assert result.exit_code == 0 and "'mine\\.key'" in text and "'attention\\.reshape'" in text, result.output
    assert len(loads) == 4  # the first read's block, the changed one, verify's two
    assert safe(text)["seed"] == 0 and safe(text)["recompute_config"]["select_recompute"][0] == "mine\\.key"


def test_a_second_fix_during_the_first_is_not_lost_nor_doubled(tmp_path, monkeypatch):
    path = _config(tmp_path)
    real = fix_module._lint
    inner: list = []

    def lint_and_let_another_run_finish(*a):
        out = real(*a)
        if not inner:
            inner.append(None)
            path.write_text(path.read_text().replace("seed: 0", "seed: 7"))
            inner.append(run(path, MF))
        return out

    monkeypatch.setattr(fix_module, "_lint", lint_and_let_another_run_finish)
    first = run(path, MF)
    second = inner[1]
    assert second.exit_code == 0 and "added" in second.stderr
    assert first.exit_code == 0 and "already covered" in first.stderr and "added" not in first.stderr
    text = path.read_text()
    assert text.count("attention\\.reshape") == 1 and "seed: 7" in text


def test_a_change_between_the_read_and_the_rename_is_refused(tmp_path, monkeypatch):
    import irlint.mfyaml as mfyaml

    path = _config(tmp_path)
    real = mfyaml.apply_fix_plan

    def edited_by_someone_meanwhile(text, *a, **kw):
        out = real(text, *a, **kw)
        path.write_text(text.replace("seed: 0", "seed: 5"))  # an editor saves while the edit is built
        return out

    monkeypatch.setattr(mfyaml, "apply_fix_plan", edited_by_someone_meanwhile)
    result = run(path, MF)
    assert result.exit_code == 2 and "changed while irlint fix was writing it" in result.stderr
    assert "seed: 5" in path.read_text() and "attention\\.reshape" not in path.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cfg.yaml"]


# --- 6: counts and bools, a single key ------------------------------------------------------------


@pytest.mark.parametrize("counts", ["[2, 2]", "[[1, 1], [1, 1]]", "[True, False]"])
def test_counts_for_the_default_keys_become_the_dict_that_keeps_their_meaning(counts):
    text = f"recompute_config:\n  select_recompute: {counts}  # mine\nseed: 0\n"
    edit = apply_plan(text, plan(), family="legacy")
    table = safe(edit.text)["recompute_config"]["select_recompute"]
    value = safe(f"v: {counts}")["v"]
    assert table == {**dict.fromkeys(DEFAULT_KEYS["legacy"], value), **dict.fromkeys(KEYS, value)}
    assert all(isinstance(k, str) for k in table)  # MindFormers refuses a list mixing counts and keys
    assert "# mine" in edit.text


def test_counts_without_a_known_model_are_refused_not_guessed():
    with pytest.raises(Refused, match="counts for MindFormers' default keys"):
        apply_plan("recompute_config:\n  select_recompute: [1, 1]\n", plan("x\\.y"))


@pytest.mark.parametrize("scalar", ["'feed_forward\\.mul'", "feed_forward\\.mul", '"my\\\\.key"'])
def test_a_single_key_as_a_string_is_kept_in_the_list(scalar):
    text = f"recompute_config:\n  select_recompute: {scalar}\n"
    edit = apply_plan(text, plan())
    mine = safe(text)["recompute_config"]["select_recompute"]
    assert safe(edit.text)["recompute_config"]["select_recompute"] == [mine, *KEYS]


# --- 7-8: covered as MindFormers matches ----------------------------------------------------------


@pytest.mark.parametrize(
    "pattern, key, covered",
    [
        (".*\\.reshape", "feed_forward\\.w2\\.reshape", False),  # two segments against three
        ("feed_forward.w2.reshape", "feed_forward\\.w2\\.reshape", False),  # one segment
        ("feed_forward\\..*\\.reshape", "feed_forward\\.w2\\.reshape", True),
        ("feed_forward\\.w.\\.reshape", "feed_forward\\.w2\\.reshape", True),
        ("attention\\.reshape", "attention\\.reshape", True),
        ("attention", "attention\\.reshape", False),
        ("mlp\\.(linear_fc1|linear_fc2)\\.reshape", "mlp\\.linear_fc2\\.reshape", True),
    ],
)
def test_covered_is_decided_segment_by_segment_as_mindformers_does(pattern, key, covered):
    assert (covering(key, [pattern]) is not None) is covered
    text = f"recompute_config:\n  select_recompute: ['{pattern}']\n"
    edit = apply_plan(text, plan(key))
    assert edit.added == ([] if covered else [key])


@pytest.mark.parametrize("off", ["False", "false", "0", "[0, 0]", "null", "[False, False]"])
def test_a_disabled_dict_entry_covers_nothing(off):
    text = f"recompute_config:\n  select_recompute:\n    'feed_forward\\..*\\.reshape': {off}\n    'x\\.y': True\n"
    edit = apply_plan(text, plan("feed_forward\\.w2\\.reshape"))
    assert edit.added == ["feed_forward\\.w2\\.reshape"]
    table = safe(edit.text)["recompute_config"]["select_recompute"]
    assert table["feed_forward\\.w2\\.reshape"] is True and table["x\\.y"] is True
    # the user's own entry for exactly that key is turned on, not written twice
    same = f"recompute_config:\n  select_recompute:\n    'attention\\.reshape': {off}\n"
    edit = apply_plan(same, plan("attention\\.reshape"))
    assert safe(edit.text)["recompute_config"]["select_recompute"] == {"attention\\.reshape": True}
    assert edit.raised and edit.raised[0].startswith("attention\\.reshape: ")


# --- 9: comments after the block -------------------------------------------------------------------


@pytest.mark.parametrize(
    "block",
    [
        "recompute_config:\n  recompute: False\n",
        "recompute_config:\n  recompute: False\n  select_recompute: False\n",
        "recompute_config:\n  recompute: False\n  select_recompute: ['feed_forward\\.mul']\n",
        "recompute_config:\n  select_recompute:\n    - 'feed_forward\\.mul'\n",
    ],
    ids=["missing", "last-bool", "last-list", "last-block-list"],
)
def test_the_next_sections_comment_stays_once_and_after_the_block(block):
    text = block + "\n# optimizer\noptimizer:\n  type: AdamW\n"
    edit = apply_plan(text, plan())
    assert edit.text.count("# optimizer") == 1
    head, _, tail = edit.text.partition("# optimizer")
    assert "attention\\.reshape" in head and tail == "\noptimizer:\n  type: AdamW\n"
    only_select_changed(text, edit.text)


# --- 10: permissions, as root too -------------------------------------------------------------------


def test_a_read_only_file_is_refused_by_its_mode(tmp_path):
    path = _config(tmp_path)
    os.chmod(path, 0o444)
    before = path.read_bytes()
    result = run(path, MF)
    assert result.exit_code == 2 and "read-only" in result.stderr and path.read_bytes() == before


def test_a_read_only_folder_is_refused_by_its_mode(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    path = _config(folder)
    before = path.read_bytes()
    os.chmod(folder, 0o555)
    try:
        result = run(path, MF)
    finally:
        os.chmod(folder, 0o755)
    assert result.exit_code == 2 and "not writable" in result.stderr and path.read_bytes() == before


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another user")
def test_as_root_another_users_file_keeps_its_owner(tmp_path):
    path = _config(tmp_path)
    os.chown(path, 4321, 4322)
    os.chmod(path, 0o664)
    result = run(path, MF)
    assert result.exit_code == 0, result.output
    st = os.stat(path)
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (4321, 4322, 0o664)
    assert "attention\\.reshape" in path.read_text()


# --- 11: a shared anchor ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "block",
    [
        "  select_recompute: &keys ['feed_forward\\.mul']\n  select_comm_recompute: *keys\n",
        "  select_recompute: &k\n    - feed_forward\\.mul\n  select_comm_recompute: *k\n",
    ],
)
def test_a_list_shared_through_an_anchor_is_not_changed_in_both(block):
    text = "recompute_config:\n" + block
    with pytest.raises(Refused, match="select_comm_recompute"):
        apply_plan(text, plan())


def test_the_cli_refuses_a_shared_anchor_with_exit_2(tmp_path):
    path = tmp_path / "cfg.yaml"
    path.write_text(f"recompute_config:\n  select_recompute: &keys {DEFAULTS}\n  select_comm_recompute: *keys\n")
    before = path.read_bytes()
    result = run(path, MF)
    assert result.exit_code == 2 and "select_comm_recompute" in result.stderr and path.read_bytes() == before
    assert "Traceback" not in result.output


# --- 12: signals during the write --------------------------------------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_the_write_leaves_no_temporary_file_and_a_whole_config(tmp_path, monkeypatch, sig):
    path = _config(tmp_path)
    before = path.read_text()
    real = os.fsync

    def signalled(fd):
        os.kill(os.getpid(), sig)
        time.sleep(0.05)
        return real(fd)

    monkeypatch.setattr(os, "fsync", signalled)
    result = run(path, MF)
    assert result.exit_code in (130, 143, 0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cfg.yaml"]
    after = path.read_text()
    assert after == before or ("attention\\.reshape" in after and safe(after)["seed"] == 0)


# --- 13: line endings and styles ---------------------------------------------------------------------


def test_crlf_stays_crlf_everywhere():
    text = "a: 1\r\nrecompute_config:\r\n  recompute: False\r\n  select_recompute:\r\n  - 'x\\.y'\r\nb: 2\r\n"
    edit = apply_plan(text, plan())
    assert "\n" not in edit.text.replace("\r\n", "") and edit.added == KEYS
    only_select_changed(text, edit.text)


def test_comments_inside_a_multi_line_flow_list_are_kept():
    text = (
        "recompute_config:\n  select_recompute: [\n    'feed_forward\\.mul',  # the Mul\n"
        "    # the SiLU next\n    'feed_forward\\.w1\\.activation\\.silu'\n  ]  # end\nseed: 0\n"
    )
    edit = apply_plan(text, plan())
    for comment in ("# the Mul", "# the SiLU next", "# end"):
        assert comment in edit.text
    assert safe(edit.text)["recompute_config"]["select_recompute"][-2:] == KEYS


def test_an_empty_flow_list_stays_flow_and_the_document_end_stays():
    text = "recompute_config:\n  select_recompute: []   # none yet\nseed: 0\n...\n"
    edit = apply_plan(text, plan())
    assert "  select_recompute: ['attention\\.reshape', 'feed_forward\\.w2\\.reshape']   # none yet\n" in edit.text
    assert edit.text.endswith("seed: 0\n...\n")


@pytest.mark.parametrize(
    "text",
    [
        "base: &rc\n  select_recompute: []\nrecompute_config: *rc\n",
        "base: &rc\n  recompute: False\nrecompute_config:\n  <<: *rc\n  select_recompute: []\n",
    ],
    ids=["alias", "merge"],
)
def test_a_block_built_from_an_alias_is_refused_not_expanded(text):
    with pytest.raises(Refused, match=r"alias \*rc"):
        apply_plan(text, plan())


# --- 14: hostile input -------------------------------------------------------------------------------


def _bomb(levels: int) -> str:
    lines = ["a0: &a0 ['lol', 'lol', 'lol', 'lol', 'lol', 'lol', 'lol', 'lol', 'lol']"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join(lines) + f"\nrecompute_config:\n  select_recompute: [*a{levels - 1}]\n"


@pytest.mark.parametrize("levels", [9, 11])
def test_an_alias_bomb_is_quick_and_quiet(levels):
    text = _bomb(levels)
    start = time.monotonic()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(YamlError):
            apply_plan(text, plan())
    assert time.monotonic() - start < 2


@pytest.mark.parametrize("levels", [9, 11])
def test_an_alias_bomb_elsewhere_in_the_file_is_refused_quickly(levels):
    text = _bomb(levels).replace("select_recompute: [*a", "select_recompute: ['x\\.y']\n  other: [*a")
    start = time.monotonic()
    with pytest.raises(Refused, match="alias bomb"):
        apply_plan(text, plan())
    assert time.monotonic() - start < 2


@pytest.mark.parametrize("deep", ["[" * 5000 + "]" * 5000, "{a: " * 3000 + "1" + "}" * 3000])
def test_deep_nesting_is_a_clear_error(deep):
    text = "recompute_config:\n  select_recompute: []\nx: " + deep + "\n"
    with pytest.raises(YamlError, match="deep"):
        apply_plan(text, plan())


def test_deep_nesting_through_the_cli_is_exit_2(tmp_path):
    path = tmp_path / "cfg.yaml"
    path.write_text("recompute_config:\n  select_recompute: []\nx: " + "[" * 5000 + "]" * 5000 + "\n")
    result = run(path, MF)
    assert result.exit_code == 2 and "deep" in result.stderr and "Traceback" not in result.output


@pytest.mark.slow
def test_a_50_mb_config_in_under_5_s_and_200_mb(tmp_path):
    path = tmp_path / "big.yaml"
    entry = "  w{i}: {{shape: [4096, 4096], dtype: float16, note: 'a # b'}}  # weight {i}\n"
    with open(path, "w") as f:
        f.write("model:\n  arch: llama\nweights:\n")
        i, size = 0, 0
        while size < 50 << 20:
            line = entry.format(i=i)
            f.write(line)
            size += len(line)
            i += 1
        f.write(f"recompute_config:\n  recompute: False\n  select_recompute: {DEFAULTS}\nseed: 0\n")
    code = (
        "import resource, sys, time\n"
        "from irlint.mfyaml import apply_fix_plan\n"
        "t = time.monotonic()\n"
        "text = open(sys.argv[1], encoding='utf-8').read()\n"
        "out = apply_fix_plan(text, {'recompute': {'select_recompute': ['attention\\\\.reshape']}}, 'legacy')\n"
        "assert out.edit.added == ['attention\\\\.reshape']\n"
        "assert out.edit.text.startswith(text[:100000]) and out.edit.text.count('attention') == 1\n"
        "peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        # Linux keeps the forked parent's high-water mark in ru_maxrss across exec; VmHWM is this program's
        "try:\n"
        "    peak = int(next(ln for ln in open('/proc/self/status') if ln.startswith('VmHWM')).split()[1])\n"
        "except OSError:\n"
        "    pass\n"
        "print(time.monotonic() - t, peak)\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
    seconds, kib = done.stdout.split()
    assert float(seconds) < 5 and int(kib) < 200 * 1024, done.stdout


# --- 15: dumps of two models -------------------------------------------------------------------------


def test_dumps_of_two_models_are_refused_and_force_goes_on_with_a_warning(tmp_path):
    path = _config(tmp_path)
    before = path.read_bytes()
    result = run(path, MF, QWEN0)
    assert result.exit_code == 2 and "different models" in result.stderr and path.read_bytes() == before
    forced = run(path, MF, QWEN0, "--force")
    assert "warning: does not match the dumps: the dumps are of different models" in forced.stderr
    assert forced.exit_code in (0, 1) and path.read_bytes() != before


# --- seen on real compiles ---------------------------------------------------------------------------


def test_select_recompute_true_is_written_out_as_the_models_defaults_and_the_plans_keys(tmp_path):
    path = tmp_path / "cfg.yaml"
    text = (QWEN0 / "cfg.yaml").read_text()
    text = re.sub(r"select_recompute: \[.*\]", "select_recompute: True", text)
    path.write_text(text)
    result = run(path, QWEN0)
    assert result.exit_code == 0, result.output
    written = safe(path.read_text())["recompute_config"]["select_recompute"]
    assert written == [*DEFAULT_KEYS["mcore"], "mlp\\.linear_fc2\\.reshape"]
    assert "feed_forward" not in path.read_text().split("recompute_config:")[1].split("\n\n")[0]
    only_select_changed(text, path.read_text())
    # the legacy model's own defaults for a legacy dump
    edit = apply_plan("recompute_config:\n  select_recompute: True\n", plan(), family="legacy")
    assert safe(edit.text)["recompute_config"]["select_recompute"] == [*DEFAULT_KEYS["legacy"], *KEYS]


DS0 = TESTS / "fixtures" / "recompute" / "mf-deepseek3-dp4_mp2_ep2_select_true_round0"
DS1 = TESTS / "fixtures" / "recompute" / "mf-deepseek3-dp4_mp2_ep2_select_true_round1"


def test_deepseek_v3_with_select_recompute_true_converges_in_one_round(tmp_path):
    """The real recompile: round 0 compiled with ``select_recompute: True``; round 1 with what
    irlint fix writes from it (the fixture's cfg.yaml, byte for byte), and no finding is left."""
    path = tmp_path / "cfg.yaml"
    shutil.copyfile(DS0 / "cfg.yaml", path)
    result = run(path, DS0)
    assert result.exit_code == 0, result.output
    assert path.read_bytes() == (DS1 / "cfg.yaml").read_bytes()
    assert safe(path.read_text())["recompute_config"]["select_recompute"] == [
        *DEFAULT_KEYS["mcore"],
        "mlp\\.linear_fc2\\.reshape",
    ]
    lint0 = CliRunner().invoke(irlint.cli.main, [str(DS0), "--format", "concise", "-n"])
    lint1 = CliRunner().invoke(irlint.cli.main, [str(DS1), "--format", "concise", "-n"])
    assert "RC002" in lint0.stdout and lint1.exit_code == 0 and lint1.stdout == ""


@pytest.mark.parametrize(
    "line, value, written",
    [
        ("hidden_dropout: 0.1", "0.0", "hidden_dropout: 0.0"),
        ("hidden_dropout: 0.1", 0, "hidden_dropout: 0.0"),
        ("offset: 0", [1, -1], "offset: [1, -1]"),
        ("offset: [0, 0]  # per stage", [1, -1], "offset: [1, -1]  # per stage"),
        ("offset: [[0, 0], [0, 0]]", [[1, 0], [0, -1]], "offset: [[1, 0], [0, -1]]"),
        ("use_rope_slice: true", False, "use_rope_slice: false"),
        ("num_layers: 4", "8", "num_layers: 8"),
        ("offset: &off 0  # anchored", [1, -1], "offset: &off [1, -1]  # anchored"),
    ],
)
def test_a_model_option_is_written_with_the_type_it_has(line, value, written):
    text = f"model:\n  model_config:\n    {line}\n    other: 1\nseed: 0\n"
    key = line.split(":")[0]
    new, said = set_option(text, f"model.model_config.{key}", value)
    assert new == text.replace(line, written), said
    want = safe(f"v: {written.split(':', 1)[1].split('#')[0]}")["v"]
    got = safe(new)["model"]["model_config"][key]
    assert got == want and type(got) is type(want)


def test_an_offset_through_the_plans_config_changes():
    text = "recompute_config:\n  select_recompute: []\nmodel:\n  model_config:\n    offset: 0\n"
    out = apply_fix_plan(
        text,
        {
            "recompute": {"select_recompute": []},
            "config": [
                {"key": "model.model_config.offset", "value": [1, -1], "written_by_fix": True, "why": "", "note": ""}
            ],
        },
    )
    assert out.edit.text == text.replace("offset: 0", "offset: [1, -1]")
    assert out.settings == ["model.model_config.offset: 0 -> [1, -1]"]


def test_a_config_that_is_not_the_dumps_is_refused_naming_the_mismatch(tmp_path):
    for name, said in [
        ("llm_pretrain_dense_template.yaml", "the dumps show 'mlp\\.activation_func\\.silu', 'mlp\\.mul' applied"),
        (
            "finetune_qwen3.yaml",
            "recompute is True in the config, and no decoder layer of the dumps is recomputed whole",
        ),
        ("pretrain_telechat3_36b.yaml", "recompute is [[14, 14], [14, 14]]"),
    ]:
        path = tmp_path / name
        shutil.copyfile(CONFIGS / name, path)
        before = path.read_bytes()
        result = run(path, QWEN0)
        assert result.exit_code == 2 and said in result.stderr and path.read_bytes() == before, result.stderr
    path = tmp_path / "llama.yaml"  # Llama's keys with a Qwen3 dump
    shutil.copyfile(LLAMA0 / "cfg.yaml", path)
    result = run(path, QWEN0)
    assert result.exit_code == 2 and "select_recompute names legacy cells" in result.stderr
    path = tmp_path / "other.yaml"  # the config of another compile, with keys the dump shows untagged
    shutil.copyfile(TESTS / "fixtures" / "recompute" / "mf-dp2_mp4_rcast_recomputed" / "cfg.yaml", path)
    result = run(path, LLAMA0)
    assert result.exit_code == 2 and "asks for 'attention\\.wq\\.reshape'" in result.stderr
    assert "compiled without it" in result.stderr
    # the keys this plan adds are no mismatch: irlint fix run again after it wrote them
    path = tmp_path / "round1.yaml"
    shutil.copyfile(TESTS / "fixtures" / "recompute" / "mf-dp2_mp4_irlint_fix_round1" / "cfg.yaml", path)
    result = run(path, LLAMA0)
    assert result.exit_code == 0 and "already covered" in result.stderr, result.stderr


def test_fix_reads_each_dump_once_and_checks_the_config_against_what_the_lint_read(tmp_path, monkeypatch):
    import irlint.read.reader as reader
    from irlint.runner.discover import discover
    from irlint.runner.lint_file import READ_HOOKS
    from irlint.runner.streams import open_dump

    for dump, cfg in ((LLAMA0, "mf-dp2_mp4_rcast_recomputed"), (QWEN0, "mf-qwen3-dp2_mp4_irlint_fix_round0")):
        (f,) = discover([str(dump)])[0]
        with open_dump(f.path, f.compression) as stream:  # its source traces readable, as in the lint
            ir = reader.read_ir(f.display, f.display, stream=stream)
            ir.stage = f.stage
            fresh = fix_module.file_facts(ir)
        seen: list = []
        real = reader.read_ir
        monkeypatch.setattr(reader, "read_ir", lambda *a, **kw: seen.append(a[0]) or real(*a, **kw))
        kept: dict = {}
        real_facts = fix_module.dump_facts
        monkeypatch.setattr(
            fix_module, "dump_facts", lambda found, known=None: kept.update(known) or real_facts(found, known)
        )
        path = tmp_path / "cfg.yaml"
        shutil.copyfile(TESTS / "fixtures" / "recompute" / cfg / "cfg.yaml", path)
        result = run(path, dump)
        assert result.exit_code in (0, 2), result.output
        assert seen == [f.display], seen  # the lint's read, and no second one for the check
        # the facts of the lint's read, source traces readable (a read of its own closed its stream first)
        assert kept == {f.path: fresh}
        assert READ_HOOKS == []
        monkeypatch.undo()
    # the check still refuses the config of another compile (its keys shown untagged in the dump)
    path = tmp_path / "other.yaml"
    shutil.copyfile(TESTS / "fixtures" / "recompute" / "mf-dp2_mp4_rcast_recomputed" / "cfg.yaml", path)
    result = run(path, LLAMA0)
    assert result.exit_code == 2 and "compiled without it" in result.stderr


def test_mismatches_are_empty_for_the_config_the_dump_was_compiled_with():
    facts = DumpFacts("legacy", frozenset(DEFAULT_KEYS["legacy"]), False, {"LLamaDecodeLayer": ["a"]})
    text = f"recompute_config:\n  recompute: False\n  select_recompute: {DEFAULTS}\n"
    assert mismatches(text, facts) == []
    assert mismatches(text.replace(DEFAULTS, "True"), facts) == []  # True: the defaults


@pytest.mark.parametrize("cfg", sorted(p.parent.name for p in (TESTS / "fixtures").rglob("cfg.yaml")))
def test_every_fixture_config_with_its_own_dump_loads_and_differs_only_in_the_plans_keys(tmp_path, cfg):
    here = next(p.parent for p in (TESTS / "fixtures").rglob("cfg.yaml") if p.parent.name == cfg)
    path = tmp_path / "cfg.yaml"
    shutil.copyfile(here / "cfg.yaml", path)
    before = path.read_text()
    result = run(path, here)
    assert result.exit_code in (0, 1) and "does not match" not in result.stderr, result.stderr
    only_select_changed(before, path.read_text())


@pytest.mark.parametrize("where", [0, 5, 2000, 3998])
def test_the_diff_of_a_long_file_is_the_unified_diff_of_its_lines(where):
    import difflib

    lines = [f"k{i}: {i}  # line {i}\n" for i in range(4000)]
    old = "".join(lines)
    changed = list(lines)
    changed[where] = changed[where].replace(": ", ": [1, 2] ", 1)
    changed.insert(where + 1, "extra: 1\n")
    new = "".join(changed)
    whole = "".join(difflib.unified_diff(lines, changed, fromfile="c.yaml", tofile="c.yaml"))
    assert fix_module._diff("c.yaml", old, new) == whole


# --- the same checks in a large file, where only the block is loaded -------------------------------

PAD = "pad:\n" + "".join(f"  k{i}: {{a: [1, 2], b: 'x # y'}}  # {i}\n" for i in range(3000))  # ~120 KB


@pytest.mark.parametrize(
    "text, refused",
    [
        ("recompute_config: {recompute: False, select_recompute: ['feed_forward\\.mul']}\nseed: 0\n", None),
        ("recompute_config:\n  select_recompute: [\n    'a\\.b',  # mine\n  ]\nseed: 0\n", None),
        ("recompute_config:\r\n  select_recompute:\r\n  - 'a\\.b'\r\nseed: 0\r\n", None),
        (
            "recompute_config:\n  select_recompute: &keys ['a\\.b']\n  select_comm_recompute: *keys\n",
            "select_comm_recompute",
        ),
        ("recompute_config: &rc\n  select_recompute: []\neval_recompute: *rc\n", "used elsewhere"),
        (
            "flag: &off False\nrecompute_config:\n  recompute: *off\n  select_recompute: []\n",
            "anchor defined elsewhere",
        ),
    ],
    ids=["flow-block", "flow-list-comment", "crlf", "shared-anchor", "anchor-used-after", "alias-from-before"],
)
def test_a_large_file_gets_the_same_edit_or_the_same_refusal(text, refused):
    from irlint.mfyaml import FULL_CHECK_BYTES

    big = PAD + text
    assert len(big) > FULL_CHECK_BYTES
    if refused:
        with pytest.raises(Refused, match=refused):
            apply_plan(big, plan())
        return
    edit = apply_plan(big, plan())
    assert edit.added == KEYS and edit.text.startswith(PAD)
    assert edit.text[len(PAD) :] == apply_plan(text, plan()).text
