"""Bad input to chapter 10's modules: a ValueError or TypeError that names the argument.

Each case below once let torch's RuntimeError (or an AttributeError, NotImplementedError)
through, named an argument the caller never passed, or was accepted and gave a wrong
result (NaN, a silent dtype). Found by calling every public function and class of
nope, kerple, fire, xpos, p_rope, cope, randomized, mrope, irope, mla and sinks with
mismatched shapes, head counts and dtypes, lists, numpy arrays and non-finite values
(issue 25, item 4). Each ``match`` names the argument and says what is accepted.
"""

import math

import numpy as np
import pytest
import torch
from torch import nn

from pe_book import cope, fire, irope, mla, mrope, nope, p_rope, randomized, sinks, xpos
from pe_book._validate import (
    validate_broadcast,
    validate_dtype,
    validate_finite,
    validate_mask,
    validate_pairs,
    validate_qkv,
    validate_tensor,
)
from pe_book.attention import MultiHeadSelfAttention, attention
from pe_book.model import CharLM
from pe_book.positions import ModelConfig, build


def randn(*shape, dtype=torch.float32):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(0), dtype=dtype)


def with_nan(x, value=math.nan):
    x = x.clone()
    x.view(-1)[0] = value
    return x


CAUSAL5 = torch.ones(5, 5, dtype=torch.bool).tril()
TABLE = randn(4, 4)  # CoPE's e[0..3] for d_head = 4
IDS = mrope.mrope_position_ids([("text", 2), ("image", 1, 2, 2)])  # (3, 6)


def q4(*lead, length=5, dim=4, dtype=torch.float32):
    return randn(*lead, length, dim, dtype=dtype)


def mla_layer():
    return mla.MLAAttention(8, 2, 4, 3, 2)  # dim, n_heads, d_latent, d_head, d_rope


def irope_layer(uses_rope=True):
    return irope.IRopeAttention(8, 2, uses_rope)


def irope_rope(**change):
    kwargs = {"rotate": lambda q, k: (q, k), "chunk_mask": irope.chunked_causal_mask(5, 2)}
    return irope_layer()(randn(2, 5, 8), **{**kwargs, **change})


def randomized_turn(q, k):
    config = ModelConfig(
        "randomized_rope", vocab_size=11, dim=16, n_heads=2, train_len=8, max_len=16
    )
    return build(config).layer_inputs(5, torch.float32)["rotate"](q, k)


