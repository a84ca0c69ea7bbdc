"""The compute account (irlint/accounts/compute.py) and ``irlint cost``, against the analytic count.

The model's configuration is read from the generator that made the dumps
(``fixtures/corpus-gen/llama_tiny.py``, a copy of ``shared/corpus-gen/llama_tiny.py``) and the
arguments its MANIFEST names, never from the dump: the dump only decides which ops run.
"""

from __future__ import annotations

import ast
import json
import shlex
from math import prod
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import CORPUS, SHARED_CORPUS, TESTS

from irlint.accounts.compute import account
from irlint.accounts.flops import op_flops
from irlint.model import weights_upstream
from irlint.read.reader import read_ir

GENERATOR = TESTS / "fixtures" / "corpus-gen" / "llama_tiny.py"
SHARED_GENERATOR = TESTS.parent.parent / "shared" / "corpus-gen" / "llama_tiny.py"
LLAMA_CASES = ("llama-recompute-modes", "llama-2d", "llama-cast", "full-folder-1layer")


def generator_config(made_by: str) -> SimpleNamespace:
    """b, s, h, f and the number of layers of a tiny Llama, from the generator's source and the
    command line in a MANIFEST's ``made_by``."""
    tree = ast.parse(GENERATOR.read_text())
    defaults: dict[str, object] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument" and node.args:
            flag = ast.literal_eval(node.args[0])
            for kw in node.keywords:
                if kw.arg == "default":
                    defaults[flag.lstrip("-")] = ast.literal_eval(kw.value)
    argv = shlex.split(made_by)[1:]
    given = {
        argv[i].lstrip("-"): argv[i + 1]
        for i in range(len(argv) - 1)
        if argv[i].startswith("--") and not argv[i + 1].startswith("--")
    }
    args = SimpleNamespace(
        hidden=int(given.get("hidden", defaults["hidden"])),
        seq=int(given.get("seq", defaults["seq"])),
        modes=given["modes"],
    )
    names = values = batch = None
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.targets[0], ast.Tuple)
            and [getattr(t, "id", "") for t in node.targets[0].elts][:4] == ["H", "HEADS", "FF", "SEQ"]
        ):
            names = [t.id for t in node.targets[0].elts]
            values = eval(compile(ast.Expression(node.value), "gen", "eval"), {"args": args})
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "tokens":
            shape = next(n for n in ast.walk(node.value) if isinstance(n, ast.Tuple))
            batch = ast.literal_eval(shape.elts[0])
    config = dict(zip(names, values))
    return SimpleNamespace(b=batch, s=config["SEQ"], h=config["H"], f=config["FF"], layers=len(args.modes.split(",")))


def transformer_forward_flops(c: SimpleNamespace) -> int:
    """q/k/v/o and the SwiGLU projections, plus the two attention products (QKᵀ and PV)."""
    return 2 * c.b * c.s * c.h * (4 * c.h + 3 * c.f) + 4 * c.b * c.s**2 * c.h


def _case(name: str) -> Path:
    return CORPUS / name if (CORPUS / name).exists() else SHARED_CORPUS / name


def test_the_generator_copy_is_the_generator():
    if SHARED_GENERATOR.exists():
        assert GENERATOR.read_text() == SHARED_GENERATOR.read_text()


@pytest.mark.parametrize("case", LLAMA_CASES)
def test_forward_matmul_flops_per_layer_are_the_transformer_count(case):
    manifest = json.loads((_case(case) / "MANIFEST.json").read_text())
    config = generator_config(manifest["made_by"])
    acc = account(read_ir(str(_case(case) / "21_validate_0076.ir")))
    per_layer: dict[str, dict[str, int]] = {}
    for o in acc.ops:
        if o.kind == "matmul" and o.layer.isdigit():
            row = per_layer.setdefault(o.layer, {"forward": 0, "backward": 0})
            if o.direction in row:
                row[o.direction] += o.flops
    expected = transformer_forward_flops(config)
    assert sorted(per_layer, key=int) == [str(i) for i in range(config.layers)]
    for layer, row in per_layer.items():
        assert row["forward"] == expected, (layer, row)
        assert row["backward"] == 2 * expected, (layer, row)  # dX and dW of every product


@pytest.mark.parametrize("case", LLAMA_CASES)
def test_a_recomputed_copy_costs_what_its_forward_op_costs(case):
    ir = read_ir(str(_case(case) / "21_validate_0076.ir"))
    acc = account(ir)
    copies = [o for o in acc.ops if o.direction == "recompute"]
    for o in copies:
        assert o.original is not None and o.flops == op_flops(ir, o.original), ir.describe(o.node)
        assert o.layer == next(p.layer for p in acc.ops if p.node == o.original)


