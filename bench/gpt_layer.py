"""A GPT-style decoder (LayerNorm, causal attention with dropout, GeLU 4h MLP with dropout; fp16)
trained for one step with MindSpore 2.10 on CPU in GRAPH_MODE, dumping IR (MS_DEV_SAVE_GRAPHS=1),
to compare irlint's kept-activation figure with Korthikanti et al. 2022.

One network holds one layer per recompute mode (``--modes none,selective,full``):
  none       nothing recomputed
  selective  the core attention (QK^T, scale, mask, softmax, dropout, x V) recomputed, Q/K/V kept:
             Cell.recompute() on that cell (the paper's "selective activation recomputation")
  full       Cell.recompute() on the whole layer

Usage (MindSpore is never a dependency of irlint; use the ms210 venv):
  MS_DEV_SAVE_GRAPHS=1 MS_DEV_SAVE_GRAPHS_PATH=/abs/out python bench/gpt_layer.py \
      --seq 16 --batch 2 --hidden 64 --heads 4 --modes none,selective,full
"""

import argparse

import mindspore as ms
import numpy as np
from mindspore import Parameter, Tensor, nn, ops

p = argparse.ArgumentParser()
p.add_argument("--seq", type=int, required=True)
p.add_argument("--batch", type=int, required=True)
p.add_argument("--hidden", type=int, required=True)
p.add_argument("--heads", type=int, required=True)
p.add_argument("--modes", default="none,selective,full")
args = p.parse_args()

ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
S, B, H, A = args.seq, args.batch, args.hidden, args.heads
F16 = ms.float16
np.random.seed(0)


def weight(shape):
    return Parameter(Tensor(np.random.normal(0, 0.02, shape), F16), name="weight")


class Linear(nn.Cell):
    """y = x W + b on (b*s, din): the 3-D activation is reshaped around the MatMul (views)."""

    def __init__(self, din, dout):
        super().__init__()
        self.weight = weight((din, dout))
        self.bias = Parameter(Tensor(np.zeros(dout), F16), name="bias")
        self.matmul = ops.MatMul()
        self.add = ops.Add()
        self.reshape = ops.Reshape()
        self.dout = dout

    def construct(self, x):
        b, s, d = x.shape
        y = self.add(self.matmul(self.reshape(x, (b * s, d)), self.weight), self.bias)
        return self.reshape(y, (b, s, self.dout))


class LayerNorm(nn.Cell):
    def __init__(self, dim):
        super().__init__()
        self.gamma = Parameter(Tensor(np.ones(dim), F16), name="gamma")
        self.beta = Parameter(Tensor(np.zeros(dim), F16), name="beta")
        self.norm = ops.LayerNorm(begin_norm_axis=-1, begin_params_axis=-1)

    def construct(self, x):
        return self.norm(x, self.gamma, self.beta)[0]


class Dropout(nn.Cell):
    def __init__(self, keep_prob=0.9):
        super().__init__()
        self.dropout = ops.Dropout(keep_prob=keep_prob)

    def construct(self, x):
        return self.dropout(x)[0]


class CoreAttention(nn.Cell):
    """softmax(Q K^T / sqrt(d) + mask) with dropout, times V."""

    def __init__(self):
        super().__init__()
        self.bmm_qk = ops.BatchMatMul(transpose_b=True)
        self.bmm_pv = ops.BatchMatMul()
        self.scale = ops.Mul()
        self.add_mask = ops.Add()
        self.softmax = ops.Softmax()
        self.attention_dropout = Dropout()
        self.factor = Tensor(1.0 / np.sqrt(H // A), F16)

    def construct(self, q, k, v, mask):
        score = self.add_mask(self.scale(self.bmm_qk(q, k), self.factor), mask)
        probs = self.attention_dropout(self.softmax(score))
        return self.bmm_pv(probs, v)


class Attention(nn.Cell):
    def __init__(self):
        super().__init__()
        self.wq, self.wk, self.wv, self.wo = (Linear(H, H) for _ in range(4))
        self.core_attention = CoreAttention()
        self.reshape = ops.Reshape()
        self.transpose = ops.Transpose()
        self.merger_head_transpose = ops.Transpose()

    def heads(self, x, b, s):
        return self.transpose(self.reshape(x, (b, s, A, H // A)), (0, 2, 1, 3))

    def construct(self, x, mask):
        b, s, _ = x.shape
        o = self.core_attention(
            self.heads(self.wq(x), b, s), self.heads(self.wk(x), b, s), self.heads(self.wv(x), b, s), mask
        )
        o = self.reshape(self.merger_head_transpose(o, (0, 2, 1, 3)), (b, s, H))
        return self.wo(o)


class MLP(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = Linear(H, 4 * H), Linear(4 * H, H)
        self.gelu = ops.GeLU()

    def construct(self, x):
        return self.fc2(self.gelu(self.fc1(x)))


class GPTLayer(nn.Cell):
    def __init__(self, mode):
        super().__init__()
        self.ln1, self.ln2 = LayerNorm(H), LayerNorm(H)
        self.attention = Attention()
        self.mlp = MLP()
        self.attention_dropout_out, self.mlp_dropout = Dropout(), Dropout()
        self.add, self.add2 = ops.Add(), ops.Add()
        if mode == "full":
            self.recompute()
        elif mode == "selective":
            self.attention.core_attention.recompute()
        elif mode != "none":
            raise SystemExit(f"unknown mode {mode}")

    def construct(self, x, mask):
        h = self.add(x, self.attention_dropout_out(self.attention(self.ln1(x), mask)))
        return self.add2(h, self.mlp_dropout(self.mlp(self.ln2(h))))


class GPT(nn.Cell):
    def __init__(self, modes):
        super().__init__()
        self.layers = nn.CellList([GPTLayer(m) for m in modes])
        self.square = ops.Square()
        self.mean = ops.ReduceMean()

    def construct(self, x, mask):
        for layer in self.layers:
            x = layer(x, mask)
        return self.mean(self.square(x))


class TrainStep(nn.Cell):
    def __init__(self, network):
        super().__init__()
        self.network = network
        self.grad_fn = ms.value_and_grad(network, None, network.trainable_params())

    def construct(self, *inputs):
        return self.grad_fn(*inputs)


net = GPT(args.modes.split(","))
x = Tensor(np.random.randn(B, S, H).astype(np.float16))
mask = Tensor(np.triu(np.full((S, S), -1e4, np.float16), 1))
loss, _ = TrainStep(net)(x, mask)
print("loss", loss)