CASES = [
    # nope
    (
        "nope_embeddings dtype None",
        lambda: nope.nope_embeddings(4, 6, dtype=None),
        TypeError,
        "dtype must be a floating-point torch.dtype",
    ),
    (
        "nope_embeddings dtype int64",
        lambda: nope.nope_embeddings(4, 6, dtype=torch.int64),
        TypeError,
        "dtype must be a floating-point torch.dtype",
    ),
    (
        "nope_embeddings generator",
        lambda: nope.nope_embeddings(4, 6, generator=0),
        TypeError,
        "generator must be a torch.Generator",
    ),
    (
        "nope_position_layer dtype",
        lambda: nope.nope_position_layer(6, 2, dtype=torch.int64),
        TypeError,
        "dtype must be a floating-point torch.dtype",
    ),
    (
        "nope_position_weights query rows",
        lambda: nope.nope_position_weights(6, 3, query=randn(2, 6)),
        ValueError,
        r"query must be a \(d_head, dim\) = \(3, 6\) matrix, got \(2, 6\)",
    ),
    (
        "nope_position_weights query inf",
        lambda: nope.nope_position_weights(6, 3, query=with_nan(randn(3, 6), math.inf)),
        ValueError,
        "query must be finite",
    ),
    # fire
    (
        "fire_bias mlp input width",
        lambda: fire.fire_bias(4, 5, nn.Linear(2, 3), 0.1, 3.0),
        ValueError,
        r"mlp must map \(\.\.\., 1\) to \(\.\.\., H\)",
    ),
    # xpos
    (
        "xpos_scales positions list",
        lambda: xpos.xpos_scales([0, 1, 2], 8),
        TypeError,
        "positions must be a length L",
    ),
    (
        "xpos_scales positions numpy",
        lambda: xpos.xpos_scales(np.arange(3), 8),
        TypeError,
        "positions must be a length L",
    ),
    (
        "xpos_scales positions complex",
        lambda: xpos.xpos_scales(torch.arange(3).to(torch.complex64), 8),
        TypeError,
        "positions must be an integer tensor",
    ),
    (
        "apply_xpos odd x",
        lambda: xpos.apply_xpos(randn(3, 7), "query"),
        ValueError,
        "x's last dimension dim must be even",
    ),
    # p_rope
    (
        "apply_p_rope odd x",
        lambda: p_rope.apply_p_rope(randn(3, 7), 0.5),
        ValueError,
        "x's last dimension dim must be even",
    ),
    (
        "contrast p = 0",
        lambda: p_rope.contrast_with_partial_rotary(8, 0.0),
        ValueError,
        "p must be a fraction NeoX's partial rotary takes",
    ),
    (
        "contrast p bool",
        lambda: p_rope.contrast_with_partial_rotary(8, True),
        TypeError,
        r"p must be a real number in \[0, 1\]",
    ),
    (
        "contrast p > 1",
        lambda: p_rope.contrast_with_partial_rotary(8, 2.0),
        ValueError,
        r"p must be in \[0, 1\]",
    ),
    (
        "RotaryContrast list",
        lambda: p_rope.RotaryContrast([1.0, 0.0], torch.ones(2)),
        TypeError,
        "p_rope must be a torch.Tensor",
    ),
    (
        "RotaryContrast numpy",
        lambda: p_rope.RotaryContrast(torch.ones(2), np.ones(2)),
        TypeError,
        "partial_rotary must be a torch.Tensor",
    ),
    (
        "RotaryContrast int",
        lambda: p_rope.RotaryContrast(torch.ones(2, dtype=torch.int64), torch.ones(2)),
        TypeError,
        "p_rope must be a floating-point tensor",
    ),
    (
        "RotaryContrast NaN",
        lambda: p_rope.RotaryContrast(torch.ones(2), with_nan(torch.ones(2))),
        ValueError,
        "partial_rotary contains NaN",
    ),
    (
        "RotaryContrast negative",
        lambda: p_rope.RotaryContrast(-torch.ones(2), torch.ones(2)),
        ValueError,
        "p_rope must hold frequencies >= 0",
    ),
    (
        "RotaryContrast lengths",
        lambda: p_rope.RotaryContrast(torch.ones(2), torch.ones(3)),
        ValueError,
        "p_rope and partial_rotary must have one frequency per pair each",
    ),
    # cope
    (
        "cope_gates batch",
        lambda: cope.cope_gates(q4(2, 3), q4(3, 3)),
        ValueError,
        "q and k must have leading .batch, head. dimensions that broadcast",
    ),
    (
        "cope_gates heads",
        lambda: cope.cope_gates(q4(2, 3), q4(2, 4)),
        ValueError,
        "q and k must have leading .batch, head. dimensions that broadcast",
    ),
    (
        "cope_gates mask batch",
        lambda: cope.cope_gates(q4(2, 3), q4(2, 3), CAUSAL5.expand(4, 5, 5)),
        ValueError,
        r"mask must broadcast to the scores' shape \(2, 3, 5, 5\)",
    ),
    (
        "cope_gates q NaN",
        lambda: cope.cope_gates(with_nan(q4(2)), q4(2)),
        ValueError,
        "q contains NaN",
    ),
    (
        "cope_positions k inf",
        lambda: cope.cope_positions(q4(2), with_nan(q4(2), math.inf)),
        ValueError,
        "k must be finite",
    ),
    (
        "cope_gates empty q",
        lambda: cope.cope_gates(q4(length=0), q4()),
        ValueError,
        "q must hold at least one token",
    ),
    (
        "cope_logits positions rows",
        lambda: cope.cope_logits(q4(2), torch.ones(2, 6, 5), TABLE),
        ValueError,
        "positions must have one row per query: q_len = 5",
    ),
    (
        "cope_logits positions batch",
        lambda: cope.cope_logits(q4(2), torch.ones(3, 5, 5), TABLE),
        ValueError,
        "q and positions must have leading .batch, head. dimensions that broadcast",
    ),
    (
        "cope_logits table NaN",
        lambda: cope.cope_logits(q4(), torch.ones(5, 5), with_nan(TABLE)),
        ValueError,
        "table contains NaN",
    ),
    (
        "cope_scores one-row table",
        lambda: cope.cope_scores(q4(), q4(), TABLE[:1]),
        ValueError,
        r"table must have rows e\[0..P\] with P >= 1",
    ),
    (
        "cope_scores gates shape",
        lambda: cope.cope_scores(q4(2), q4(2), TABLE, gates=torch.ones(6, 5)),
        ValueError,
        "gates must broadcast to the scores' shape",
    ),
    (
        "cope_attention k list",
        lambda: cope.cope_attention(q4(), q4().tolist(), q4(), TABLE),
        TypeError,
        "k must be a torch.Tensor",
    ),
    (
        "cope_attention v dtype",
        lambda: cope.cope_attention(q4(), q4(), q4(dtype=torch.float64), TABLE),
        TypeError,
        "q, k and v must share one dtype",
    ),
    (
        "cope_attention v batch",
        lambda: cope.cope_attention(q4(2), q4(2), q4(3), TABLE),
        ValueError,
        "q, k and v must have leading .batch, head. dimensions that broadcast",
    ),
    (
        "interpolate_embeddings table inf",
        lambda: cope.interpolate_embeddings(with_nan(TABLE, math.inf), torch.ones(5, 5)),
        ValueError,
        "table must be finite",
    ),
    (
        "CoPEAttention x float64",
        lambda: cope.CoPEAttention(8, 2, 5)(randn(5, 8, dtype=torch.float64)),
        TypeError,
        "x must have the dtype of the layer's weights",
    ),
    (
        "CoPEAttention x NaN",
        lambda: cope.CoPEAttention(8, 2, 5).weights(with_nan(randn(5, 8))),
        ValueError,
        "x contains NaN",
    ),
    (
        "CoPEAttention x empty",
        lambda: cope.CoPEAttention(8, 2, 5).positions(randn(0, 8)),
        ValueError,
        "x must hold at least one token",
    ),
    # randomized
    (
        "randomized_sinusoidal complex",
        lambda: randomized.randomized_sinusoidal(torch.arange(3).to(torch.complex64), 8),
        TypeError,
        "positions must be an integer tensor",
    ),
    (
        "randomized_rope complex",
        lambda: randomized.randomized_rope(q4(dim=8), torch.arange(5).to(torch.complex64)),
        TypeError,
        "positions must be an integer tensor",
    ),
    (
        "randomized_rope odd x",
        lambda: randomized.randomized_rope(q4(dim=7), torch.arange(5)),
        ValueError,
        "x's last dimension dim must be even",
    ),
    (
        "RandomizedRope batch",
        lambda: randomized.RandomizedRope(8, 16)(q4(2, 3, dim=8), q4(3, 3, dim=8)),
        ValueError,
        "q and k must have one batch size",
    ),
    (
        "RandomizedRope rank",
        lambda: randomized.RandomizedRope(8, 16)(q4(2, 3, dim=8), q4(dim=8)),
        ValueError,
        "q and k must have one batch size",
    ),
    (
        "RandomizedRopePositions q length",
        lambda: randomized_turn(q4(2, 2, length=6, dim=8), q4(2, 2, dim=8)),
        ValueError,
        "q must hold the seq_len = 5 tokens",
    ),
    (
        "RandomizedRopePositions k width",
        lambda: randomized_turn(q4(2, 2, dim=8), q4(2, 2, dim=6)),
        ValueError,
        "k must have last dimension dim=8",
    ),
    # mrope
    (
        "apply_mrope odd x",
        lambda: mrope.apply_mrope(randn(6, 7), IDS, (1, 1, 1)),
        ValueError,
        "x's last dimension dim must be even",
    ),
    # irope
    (
        "temperature_scale positions list",
        lambda: irope.temperature_scale([0, 1, 2]),
        TypeError,
        "positions must be a length L",
    ),
    (
        "temperature_scale positions complex",
        lambda: irope.temperature_scale(torch.arange(3).to(torch.complex64)),
        TypeError,
        "positions must be an integer tensor",
    ),
    (
        "IRopeAttention uses_rope None",
        lambda: irope.IRopeAttention(8, 2, None),
        TypeError,
        "uses_rope must be True or False",
    ),
    (
        "IRopeAttention x float64",
        lambda: irope_layer(False)(randn(2, 5, 8, dtype=torch.float64)),
        TypeError,
        "x must have the dtype of the layer's weights",
    ),
    (
        "IRopeAttention floor_scale",
        lambda: irope_rope(floor_scale=-1.0),
        ValueError,
        "floor_scale must be a finite number > 0",
    ),
    (
        "IRopeAttention rotate None",
        lambda: irope_rope(rotate=None),
        TypeError,
        r"rotate must be a function \(q, k\) -> \(q, k\)",
    ),
    (
        "IRopeAttention chunk_mask None",
        lambda: irope_rope(chunk_mask=None),
        TypeError,
        "chunk_mask must be a torch.Tensor",
    ),
    (
        "IRopeAttention chunk_mask numpy",
        lambda: irope_rope(chunk_mask=CAUSAL5.numpy()),
        TypeError,
        "chunk_mask must be a torch.Tensor",
    ),
    (
        "IRopeAttention chunk_mask float",
        lambda: irope_rope(chunk_mask=CAUSAL5.float()),
        TypeError,
        "chunk_mask must be a boolean tensor",
    ),
    (
        "IRopeAttention chunk_mask shape",
        lambda: irope_rope(chunk_mask=CAUSAL5[:4]),
        ValueError,
        r"chunk_mask must end in \(q_len, k_len\) = \(5, 5\)",
    ),
    (
        "IRopeAttention chunk_mask batch",
        lambda: irope_rope(chunk_mask=CAUSAL5.expand(3, 5, 5)),
        ValueError,
        r"chunk_mask must broadcast to the scores' shape \(2, 2, 5, 5\)",
    ),
    (
        "IRopeAttention chunk_mask empty row",
        lambda: irope_rope(chunk_mask=CAUSAL5 & ~torch.eye(5, dtype=torch.bool)),
        ValueError,
        "chunk_mask leaves a query with no key",
    ),
    # mla
    (
        "MLA forward x float64",
        lambda: mla_layer()(randn(2, 5, 8, dtype=torch.float64)),
        TypeError,
        "x must have the dtype of the layer's weights",
    ),
    (
        "MLA latent x float16",
        lambda: mla_layer().latent(randn(5, 8, dtype=torch.float16)),
        TypeError,
        "x must have the dtype of the layer's weights",
    ),
    (
        "MLA content_scores heads",
        lambda: mla_layer().content_scores(randn(2, 3, 5, 3), randn(2, 6, 4)),
        ValueError,
        r"q_content must have n_heads = 2 heads \(dim 1\)",
    ),
    (
        "MLA content_scores batch",
        lambda: mla_layer().content_scores(randn(3, 2, 5, 3), randn(2, 6, 4), absorb=True),
        ValueError,
        "q_content and latent must have batch sizes",
    ),
    (
        "MLA content_scores q dtype",
        lambda: mla_layer().content_scores(randn(2, 2, 5, 3, dtype=torch.float64), randn(2, 6, 4)),
        TypeError,
        "q_content must have the dtype of the layer's weights",
    ),
    (
        "MLA content_scores latent dtype",
        lambda: mla_layer().content_scores(
            randn(2, 2, 5, 3), randn(2, 6, 4, dtype=torch.float64), absorb=True
        ),
        TypeError,
        "latent must have the dtype of the layer's weights",
    ),
    (
        "MLA cache dtype",
        lambda: mla_layer()(
            randn(2, 2, 8), cache=tuple(t.double() for t in mla_layer().latent(randn(2, 3, 8)))
        ),
        TypeError,
        "cache latent must have the dtype of x",
    ),
    (
        "MLA cache and no token",
        lambda: mla_layer()(randn(2, 0, 8), cache=mla_layer().latent(randn(2, 3, 8))),
        ValueError,
        "x must hold at least one new token",
    ),
    # sinks
    (
        "sink_attention k dtype",
        lambda: sinks.sink_attention(q4(2, 3), q4(2, 3, dtype=torch.float64), q4(2, 3), randn(3)),
        TypeError,
        "q, k and v must share one dtype",
    ),
    (
        "sink_attention v dtype",
        lambda: sinks.sink_attention(q4(2, 3), q4(2, 3), q4(2, 3, dtype=torch.float16), randn(3)),
        TypeError,
        "q, k and v must share one dtype",
    ),
    (
        "sink_attention batch",
        lambda: sinks.sink_attention(q4(2, 3), q4(3, 3), q4(3, 3), randn(3)),
        ValueError,
        "q, k and v must have leading .batch, head. dimensions that broadcast",
    ),
    (
        "sink_attention heads",
        lambda: sinks.sink_attention(q4(2, 3), q4(2, 4), q4(2, 4), randn(3)),
        ValueError,
        "q, k and v must have leading .batch, head. dimensions that broadcast",
    ),
    (
        "sink_attention q NaN",
        lambda: sinks.sink_attention(with_nan(q4(2, 3)), q4(2, 3), q4(2, 3), randn(3)),
        ValueError,
        "q contains NaN",
    ),
    (
        "sink_attention k inf",
        lambda: sinks.sink_attention(q4(2, 3), with_nan(q4(2, 3), math.inf), q4(2, 3), randn(3)),
        ValueError,
        "k must be finite",
    ),
    (
        "sink_attention causal",
        lambda: sinks.sink_attention(q4(2, 3), q4(2, 3), q4(2, 3), randn(3), causal="yes"),
        TypeError,
        "causal must be True or False",
    ),
    (
        "attention_to_first_token model",
        lambda: sinks.attention_to_first_token("model", torch.zeros(2, 4, dtype=torch.int64)),
        TypeError,
        "model must be a torch.nn.Module",
    ),
    (
        "attention_to_first_token float tokens",
        lambda: sinks.attention_to_first_token(nn.Identity(), torch.zeros(2, 4)),
        TypeError,
        "tokens must be an integer tensor",
    ),
    (
        "attention_to_first_token no tokens",
        lambda: sinks.attention_to_first_token(nn.Identity(), torch.zeros(2, 0, dtype=torch.int64)),
        ValueError,
        "tokens must hold at least one token",
    ),
    # chapter 1's attention, which MLA, iRoPE and CoPE build on (same shared checks)
    (
        "attention batch",
        lambda: attention(q4(2, 3), q4(3, 3), q4(3, 3)),
        ValueError,
        "q, k and v must have leading .batch, head. dimensions that broadcast",
    ),
    (
        "MultiHeadSelfAttention x float64",
        lambda: MultiHeadSelfAttention(8, 2)(randn(5, 8, dtype=torch.float64)),
        TypeError,
        "x must have the dtype of the layer's weights",
    ),
]


