"""Every fast path equals its plain, paper-faithful path to rounding: the model's loss and every
gradient, each method's bias table against its dense bias, ALiBi while decoding with a KV cache,
Shaw et al.'s relative logits against their gathers, ALiBi's extra coordinates through SDPA."""

import math

import pytest
import torch

from pe_book import alibi, bias_attention, positions
from pe_book.model import CharLM, ModelConfig
from pe_book.relative import ShawAttention, T5Bias

SMALL = {"vocab_size": 13, "dim": 16, "n_layers": 2, "n_heads": 4, "train_len": 40}


def random(*shape, seed=0, dtype=torch.float64):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def loss_and_grads(position, fused, seq_len=37):
    torch.manual_seed(0)  # the same weights for both paths
    model = CharLM(ModelConfig(position, fused=fused, **SMALL)).double()
    tokens = torch.randint(0, 13, (3, seq_len + 1), generator=torch.Generator().manual_seed(1))
    torch.manual_seed(2)  # randomized positions draw the same sample
    loss = model.loss(tokens[:, :-1], tokens[:, 1:])
    loss.backward()
    return loss.detach(), {n: p.grad for n, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("position", positions.names())
def test_the_fast_model_equals_the_plain_model_gradients_included(position):
    loss, grads = loss_and_grads(position, fused=True)
    plain_loss, plain_grads = loss_and_grads(position, fused=False)
    torch.testing.assert_close(loss, plain_loss, atol=1e-12, rtol=1e-11)
    assert grads.keys() == plain_grads.keys()
    for name in grads:
        torch.testing.assert_close(grads[name], plain_grads[name], atol=1e-11, rtol=1e-9)


def config(position, **changes):
    return ModelConfig(position, **(SMALL | changes))


@pytest.mark.parametrize("position", ["alibi", "t5", "kerple", "fire"])
@pytest.mark.parametrize("k_len", [1, 9, 40, 150])
def test_the_bias_table_is_the_dense_bias_on_and_below_the_diagonal(position, k_len):
    method = positions.build(config(position, train_len=40, t5_max_distance=20))
    table = method.relative_bias(k_len, torch.float64)
    if position == "fire" and k_len - 1 > 40:  # past FIRE's threshold the bias depends on m
        assert table is None
        return
    dense = method.score_bias(k_len, k_len, torch.float64)  # (H, L, L)
    from_table = bias_attention.dense_bias(table, k_len, k_len)
    seen = torch.ones(k_len, k_len, dtype=torch.bool).tril()
    torch.testing.assert_close(from_table[:, seen], dense[:, seen], atol=1e-6, rtol=1e-6)


def test_t5_table_stops_where_every_farther_offset_shares_the_last_bucket():
    bias = T5Bias(2, bidirectional=False, max_distance=128)
    assert bias.table(1000).shape == (2, 114)  # offsets 0..113; 113 opens the last bucket
    assert bias.table(50).shape == (2, 50)
    assert T5Bias(2).table(10) is None  # bidirectional: no causal table


def test_t5_table_receives_the_gradient_of_its_buckets():
    """gradcheck through the kernel into T5's learned (bucket, head) values."""
    bias = T5Bias(2, bidirectional=False, num_buckets=8, max_distance=12).double()
    q, k, v = (random(1, 2, 15, 3, seed=s) for s in range(3))

    class Table(torch.nn.Module):  # T5Bias.table as a forward call, for functional_call
        def __init__(self):
            super().__init__()
            self.t5 = bias

        def forward(self):
            return self.t5.table(15)

    def out(weight):
        table = torch.func.functional_call(Table(), {"t5.bias.weight": weight}, ())
        return bias_attention.bias_attention(q, k, v, table[None, :, None, :])

    assert torch.autograd.gradcheck(out, (random(8, 2, seed=4).requires_grad_(),))


@pytest.mark.parametrize(("q_len", "k_len"), [(64, 64), (1, 130), (5, 130)])
def test_fused_alibi_while_decoding_with_a_cache(q_len, k_len):
    """Queries at the end of the keys (KV cache): forward and backward equal the bias tensor."""
    q, k, v = random(2, 4, q_len, 8), random(2, 4, k_len, 8, seed=1), random(2, 4, k_len, 8, seed=2)
    slopes = alibi.alibi_slopes(4)
    grads = []
    for fused in (True, False):
        leaves = [t.clone().requires_grad_() for t in (q, k, v)]
        out = alibi.alibi_attention(*leaves, slopes, fused=fused)
        (out * random(*out.shape, seed=3)).sum().backward()
        grads.append([out.detach()] + [t.grad for t in leaves])
    for got, want in zip(*grads, strict=True):
        torch.testing.assert_close(got, want, atol=1e-12, rtol=1e-10)


def shaw_pair(values):
    torch.manual_seed(0)
    fast = ShawAttention(16, 2, 3, values=values).double()
    plain = ShawAttention(16, 2, 3, values=values, fused=False).double()
    plain.load_state_dict(fast.state_dict())
    return fast, plain


@pytest.mark.parametrize("values", [True, False])
@pytest.mark.parametrize("seq_len", [1, 4, 30])
def test_shaw_relative_logits_equal_the_gathered_embeddings(values, seq_len):
    fast, plain = shaw_pair(values)
    x = random(2, seq_len, 16)
    outs = []
    for layer in (fast, plain):
        leaf = x.clone().requires_grad_()
        out = layer(leaf, causal=True)
        (out * random(*out.shape, seed=5)).sum().backward()
        grads = [p.grad for p in layer.parameters()]
        outs.append([out.detach(), leaf.grad, *grads])
    for got, want in zip(*outs, strict=True):
        torch.testing.assert_close(got, want, atol=1e-12, rtol=1e-10)


def test_shaw_fast_path_gradcheck():
    fast, _ = shaw_pair(True)
    x = random(1, 6, 16).requires_grad_()
    assert torch.autograd.gradcheck(lambda t: fast(t, causal=True), (x,))


def test_shaw_keeps_the_paper_path_where_the_kernel_does_not_apply():
    """Bidirectional attention and given positions: the gathers, as before."""
    fast, plain = shaw_pair(True)
    x = random(2, 9, 16)
    torch.testing.assert_close(fast(x), plain(x))
    shifted = torch.arange(9) + 100
    torch.testing.assert_close(fast(x, shifted, causal=True), plain(x, causal=True))


def test_extra_coordinates_equal_alibi_when_they_come_first():
    """s_h n - s_h m added before q · k keeps float32 logits small: the error stays that of the
    plain path, while the same coordinates placed last are rounded at the size of s_h m."""
    seq_len, heads = 2048, 4
    q, k, v = (random(1, heads, seq_len, 32, seed=s, dtype=torch.float32) for s in range(3))
    slopes = alibi.alibi_slopes(heads)
    exact = alibi.alibi_attention(q.double(), k.double(), v.double(), slopes)
    first = alibi.extra_coordinate_attention(q, k, v, slopes)
    plain = alibi.alibi_attention(q, k, v, slopes)
    s = slopes.float()[:, None]
    position = torch.arange(seq_len, dtype=torch.float32)
    ones = torch.ones(heads, seq_len)
    q_last = torch.cat((q / math.sqrt(32), torch.stack((ones, -s * position), -1)[None]), -1)
    k_last = torch.cat((k, torch.stack((s * position, ones), -1)[None]), -1)
    last = torch.nn.functional.scaled_dot_product_attention(
        q_last, k_last, torch.nn.functional.pad(v, (0, 2)), is_causal=True, scale=1.0
    )[..., :32]
    error = {name: (out.double() - exact).abs().max().item()
             for name, out in (("first", first), ("plain", plain), ("last", last))}  # fmt: skip
    assert error["first"] < 3 * error["plain"] + 1e-6, error
    assert error["last"] > 10 * error["first"], error


@pytest.mark.parametrize(("seq_len", "chunk"), [(5, 8), (16, 8), (21, 8), (9, 1)])
def test_chunked_attention_equals_the_chunked_mask(seq_len, chunk):
    """iRoPE's fast path: chunks through the causal kernel, with or without padding."""
    from pe_book.attention import attention
    from pe_book.irope import chunked_attention, chunked_causal_mask

    q, k, v = (random(2, 3, seq_len, 4, seed=s) for s in range(3))
    allowed = chunked_causal_mask(seq_len, chunk)
    mask = torch.zeros(seq_len, seq_len, dtype=torch.float64).masked_fill(~allowed, float("-inf"))
    torch.testing.assert_close(
        chunked_attention(q, k, v, chunk), attention(q, k, v, bias=mask), atol=1e-12, rtol=1e-10
    )


def test_the_model_with_irope_past_its_chunk_takes_the_chunks():
    """Longer than train_len: several chunks; the fast model equals the masked one."""
    grads = {}
    for fused in (True, False):
        torch.manual_seed(0)
        model = CharLM(ModelConfig("irope", fused=fused, **(SMALL | {"train_len": 8}))).double()
        tokens = torch.randint(0, 13, (2, 22), generator=torch.Generator().manual_seed(1))
        loss = model.loss(tokens[:, :-1], tokens[:, 1:])
        loss.backward()
        grads[fused] = [loss.detach()] + [p.grad for p in model.parameters()]
    for got, want in zip(grads[True], grads[False], strict=True):
        torch.testing.assert_close(got, want, atol=1e-12, rtol=1e-10)


def test_the_methods_with_a_fast_path_say_so_and_the_others_have_one_path():
    """``fast_path`` names what differs; without one, fused=False changes nothing at all."""
    with_fast = {p for p in positions.names() if positions.build(config(p)).fast_path}
    assert with_fast == {"shaw", "t5", "rope", "alibi", "kerple", "fire", "xpos", "p_rope",
                         "randomized_rope", "irope"}  # fmt: skip
    for position in set(positions.names()) - with_fast:
        loss, grads = loss_and_grads(position, fused=True)
        plain_loss, plain_grads = loss_and_grads(position, fused=False)
        assert torch.equal(loss, plain_loss)
        assert all(torch.equal(grads[name], plain_grads[name]) for name in grads)
