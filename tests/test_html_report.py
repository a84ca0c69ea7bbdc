"""The HTML reports without a browser: self-contained (nothing loaded from anywhere), one drawn
chain per finding, the fix snippet, and the chain's roles from the rules' notes."""

from __future__ import annotations

import re

from click.testing import CliRunner
from conftest import CORPUS

from irlint import Config, lint
from irlint.cli import main
from irlint.read.reader import read_ir
from irlint.reporters.html import _role, fix_of, size
from irlint.runner.diff import node_key


def html_of(*args: str) -> str:
    no_cache = [] if args[0] == "memory" else ["-n"]
    result = CliRunner().invoke(main, [*args, "--format", "html", *no_cache])
    assert result.exit_code in (0, 1), result.output
    return result.stdout


def assert_self_contained(page: str) -> None:
    # the only URL a page may hold is the SVG namespace, which is never fetched
    urls = set(re.findall(r"https?://[^\s\"'<>)]+", page))
    assert urls <= {"http://www.w3.org/2000/svg"}, urls
    assert not re.search(r"<(?:link|img|iframe|object|embed)\b|\bsrc=|@import|url\((?!#)", page)


def test_lint_page_draws_one_chain_per_finding_and_loads_nothing(monkeypatch):
    monkeypatch.chdir(CORPUS)
    page = html_of("par-mismatch-ffn_mul_disagrees_8ranks", "s2_ffn_3d_reshape_blocks")
    assert_self_contained(page)
    assert page.count('<article class="finding') == page.count('<svg class="chain"') == 5
    assert "on ranks 0-7" in page
    # s2 is plain MindSpore: the fix to paste is the call in the model code, with where it goes
    assert "self.w1.reshape.recompute()  # in the cell that calls self.w1 (/home/user/llm/llm_common.py:64)" in page


def test_memory_and_diff_pages_are_self_contained(monkeypatch):
    monkeypatch.chdir(CORPUS)
    memory = html_of("memory", "llama-recompute-modes")
    assert_self_contained(memory)
    assert memory.count('<rect class="bar"') == 5  # layers 0-3 and outside
    diff = html_of("diff", "s2_ffn_3d_reshape_blocks", "s3_ffn_3d_reshape_fixed")
    assert_self_contained(diff)
    assert diff.count('<rect class="bar"') == 2  # before and after of the one layer
    assert "Findings fixed (2)" in diff and "Recompute state changed" in diff


def test_chain_roles_come_from_the_rules_notes():
    assert _role("producer, in_strategy ((8, 1), (1, 1)), out Float32(8, 32)", "MatMul") == "producer"
    assert _role("consumer (input 0), in_strategy ((1, 8),), out Float32(64, 4)", "ReLU") == "consumer"
    assert _role("backward transpose: ReduceScatter Float32(64, 32)->Float32(8, 32)", "ReduceScatter") == "backward"
    assert _role("blocking Reshape (w1), not recomputed", "Reshape") == "blocking"
    assert _role("StridedSlice Float32(64, 32)->Float32(64, 4)", "StridedSlice") == "step"
    assert _role("Split(axis 0, 8) Float32(512, 8)", "Split") == "step"
    assert _role("column-parallel MatMul to change, in_strategy ((1, 1), (8, 1))", "MatMul") == "consumer"
    assert _role("MatMul w1", "MatMul") == "context"  # the FeedForward around an RC002, not its chain