@pytest.mark.parametrize(
    ("call", "error", "match"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_bad_input_names_the_argument(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_valid_inputs_of_the_cases_still_run():
    """The calls above with the argument put right run (so each case tests one argument)."""
    q, k, v = q4(2, 3), q4(2, 3), q4(2, 3)
    assert sinks.sink_attention(q, k, v, randn(3)).shape == (2, 3, 5, 4)
    assert cope.cope_attention(q, k, v, TABLE).shape == (2, 3, 5, 4)
    assert cope.cope_gates(q, k, CAUSAL5.expand(1, 5, 5)).shape == (2, 3, 5, 5)
    assert irope_rope().shape == (2, 5, 8)
    assert irope_rope(chunk_mask=CAUSAL5.expand(1, 1, 5, 5)).shape == (2, 5, 8)
    layer = mla_layer()
    assert layer(randn(2, 2, 8), cache=layer.latent(randn(2, 3, 8))).shape == (2, 2, 8)
    assert layer.content_scores(randn(1, 2, 5, 3), randn(2, 6, 4), absorb=True).shape == (
        2,
        2,
        5,
        6,
    )
    assert randomized_turn(q4(2, 2, dim=8), q4(2, 2, dim=8))[0].shape == (2, 2, 5, 8)
    assert p_rope.contrast_with_partial_rotary(8, 0.5).rotated_pairs == (2, 2)
    model = CharLM(ModelConfig("rope", vocab_size=11, dim=16, n_heads=2, train_len=8))
    shares = sinks.attention_to_first_token(model, torch.zeros(2, 4, dtype=torch.int64))
    assert shares is not None and shares.shape == (2, 2, 4)


def test_layers_accept_other_dtypes_under_autocast():
    """Under autocast a layer casts its inputs itself: the dtype check stands aside."""
    layer = MultiHeadSelfAttention(8, 2)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert layer(randn(5, 8, dtype=torch.bfloat16)).dtype == torch.bfloat16
    with pytest.raises(TypeError, match="x must have the dtype of the layer's weights"):
        layer(randn(5, 8, dtype=torch.bfloat16))


def test_shared_validators():
    """The checks added to pe_book._validate for these modules, one by one."""
    x = torch.zeros(2, 3)
    with pytest.raises(TypeError, match=r"ids must be an integer tensor, got dtype torch\.bool"):
        validate_tensor("ids", x.bool(), integer=True)
    assert validate_tensor("ids", x.long(), integer=True) is not None
    assert validate_finite("scores", with_nan(x, -math.inf)) is not None  # masks use -inf
    with pytest.raises(ValueError, match="scores must be finite"):
        validate_finite("scores", with_nan(x, -math.inf), allow_inf=False)
    with pytest.raises(TypeError, match=r"x must have the dtype of w, torch\.float64"):
        validate_dtype("x", x, torch.float64, "w")
    assert validate_broadcast({"a": (2, 1), "b": (3,)}, "broadcast together") == (2, 3)
    with pytest.raises(
        ValueError, match=r"a and b must broadcast together, got a \(2,\), b \(3,\)"
    ):
        validate_broadcast({"a": (2,), "b": (3,)}, "broadcast together")
    with pytest.raises(ValueError, match=r"a must fit, got a \(2, 3\)"):
        validate_broadcast({"a": (2, 3)}, "fit", target=(3,))
    with pytest.raises(ValueError, match="mask leaves a query with no key"):
        validate_mask("mask", torch.zeros(2, 2, dtype=torch.bool), (2, 2))
    assert validate_pairs("x", torch.zeros(3, 4)) == 4
    with pytest.raises(ValueError, match="x's last dimension dim must be an int >= 2, got 0"):
        validate_pairs("x", torch.zeros(3, 0))
    with pytest.raises(ValueError, match="k and v must have the same length"):
        validate_qkv(x, x, torch.zeros(3, 3))