def test_the_whole_layer_copy_re_spends_the_forward_minus_the_last_projection():
    # layer 3 of llama-recompute-modes is Cell.recompute()d: every product is copied but w2's
    # (its output is the layer's, kept for the next layer), so the copies cost forward - 2·b·s·f·h
    c = generator_config(json.loads((_case("llama-recompute-modes") / "MANIFEST.json").read_text())["made_by"])
    acc = account(read_ir(str(_case("llama-recompute-modes") / "21_validate_0076.ir")))
    layers = {r.layer: r for r in acc.layers()}
    assert layers["3"].recompute_flops == transformer_forward_flops(c) - 2 * c.b * c.s * c.f * c.h
    assert all(layers[str(i)].recompute_flops == 0 for i in range(3))  # select recompute copies no product
    assert acc.total("recompute") == layers["3"].recompute_flops
    assert acc.recompute_share == layers["3"].recompute_flops / acc.step_flops


def test_each_recompute_key_prices_the_bytes_the_memory_account_saves():
    from irlint.accounts.memory import account as memory_account

    ir = read_ir(str(_case("llama-recompute-modes") / "21_validate_0076.ir"))
    acc = account(ir)
    saved = {r.layer: r.recompute_saved_bytes for r in memory_account(ir).layers()}
    rows = {r.key: r for r in acc.recompute}
    assert sum(r.saved_bytes for r in acc.recompute) == sum(saved.values())
    whole = rows["cell (whole layer)"]
    assert whole.layers == ["3"] and whole.saved_bytes == saved["3"]
    assert whole.matrix_flops == next(r for r in acc.layers() if r.layer == "3").recompute_flops
    # the SiLU key: layers 0 and 1 (layer 2 tags a cell MindSpore ignores); one (s, f) fp16 tensor each
    c = generator_config(json.loads((_case("llama-recompute-modes") / "MANIFEST.json").read_text())["made_by"])
    silu = rows["feed_forward\\.activation\\.silu"]
    assert silu.layers == ["0", "1"] and silu.saved_bytes == 2 * c.b * c.s * c.f * 2
    assert silu.flops == 2 * c.b * c.s * c.f and silu.matrix_flops == 0


# --- parallel dumps: per-rank FLOPs are the single-device FLOPs over each op's sharding -------------

MF_DP2_MP4 = CORPUS / "par-mindformers-llama_dp2_mp4" / "rank_0" / "21_validate_0093.ir"
FFN_DP2_MP4 = SHARED_CORPUS / "par-fixed-ffn_megatron_dp2_mp4" / "rank_0"


def shards(strategy: tuple, transpose_b: bool) -> int:
    """How many ranks share one MatMul's products under ``in_strategy``: every split of the left
    input (batch, M and K: a K split leaves partial sums) times the right input's N split."""
    left, right = strategy
    return prod(left) * (right[-2] if transpose_b else right[-1])


def global_flops(origin_inputs: tuple, origin_output: tuple, transpose_a: bool) -> int:
    k = origin_inputs[0][-2] if transpose_a else origin_inputs[0][-1]
    return 2 * prod(origin_output) * k


def _transposes(ir, k) -> tuple[bool, bool]:
    ins = ir.producers(k)
    return ir[ins[2]]["value"], ir[ins[3]]["value"]


def test_per_rank_flops_are_the_single_device_flops_over_the_strategy_of_each_op():
    # MindFormers Llama, dp 2 x mp 4: each forward MatMul/BatchMatMul prints its strategy and the
    # single-device shapes (origin_input_shapes / origin_output_shape) beside its local ones
    ir = read_ir(str(MF_DP2_MP4))
    acc = account(ir)
    checked = 0
    for o in acc.ops:
        d = ir[o.node]
        strategy = (d.get("primitive_attrs") or {}).get("in_strategy")
        origin = (d.get("primal_attrs") or {}).get("origin_input_shapes")
        if o.kind != "matmul" or o.direction != "forward" or not strategy or not origin:
            continue
        ta, tb = _transposes(ir, o.node)
        single = global_flops(origin, d["primal_attrs"]["origin_output_shape"], ta)
        assert o.flops * shards(strategy, tb) == single, (ir.describe(o.node), strategy, o.flops, single)
        checked += 1
    # per layer: q, k, v, o, w1, w2, w3 and the two attention products (and the rotary bmm_swap pair)
    assert checked >= 2 * 9


@pytest.mark.skipif(not FFN_DP2_MP4.exists(), reason="../shared/corpus is not here")
def test_the_sharded_ffn_against_its_own_graph_before_the_parallel_pass():
    # step_parallel_begin holds the single-device graph with the strategies attached; validate the
    # local one: every forward MatMul's FLOPs there are its FLOPs here times its sharding
    before = read_ir(str(next(FFN_DP2_MP4.glob("step_parallel_begin_*.ir"))))
    after = read_ir(str(next(FFN_DP2_MP4.glob("21_validate_*.ir"))))

    def forward_matmuls(ir):  # by the weight each reads (the scopes before the pass name no Linear)
        return {
            next(n for n in weights_upstream(ir, o.node) if n.endswith(".weight")): o
            for o in account(ir, keys=False).ops
            if o.kind == "matmul" and o.direction == "forward"
        }

    single, local = forward_matmuls(before), forward_matmuls(after)
    assert sorted(single) == sorted(local) == ["net.w1.weight", "net.w2.weight", "net.w3.weight"]
    for cell, o in local.items():
        strategy = after[o.node]["primitive_attrs"]["in_strategy"]
        _, tb = _transposes(after, o.node)
        assert o.flops * shards(strategy, tb) == single[cell].flops, cell
    # w1, w3: ((2, 1), (4, 1)) -> 8 shards; w2: ((2, 4), (1, 4)) -> 8 shards, 4 of them partial sums
    assert {cell: single[cell].flops // local[cell].flops for cell in local} == {
        "net.w1.weight": 8,
        "net.w2.weight": 8,
        "net.w3.weight": 8,
    }