def test_sizes_and_fix_snippets():
    assert [size(n) for n in (0, 896, 1024, 7168, 168960, 3 * 2**20, 1.21 * 2**30)] == [
        "0 bytes",
        "896 bytes",
        "1.00 KiB",
        "7.00 KiB",
        "165 KiB",
        "3.00 MiB",
        "1.21 GiB",
    ]
    from irlint.findings import Finding, OpFix, Related
    from irlint.rule import strategy_snippet

    related = (Related("f.ir", 65, "%2", "MatMul", "Default/net/MatMul-op0", note="producer"),)
    snippet = strategy_snippet(related, OpFix("%2", in_strategy="((1, 1), (1, 8))"))
    f = Finding(
        "PC001",
        "redundant-redistribution-chain",
        "warning",
        "f.ir",
        77,
        "@g",
        "%3",
        "AllGather",
        "s",
        "m",
        hint="set MatMul mm1 to in_strategy ((1, 1), (1, 8))",
        related=related,
        snippet=snippet,
    )
    what, shown = fix_of(f)
    assert what == f.hint
    assert shown.splitlines() == [
        "# MatMul %2, Default/net/MatMul-op0",
        "in_strategy = ((1, 1), (1, 8))   # e.g. ops.MatMul().shard(((1, 1), (1, 8)))",
    ]
    # a hint that ends with its snippet shows the snippet once, in the snippet's place
    yaml = "recompute_config:\n  select_recompute: ['w2']"
    assert fix_of(f.with_(hint="Recompute the blocking op too:\n" + yaml, snippet=yaml)) == (
        "Recompute the blocking op too:",
        yaml,
    )
    # the snippet is the finding's data: the page reads no hint prose for it
    assert fix_of(f.with_(hint="drop select_recompute key 'w2'\n  (one line more)", snippet="")) == (
        "drop select_recompute key 'w2'\n  (one line more)",
        "",
    )


def test_inserted_ops_match_whatever_hash_a_compile_gave_their_instance_name(tmp_path):
    src = CORPUS / "par-mismatch-mm_rows8_to_cols8" / "rank_0" / "21_validate_0082.ir"
    other = tmp_path / "21_validate_0082.ir"
    other.write_text(
        re.sub(r"(redistribution_op_)(\d+)", r"\g<1>42\2", src.read_text(encoding="utf-8")), encoding="utf-8"
    )
    before, after = read_ir(str(src)), read_ir(str(other))
    keys_before = sorted(node_key(before, k) for k in before.cnodes())
    keys_after = sorted(node_key(after, k) for k in after.cnodes())
    assert keys_before == keys_after
    assert any("redistribution_op_#AllGather_" in k[3] for k in keys_before)


def test_input_problems_are_on_the_page_and_the_exit_code_stays_2(tmp_path):
    src = (CORPUS / "s2_ffn_3d_reshape_blocks" / "21_validate_0076.ir").read_bytes()
    bad = tmp_path / "21_validate_0076.ir"
    bad.write_bytes(src[: len(src) // 2])
    result = CliRunner().invoke(main, [str(bad), "--format", "html", "-n"])
    assert result.exit_code == 2
    assert "<h2>Input problems</h2>" in result.stdout and "IR00" in result.stdout
    assert_self_contained(result.stdout)


def test_lint_page_charts_the_bytes_at_stake_per_layer(monkeypatch):
    # llama-recompute-modes: layer 0's blocked Mul (RC002), layer 2's Mul (RC002) and SiLU (RC001)
    monkeypatch.chdir(CORPUS)
    page = html_of("llama-recompute-modes")
    bars = re.findall(r"<title>(layer \d+|outside) activations at stake: ([\d.]+ \w+)</title>", page)
    assert bars == [("layer 0", "5.50 KiB"), ("layer 2", "11.0 KiB")]


def test_a_finding_naming_the_key_to_use_gets_a_snippet_one_dropping_a_key_does_not():
    # RC001 in llama-recompute-modes names the key to use; tag_unused and downcast findings say to drop one
    from irlint.rules.recompute.keys import keys_snippet

    assert keys_snippet(["feed_forward\\.activation\\.silu"]) == (
        "recompute_config:\n  select_recompute: ['feed_forward\\.activation\\.silu']"
    )
    report = lint([str(CORPUS / "llama-recompute-modes")], Config(group=False))
    snippets = {f.code: fix_of(f)[1] for f in report.findings}
    assert snippets["RC001"].startswith("recompute_config:\n  select_recompute: [")
    dropping = [f for f in report.findings if "drop select_recompute key" in f.hint or "Remove the tag" in f.hint]
    assert all(fix_of(f)[1] == "" for f in dropping)