# --- irlint cost ------------------------------------------------------------------------------------

SCHEMA = TESTS / "fixtures" / "schemas" / "irlint-cost-1.json"


def run(*args):
    from click.testing import CliRunner

    from irlint.cli import main

    return CliRunner().invoke(main, ["cost", *map(str, args)])


@pytest.mark.parametrize(
    "args",
    [
        (CORPUS / "llama-recompute-modes",),
        (CORPUS / "par-mindformers-llama_dp2_mp4", "--mc2", "--layers", "8"),
        (CORPUS / "par-mindformers-llama_pp2_mp4", "--mc2"),
    ],
)
def test_cost_json_matches_its_schema(args):
    import jsonschema

    result = run(*args, "--format", "json")
    assert result.exit_code == 0, result.output
    jsonschema.validate(json.loads(result.output), json.loads(SCHEMA.read_text(encoding="utf-8")))


def test_cost_json_sums_and_the_text_table():
    data = json.loads(run(CORPUS / "llama-recompute-modes", "--format", "json").output)
    entry = data["files"][0]
    assert entry["step_flops"] == entry["forward_flops"] + entry["backward_flops"] + entry["recompute_flops"]
    assert entry["step_flops"] == sum(r["step_flops"] for r in entry["layers"])
    assert entry["communication"] is None  # one device: no collective
    text = run(CORPUS / "llama-recompute-modes").output
    # FLOPs in decimal units, three significant figures (the exact counts are in the JSON)
    assert "1.67 MFLOP" in text and "3.34 MFLOP" in text and "1.31 MFLOP" in text
    assert entry["recompute_flops"] == 1310720
    assert f"re-spends 1.31 MFLOP ({100 * 1310720 / entry['step_flops']:.1f}% of the step)" in text
    assert "cell (whole layer)" in text and "bytes saved" in text


def test_cost_shows_the_step_communication_of_irlint_comm_beside_the_flops():
    from click.testing import CliRunner

    from irlint.cli import main

    cost = json.loads(run(CORPUS / "par-mindformers-llama_dp2_mp4", "--format", "json").output)["files"][0]
    comm = json.loads(
        CliRunner().invoke(main, ["comm", "--format", "json", str(CORPUS / "par-mindformers-llama_dp2_mp4")]).output
    )["files"][0]
    assert cost["communication"]["received_bytes"] == comm["received_bytes"] > 0
    assert cost["communication"]["forward_bytes"] == comm["forward_bytes"]
    assert cost["communication"]["backward_bytes"] == comm["backward_bytes"]
    from irlint.units import human_bytes

    assert (
        f"communication {human_bytes(comm['received_bytes'])} received"
        in run(CORPUS / "par-mindformers-llama_dp2_mp4").output
    )


@pytest.mark.parametrize("args", [(), ("--mc2",), ("--layers", "8"), ("--mc2", "--layers", "8")])
def test_cost_html_page_with_and_without_the_options(tmp_path, args):
    out = tmp_path / "cost.html"
    result = run(CORPUS / "par-mindformers-llama_dp2_mp4", "--format", "html", "-o", out, *args)
    assert result.exit_code == 0, result.output
    page = out.read_text(encoding="utf-8")
    assert ("MC2 candidates under" in page) == ("--mc2" in args)
    assert ("Projected to 8 decoder layers" in page) == ("--layers" in args)
    assert "248,480 bytes received per rank and step" in page  # the step's communication


def test_cost_html_page(tmp_path):
    out = tmp_path / "cost.html"
    result = run(CORPUS / "llama-recompute-modes", "--format", "html", "-o", out, "--layers", "8")
    assert result.exit_code == 0 and result.output == ""
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!doctype html>") and "<svg" in page and "What each recompute buys" in page
    assert "Projected to 8 decoder layers" in page and "http" not in page.split("<body", 1)[1].replace(
        "http://www.w3.org/2000/svg", ""
    )


def test_cost_errors_are_one_line_and_exit_2(tmp_path):
    bad = tmp_path / "device.toml"
    bad.write_text("[peak_flops]\nFloat16 = 'fast'\n[bandwidth]\ndefault = 1e9\n")
    for args in (
        (CORPUS / "llama-2d", "--mc2", "--device", bad),
        (CORPUS / "llama-2d", "--device", tmp_path / "none.toml"),
        (tmp_path,),
    ):
        result = run(*args)
        assert result.exit_code == 2 and "Traceback" not in result.output, result.output
        assert result.output.startswith("irlint: ")


def test_a_lint_does_not_load_the_cost_command():
    import subprocess
    import sys

    code = (
        "import sys\nfrom click.testing import CliRunner\nfrom irlint.cli import main\n"
        f"CliRunner().invoke(main, ['-q', '--no-cache', {str(CORPUS / 'llama-2d')!r}])\n"
        "print([m for m in sys.modules if m.startswith(('irlint.cli.cost', 'irlint.accounts.compute', "
        "'irlint.accounts.mc2', 'irlint.accounts.projection', 'irlint.reporters.cost_html'))])"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.stdout.strip() == "[]", proc.stderr


def test_a_fix_is_priced_without_loading_the_compute_account():
    # RC002 prices its fix (extra.fix_cost) from the FLOPs of single ops: irlint.accounts.flops only
    import subprocess
    import sys

    code = (
        "import sys, json\nfrom click.testing import CliRunner\nfrom irlint.cli import main\n"
        f"out = CliRunner().invoke(main, ['--no-cache', '--format', 'json', {str(CORPUS / 'full-folder-1layer')!r}])\n"
        "priced = [f for f in json.loads(out.output)['findings'] if f['extra'].get('fix_cost')]\n"
        "print(len(priced), sorted(m for m in sys.modules if m.startswith('irlint.accounts.')))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    count, _, modules = proc.stdout.strip().partition(" ")
    assert int(count) > 0, proc.stderr
    assert "irlint.accounts.flops" in modules
    assert "irlint.accounts.compute" not in modules


# --- MC2 ------------------------------------------------------------------------------------------


def test_short_block_on_the_mc2_case_study_shape():
    # CANN's MC2 case (Matmul + AllReduce, M 4096, N 8192, K 4096, half): a = 4 GiB / (K·N) = 128,
    # b = ceil(6 MiB / (K·N/1024 + N)) = ceil(6291456 / 40960) = 154, c = 384 -> m0 = 128
    from irlint.accounts.mc2 import short_block

    assert -(-4 * 2**30 // (4096 * 8192)) == 128 and -(-6 * 2**20 // (4096 * 8192 // 1024 + 8192)) == 154
    assert short_block(4096, 4096, 8192) == 128
    # a square 8192 case: a = 64, b = ceil(6291456 / 73728) = 86 -> 64; a small K·N: c = 384 wins;
    # a short M caps it
    assert short_block(8192, 8192, 8192) == 64
    assert short_block(8192, 1024, 1024) == 384
    assert short_block(100, 1024, 1024) == 100


def test_long_blocks_with_a_fitted_cost_model():
    from irlint.accounts.mc2 import long_blocks

    # CostMM(m) = 1e-14·2·m·K·N + 5e-6 s, CostComm(m) = 1e-11·bytes + 20e-6 s; K = N = 1024, fp16 rows
    # of 2 KiB: 1.15·CostMM(m) = CostComm(m) at m = 14.25e-6 / 3.6e-9 = 3,958 rows -> 3,968 aligned,
    # 3 long blocks for the 8,064 rows after m0 = 128
    model = {"mm_per_flop": 1e-14, "mm_fixed": 5e-6, "comm_per_byte": 1e-11, "comm_fixed": 20e-6}
    k = n = 1024
    row_bytes = 2 * n
    slope = 1.15 * 1e-14 * 2 * k * n - 1e-11 * row_bytes
    rows = (20e-6 - 1.15 * 5e-6) / slope
    size, count = long_blocks(8192, k, n, row_bytes, 128, model)
    assert size % 128 == 0 and size - 128 < rows <= size
    assert count == -(-(8192 - 128) // size)
    assert (size, count) == (3968, 3)
    # a communication that no block size hides (the MatMul grows slower than the link): one long block
    assert long_blocks(8192, k, n, row_bytes, 128, {**model, "mm_per_flop": 1e-16}) == (8064, 1)


FFN_VALIDATE = SHARED_CORPUS / "par-fixed-ffn_megatron_dp2_mp4" / "rank_0" / "21_validate_0082.ir"


@pytest.mark.skipif(not FFN_VALIDATE.exists(), reason="../shared/corpus is not here")
def test_mc2_pairs_of_the_megatron_ffn_counted_by_hand():
    # rank 0's validate, read by hand: w2's MatMul %8 (line 166) -> AllReduce %9 over the 4 mp ranks
    # (the row-parallel sum); the weight gradients %19, %25, %30 -> the data-parallel AllReduces %20,
    # %26, %31 (ranks 0 and 4). %16 reads an AllReduce (not an AllGather): no pair. No AllGather.
    from irlint.accounts.mc2 import candidates, fusion_state

    ir = read_ir(str(FFN_VALIDATE))
    found = [(ir[c.matmul]["id"], ir[c.collective]["id"], c.pattern, c.direction, c.group_size) for c in candidates(ir)]
    assert found == [
        ("%8", "%9", "MatmulAllReduce", "forward", 4),
        ("%19", "%20", "MatmulAllReduce", "backward", 2),
        ("%25", "%26", "MatmulAllReduce", "backward", 2),
        ("%30", "%31", "MatmulAllReduce", "backward", 2),
    ]
    first = candidates(ir)[0]
    # x (64, 32) -> (32, 32) per rank after dp 2; w2 (32, 64) split (1, 4) -> K 16; output (32, 32) fp32
    assert (first.m, first.k, first.n, first.dtype) == (32, 16, 32, "Float32")
    assert first.bytes == 2 * 3 * 32 * 32 * 4 // 4 and first.flops == 2 * 32 * 16 * 32
    assert "Float32 (float16 or bfloat16 only)" in first.not_fusible
    assert fusion_state(ir) == "unknown"


def test_mc2_pairs_of_the_mindformers_llama_counted_by_hand():
    # forward: the row-parallel wo and w2 of each of the 2 layers -> the mp AllReduce; backward: the
    # weight gradient of each of the 7 Linears of each layer and of lm_head -> its data-parallel
    # AllReduce (lm_head's over all 8 ranks)
    from irlint.accounts.mc2 import candidates

    ir = read_ir(str(MF_DP2_MP4))
    found = candidates(ir)
    weight = lambda c: (
        (ir[c.matmul].get("primitive_attrs") or {}).get("mirror_user_id")
        or (ir[ir.forward_of(c.matmul)].get("primitive_attrs") or {}).get("mirror_user_id")
    )  # noqa: E731
    forward = sorted(weight(c) for c in found if c.direction == "forward")
    backward = sorted(weight(c) for c in found if c.direction == "backward")
    assert forward == sorted(
        f"model.layers.{i}.{w}.weight" for i in (0, 1) for w in ("attention.wo", "feed_forward.w2")
    )
    assert backward == sorted(
        ["lm_head.weight"]
        + [
            f"model.layers.{i}.{w}.weight"
            for i in (0, 1)
            for w in (
                "attention.wq",
                "attention.wk",
                "attention.wv",
                "attention.wo",
                "feed_forward.w1",
                "feed_forward.w2",
                "feed_forward.w3",
            )
        ]
    )
    assert all(c.pattern == "MatmulAllReduce" for c in found)
    assert [c.group_size for c in found if weight(c) == "lm_head.weight"] == [8]


def test_the_device_profile_decides_the_bound(tmp_path):
    from irlint.accounts.mc2 import candidates, load_profile

    ir = read_ir(str(MF_DP2_MP4))
    slow_link = load_profile("[peak_flops]\nFloat32 = 1e15\n[bandwidth]\ndefault = 1e3\n")
    fast_link = load_profile("[peak_flops]\nFloat32 = 1e3\n[bandwidth]\ndefault = 1e15\n")
    assert {c.bound for c in candidates(ir, slow_link)} == {"communication"}
    assert {c.bound for c in candidates(ir, fast_link)} == {"compute"}
    c = candidates(ir, slow_link)[0]
    assert c.matmul_seconds == c.flops / 1e15 and c.comm_seconds == c.bytes / 1e3
    assert abs(c.balance_k - c.k * c.comm_seconds / c.matmul_seconds) < 1e-9


# --- full-depth projection --------------------------------------------------------------------------

GEN = TESTS.parent / "bench" / "gen_dump.py"


@pytest.fixture(scope="module")
def depths(tmp_path_factory):
    """The tiny Llama folder made 2 and 80 layers deep by bench/gen_dump.py (validate only)."""
    import subprocess
    import sys

    out = {}
    for n in (2, 80):
        folder = tmp_path_factory.mktemp(f"layers{n}") / "graph"
        subprocess.run(
            [
                sys.executable,
                str(GEN),
                "--input",
                str(CORPUS / "full-folder-1layer"),
                "--layers",
                str(n),
                "--files",
                "*validate*",
                "--out",
                str(folder),
                "--jobs",
                "1",
            ],
            check=True,
            capture_output=True,
            timeout=300,
        )
        out[n] = folder
    return out


def _json(*args) -> dict:
    from click.testing import CliRunner

    from irlint.cli import main

    result = CliRunner().invoke(main, [*map(str, args), "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)["files"][0]


def test_cost_projected_from_2_layers_is_the_80_layer_dump_read_directly(depths):
    projected = _json("cost", depths[2], "--layers", "80")["projected"]
    direct = _json("cost", depths[80])
    assert projected["projected"] is True and projected["layers"] == 80 and projected["dumped_layers"] == 2
    layers = [r for r in direct["layers"] if r["layer"].isdigit()]
    assert len(layers) == 80
    for block in projected["blocks"]:
        for r in layers[int(block["layers"].split("-")[0]) : int(block["layers"].split("-")[-1]) + 1]:
            assert all(
                r[f] == block[f]
                for f in (
                    "forward_flops",
                    "backward_flops",
                    "recompute_flops",
                    "forward_elementwise_flops",
                    "recompute_elementwise_flops",
                )
            )
    for f in ("forward_flops", "backward_flops", "recompute_flops", "step_flops"):
        assert projected["totals"][f] == direct[f], f
    # element-wise backward ops outside the layers (gradient sums of the residual stream and of the
    # weights, placed by their printed scope) grow with the depth: the one-time part is not one-time there
    outside = next(r for r in direct["layers"] if r["layer"] == "outside")
    assert projected["once"]["forward_elementwise_flops"] == outside["forward_elementwise_flops"]
    assert projected["totals"]["backward_elementwise_flops"] - projected["once"]["backward_elementwise_flops"] == sum(
        r["backward_elementwise_flops"] for r in layers
    )


def test_memory_projected_from_2_layers_is_the_80_layer_dump_read_directly(depths):
    projected = _json("memory", depths[2], "--layers", "80")["projected"]
    direct = _json("memory", depths[80])
    assert projected["totals"]["total_kept_bytes"] == direct["total_kept_bytes"]
    assert projected["totals"]["recompute_saved_bytes"] == sum(r["recompute_saved_bytes"] for r in direct["layers"])
    text = cli_output("memory", depths[2], "--layers", "80")
    assert "Projected to 80 decoder layers from 2 dumped" in text and "(projected)" in text


def cli_output(*args) -> str:
    from click.testing import CliRunner

    from irlint.cli import main

    return CliRunner().invoke(main, [*map(str, args)]).output


def test_projection_keeps_the_order_and_proportion_of_dumped_layers():
    from irlint.accounts.projection import layer_blocks, project

    assert layer_blocks(["0", "1", "2"], 8) == [(0, 2, "0"), (3, 5, "1"), (6, 7, "2")]
    rows = [{"layer": "0", "x": 1}, {"layer": "1", "x": 10}, {"layer": "outside", "x": 100}]
    p = project(rows, ("x",), 5)
    assert [(b["layers"], b["count"]) for b in p["blocks"]] == [("0-2", 3), ("3-4", 2)]
    assert p["totals"]["x"] == 3 * 1 + 2 * 10 + 100
    assert project([{"layer": "outside", "x": 1}], ("x",), 5) is None


def test_the_documented_example_is_the_output(monkeypatch):
    readme = (TESTS.parent / "docs" / "accounts.md").read_text(encoding="utf-8")
    block = readme.split("$ irlint cost llama-recompute-modes\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(CORPUS)
    out = run("llama-recompute-modes").output
    assert out.startswith(block)


def test_diff_shows_the_flops_and_what_recompute_re_spends_before_and_after():
    # s2 -> s3: the FeedForward (x (2, 8, 32), hidden 64) gets its SiLU and Mul recomputed: the
    # products are unchanged, the copies re-spend one operation per element of each (16, 64) tensor
    from click.testing import CliRunner

    from irlint.cli import main

    args = ["diff", str(CORPUS / "s2_ffn_3d_reshape_blocks"), str(CORPUS / "s3_ffn_3d_reshape_fixed")]
    out = json.loads(CliRunner().invoke(main, [*args, "--format", "json"]).output)
    compute = out["ranks"][0]["compute"]
    one = 2 * 16 * 32 * 64  # one (16, 32) x (32, 64) product
    # forward w1, w3, w2; backward dX and dW of each, but no dX of w1 and w3 (x is a graph input)
    assert compute["before_step_flops"] == compute["after_step_flops"] == 3 * one + 6 * one - 2 * one
    assert compute["before_recompute_elementwise_flops"] == 0
    assert compute["after_recompute_elementwise_flops"] == 2 * 16 * 64
    text = CliRunner().invoke(main, args).output
    assert "matrix FLOPs per step: 459 kFLOP -> 459 kFLOP (0)" in text and "element-wise 0 FLOP -> 2.05 kFLOP" in text


# --- the formulas of the ops the tiny dumps lack: flash attention, convolutions, transposes ---------

OPS_IR = """# IR entry: @1_main_1
# Params:
%para1_q: <Tensor[Float16], (2, 16, 64)> : [2, 16, 64]
%para2_k: <Tensor[Float16], (2, 32, 64)> : [2, 32, 64]
%para3_x: <Tensor[Float32], (8, 3, 10, 10)> : [8, 3, 10, 10]
%para4_w: <Ref[Tensor[Float32]], (5, 3, 3, 3), ref_key=w, is_parameter>  :  has_default
%para5_a: <Tensor[Float16], (12, 7)> : [12, 7]

subgraph @1_main_1() {
  %0(CNode_1) = FlashAttentionScore(%para1_q, %para2_k, %para2_k) primitive_attrs: {head_num: I64(4), input_layout: "BSH"}
      : (<Tensor[Float16], (2, 16, 64)>, <Tensor[Float16], (2, 32, 64)>, <Tensor[Float16], (2, 32, 64)>) -> (<Tensor[Float16], (2, 16, 64)>)
      # Fullname with scope: (Default/FlashAttentionScore-op0)
  %1(CNode_2) = FlashAttentionScoreGrad(%para1_q, %para2_k, %para2_k, %0) primitive_attrs: {head_num: I64(4), input_layout: "BSH"}
      : (<Tensor[Float16], (2, 16, 64)>, <Tensor[Float16], (2, 32, 64)>, <Tensor[Float16], (2, 32, 64)>, <Tensor[Float16], (2, 16, 64)>) -> (<Tensor[Float16], (2, 16, 64)>)
      # Fullname with scope: (Default/FlashAttentionScoreGrad-op0)
  %2(CNode_3) = Conv2D(%para3_x, %para4_w)
      : (<Tensor[Float32], (8, 3, 10, 10)>, <Tensor[Float32], (5, 3, 3, 3)>) -> (<Tensor[Float32], (8, 5, 8, 8)>)
      # Fullname with scope: (Default/Conv2D-op0)
  %3(CNode_4) = Conv2DBackpropFilter(%2, %para3_x, (5, 3, 3, 3))
      : (<Tensor[Float32], (8, 5, 8, 8)>, <Tensor[Float32], (8, 3, 10, 10)>, <Tuple[Int64*4], TupleShape(NoShape, NoShape, NoShape, NoShape)>) -> (<Tensor[Float32], (5, 3, 3, 3)>)
      # Fullname with scope: (Default/Conv2DBackpropFilter-op0)
  %4(CNode_5) = PrimFunc_MatMul(%para5_a, %para5_a, Bool(1), Bool(0))
      : (<Tensor[Float16], (12, 7)>, <Tensor[Float16], (12, 7)>, <Bool, NoShape>, <Bool, NoShape>) -> (<Tensor[Float16], (7, 7)>)
      # Fullname with scope: (Default/MatMul-op0)
  %5(CNode_6) = PrimFunc_Add(%4, %4)
      : (<Tensor[Float16], (7, 7)>, <Tensor[Float16], (7, 7)>) -> (<Tensor[Float16], (7, 7)>)
      # Fullname with scope: (Default/Add-op0)
  %6(CNode_7) = PrimFunc_Reshape(%5, (49))
      : (<Tensor[Float16], (7, 7)>, <Tuple[Int64], TupleShape(NoShape)>) -> (<Tensor[Float16], (49)>)
      # Fullname with scope: (Default/Reshape-op0)
  %7(CNode_8) = MakeTuple(%0, %1, %3, %6)
      : (<Tensor[Float16], (2, 16, 64)>, <Tensor[Float16], (2, 16, 64)>, <Tensor[Float32], (5, 3, 3, 3)>, <Tensor[Float16], (49)>) -> (<Tuple[Tensor[Float16]*4], TupleShape((2, 16, 64), (2, 16, 64), (5, 3, 3, 3), (49))>)
      # Fullname with scope: (Default/MakeTuple-op0)
  Return(%7)
      : (<Tuple[Tensor[Float16]*4], TupleShape((2, 16, 64), (2, 16, 64), (5, 3, 3, 3), (49))>)
      # Fullname with scope: (Default/Return-op0)
}
"""


def test_flops_of_attention_convolution_transposed_matmul_and_element_wise_ops(ir_from_text):
    ir = ir_from_text(OPS_IR)
    flops = {ir[k]["op"]: op_flops(ir, k) for k in ir.cnodes()}
    b, sq, skv, h = 2, 16, 32, 64
    assert flops["FlashAttentionScore"] == 4 * b * sq * skv * h  # QKᵀ and PV
    assert flops["FlashAttentionScoreGrad"] == 2 * 4 * b * sq * skv * h
    assert flops["Conv2D"] == 2 * (8 * 5 * 8 * 8) * (3 * 3 * 3)  # every output: 27 multiply-adds
    assert flops["Conv2DBackpropFilter"] == flops["Conv2D"]
    assert flops["MatMul"] == 2 * 7 * 12 * 7  # transpose_a: (12, 7)ᵀ x (12, 7)
    assert flops["Add"] == 7 * 7 and flops["Reshape"] == 0 and flops["MakeTuple"] == 0
    kinds = {ir[o.node]["op"]: o.kind for o in account(ir).ops}
    assert kinds == {
        "FlashAttentionScore": "attention",
        "FlashAttentionScoreGrad": "attention",
        "Conv2D": "conv",
        "Conv2DBackpropFilter": "conv",
        "MatMul": "matmul",
        "Add": "elementwise",
    }


def test_what_a_dump_can_tell_of_mc2_fusion(ir_from_text):
    from irlint.accounts.mc2 import fusion_state

    folder = CORPUS / "llama-recompute-modes"
    assert fusion_state(read_ir(str(folder / "21_validate_0076.ir"))) == "unknown"  # the backend fuses later
    assert fusion_state(read_ir(str(folder / "graph_build_0_0094.ir"))) == "not fused"
    fused = OPS_IR.replace("= PrimFunc_MatMul(", "= MatmulAllReduce(")
    assert fusion_state(ir_from_text(fused, "graph_build_0_0094.ir")) == "fused"


def test_pipeline_stages_share_the_projected_depth():
    from irlint.accounts.projection import stage_depths

    # two stages of one layer each, four ranks each: 80 layers are 40 per stage, the second from 40
    sets = [{"0"}] * 4 + [{"1"}] * 4
    assert stage_depths(sets, 80) == [(40, 0)] * 4 + [(40, 40)] * 4
    assert stage_depths([{"0", "1"}, {"2"}], 7) == [(5, 0), (2, 5)]
    assert stage_depths([{"0", "1"}, {"0", "1"}], 7) == [(7, 0), (7, 0)]  # dp/mp ranks: the whole depth
    # the MindFormers Llama over 2 pipeline stages (rank 0: layer 0; rank 4: layer 1 and the head)
    files = _json_files("cost", CORPUS / "par-mindformers-llama_pp2_mp4", "--layers", "80")
    blocks = {f["rank"]: [(b["layers"], b["from_layer"]) for b in f["projected"]["blocks"]] for f in files}
    assert blocks == {0: [("0-39", "0")], 4: [("40-79", "1")]}
    assert all(f["projected"]["layers"] == 40 for f in files)


def _json_files(*args) -> list[dict]:
    from click.testing import CliRunner

    from irlint.cli import main

    result = CliRunner().invoke(main, [*map(str, args), "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)["files"]


def test_flops_for_a_person_three_significant_figures_in_decimal_units():
    from irlint.units import human_flops

    assert [human_flops(n) for n in (0, 999, 1000, 1_671_168, 999_999, 2_500_000_000_000, -40_960, None)] == [
        "0 FLOP",
        "999 FLOP",
        "1.00 kFLOP",
        "1.67 MFLOP",
        "1.00 MFLOP",
        "2.50 TFLOP",
        "-41.0 kFLOP",
        "? FLOP",
    ]


FA_210_IR = """# IR entry: @1_main_1
# Params:
%para1_q: <Tensor[Float16], (2, 4, 128, 64)> : [2, 4, 128, 64]
%para2_k: <Tensor[Float16], (2, 4, 256, 64)> : [2, 4, 256, 64]
%para3_dy: <Tensor[Float16], (2, 4, 128, 64)> : [2, 4, 128, 64]

subgraph @1_main_1() {
  %0(CNode_1) = PrimFunc_FlashAttentionScore(%para1_q, %para2_k, %para2_k, None, None, None, None, None, None, None, I64(4), F32(1), F32(0.125), I64(2147483647), I64(0), I64(0), I64(LAYOUT), I64(0)) {instance name: flash_attention}
      : (<Tensor[Float16], (2, 4, 128, 64)>, <Tensor[Float16], (2, 4, 256, 64)>, <Tensor[Float16], (2, 4, 256, 64)>) -> (<Tensor[Float16], (2, 4, 128, 64)>)
      # Fullname with scope: (Default/FlashAttentionScore-op0)
  %1(CNode_2) = PrimFunc_FlashAttentionScoreGrad(%para1_q, %para2_k, %para2_k, %para3_dy, None, None, None, None, None, None, None, None, None, None, None, I64(4), F32(1), F32(0.125), I64(2147483647), I64(0), I64(0), I64(LAYOUT), I64(0))
      : (<Tensor[Float16], (2, 4, 128, 64)>, <Tensor[Float16], (2, 4, 256, 64)>, <Tensor[Float16], (2, 4, 256, 64)>, <Tensor[Float16], (2, 4, 128, 64)>) -> (<Tensor[Float16], (2, 4, 128, 64)>)
      # Fullname with scope: (Default/Gradients/FlashAttentionScoreGrad-op0)
  %2(CNode_3) = MakeTuple(%0, %1)
      : (<Tensor[Float16], (2, 4, 128, 64)>, <Tensor[Float16], (2, 4, 128, 64)>) -> (<Tuple[Tensor[Float16]*2], TupleShape((2, 4, 128, 64), (2, 4, 128, 64))>)
      # Fullname with scope: (Default/MakeTuple-op0)
  Return(%2)
      : (<Tuple[Tensor[Float16]*2], TupleShape((2, 4, 128, 64), (2, 4, 128, 64))>)
      # Fullname with scope: (Default/Return-op0)
}
"""


def test_flash_attention_reads_the_positional_layout_of_mindspore_2_3_and_later(ir_from_text):
    # 2.10 passes input_layout as the enum FASInputLayoutMode at a fixed position (BNSD = 1): the
    # sequence is axis 2, not the head count at axis 1 of BSH
    ir = ir_from_text(FA_210_IR.replace("LAYOUT", "1"))
    flops = {ir[k]["op"]: op_flops(ir, k) for k in ir.cnodes()}
    b, n, sq, skv, d = 2, 4, 128, 256, 64
    assert flops["FlashAttentionScore"] == 4 * b * n * sq * skv * d
    assert flops["FlashAttentionScoreGrad"] == 2 * 4 * b * n * sq * skv * d
    # BSND (3): the sequence is axis 1 of the same (2, 4, ...) shapes
    ir = ir_from_text(FA_210_IR.replace("LAYOUT", "3"))
    assert {ir[k]["op"]: op_flops(ir, k) for k in ir.cnodes()}["FlashAttentionScore"] == 4 * b * n * sq * 4 * d


SHARED_DRYRUN = TESTS.parent.parent / "shared" / "dryrun" / "pp4"


@pytest.mark.skipif(not SHARED_DRYRUN.is_dir(), reason="needs ../shared/dryrun")
def test_flash_attention_of_a_real_2_10_pipeline_dump():
    ir = read_ir(str(next((SHARED_DRYRUN / "rank_0").glob("*_validate_*.ir"))))
    forward = [k for k in ir.cnodes() if ir[k]["op"] == "FlashAttentionScore"]
    assert forward
    for k in forward:
        b, n, s, d = ir[k]["in_types"][0].shape  # BNSD, q and k of one length
        assert op_flops(ir, k) == 4 * b * n * s * s * d
