"""pe_book.mla: MLA's decoupled RoPE against transformers' DeepSeek-V2/V3 attention, absorption,
the relative property of the rotary part, the cache of Table 1, decoding from it, bad input.

Reference: transformers' ``DeepseekV2Attention`` and ``DeepseekV3Attention`` (models/deepseek_v2,
deepseek_v3), built from tiny configs without weights; their random weights are copied into
MLAAttention. Their RMSNorm on the latent (``kv_a_layernorm``, DeepSeek-V2 §3.1.2) is not in the
paper's equations: it is replaced by the identity, or matched by ours with ``latent_norm``.
"""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from pe_book.mla import MLAAttention, mha_cache_floats, mla_cache_floats
from pe_book.rope import apply_rope
from pe_book.sinusoidal import layout_permutation

H, D_HEAD, D_ROPE, D_LATENT, DIM = 4, 8, 6, 16, 32


def random(*shape, seed=0, dtype=torch.float64):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def module(seed=0, dtype=torch.float64, **kwargs):
    torch.manual_seed(seed)
    return MLAAttention(DIM, H, D_LATENT, D_HEAD, D_ROPE, **kwargs).to(dtype)


def causal_additive_mask(seq_len):
    return torch.full((seq_len, seq_len), float("-inf")).triu(1)  # (L, L)


# --- transformers' DeepSeek attention ------------------------------------------------------


def hf_attention(version, **config):
    transformers = pytest.importorskip("transformers")
    name = {2: "deepseek_v2", 3: "deepseek_v3"}[version]
    modeling = pytest.importorskip(f"transformers.models.{name}.modeling_{name}")
    config_class = getattr(transformers, f"DeepseekV{version}Config")
    config = config_class(
        hidden_size=DIM,
        num_attention_heads=H,
        num_key_value_heads=H,
        q_lora_rank=None,  # uncompressed queries, as in MLAAttention (and DeepSeek-V2-Lite)
        kv_lora_rank=D_LATENT,
        qk_nope_head_dim=D_HEAD,
        qk_rope_head_dim=D_ROPE,
        v_head_dim=D_HEAD,
        attn_implementation="eager",
        **config,
    )
    torch.manual_seed(1)
    attn = getattr(modeling, f"DeepseekV{version}Attention")(config, layer_idx=0)
    rotary = getattr(modeling, f"DeepseekV{version}RotaryEmbedding")(config)
    return attn, rotary


def copy_weights(ours, hf):
    """HF's stacked projections, split into the paper's matrices."""
    with torch.no_grad():
        w_q = hf.q_proj.weight.view(H, D_HEAD + D_ROPE, DIM)  # per head: [q^C | q^R] rows
        ours.w_q.weight.copy_(w_q[:, :D_HEAD].reshape(H * D_HEAD, DIM))
        ours.w_qr.weight.copy_(w_q[:, D_HEAD:].reshape(H * D_ROPE, DIM))
        w_a = hf.kv_a_proj_with_mqa.weight  # [W^DKV; W^KR]
        ours.w_dkv.weight.copy_(w_a[:D_LATENT])
        ours.w_kr.weight.copy_(w_a[D_LATENT:])
        w_b = hf.kv_b_proj.weight.view(H, 2 * D_HEAD, D_LATENT)  # per head: [W^UK_h; W^UV_h]
        ours.w_uk.weight.copy_(w_b[:, :D_HEAD].reshape(H * D_HEAD, D_LATENT))
        ours.w_uv.weight.copy_(w_b[:, D_HEAD:].reshape(H * D_HEAD, D_LATENT))
        ours.w_o.weight.copy_(hf.o_proj.weight)


def run_hf(version, hf, rotary, x):
    seq_len = x.shape[1]
    mask = causal_additive_mask(seq_len)[None, None]
    position_ids = torch.arange(seq_len)[None].expand(x.shape[0], seq_len)
    embeddings = rotary(x, position_ids)
    if version == 2:
        return hf(x, attention_mask=mask, position_embeddings=embeddings)
    return hf(x, embeddings, mask)


CASES = [(2, {}, "interleaved"), (3, {"rope_interleave": True}, "interleaved")]
CASES += [(3, {"rope_interleave": False}, "half")]


@pytest.mark.parametrize(("version", "config", "layout"), CASES)
def test_output_equals_transformers_deepseek_attention(version, config, layout):
    hf, rotary = hf_attention(version, **config)
    hf.kv_a_layernorm = nn.Identity()  # the paper's eqs. (9)-(11) have no norm
    ours = module(dtype=torch.float32, layout=layout)
    copy_weights(ours, hf)
    x = random(2, 24, DIM, seed=3, dtype=torch.float32)
    expected, weights = run_hf(version, hf, rotary, x)
    assert (ours(x) - expected).abs().max() < 1e-5
    # and eq. (18)'s logits, two parts added, give HF's attention matrix
    ours_weights = torch.softmax(ours.scores(x) + causal_additive_mask(24), dim=-1)
    assert (ours_weights - weights).abs().max() < 1e-6


def test_the_other_layout_does_not_match_transformers():
    hf, rotary = hf_attention(3, rope_interleave=True)
    hf.kv_a_layernorm = nn.Identity()
    ours = module(dtype=torch.float32, layout="half")
    copy_weights(ours, hf)
    x = random(1, 24, DIM, seed=3, dtype=torch.float32)
    assert (ours(x) - run_hf(3, hf, rotary, x)[0]).abs().max() > 1e-3


def test_an_rmsnorm_as_latent_norm_matches_transformers_kv_norm():
    hf, rotary = hf_attention(3)
    with torch.no_grad():
        hf.kv_a_layernorm.weight.copy_(random(D_LATENT, seed=5, dtype=torch.float32).abs())
    ours = module(dtype=torch.float32)
    copy_weights(ours, hf)
    ours.latent_norm = nn.RMSNorm(D_LATENT, eps=hf.config.rms_norm_eps)
    with torch.no_grad():
        ours.latent_norm.weight.copy_(hf.kv_a_layernorm.weight)
    x = random(2, 16, DIM, seed=4, dtype=torch.float32)
    assert (ours(x) - run_hf(3, hf, rotary, x)[0]).abs().max() < 1e-5


def test_transformers_v3_interleave_is_interleaved_rope_then_a_permutation():
    modeling = pytest.importorskip("transformers.models.deepseek_v3.modeling_deepseek_v3")
    q, k = random(1, H, 10, D_ROPE, seed=1), random(1, 1, 10, D_ROPE, seed=2)
    angles = torch.arange(10, dtype=torch.float64)[:, None] * 10000.0 ** (
        -torch.arange(0, D_ROPE, 2, dtype=torch.float64) / D_ROPE
    )
    emb = torch.cat((angles, angles), dim=-1)[None]  # HF's (1, L, d) cos/sin layout
    q_hf, k_hf = modeling.apply_rotary_pos_emb_interleave(q, k, emb.cos(), emb.sin())
    perm = layout_permutation(D_ROPE)  # 2i -> i, 2i + 1 -> i + d/2
    torch.testing.assert_close(q_hf, apply_rope(q)[..., perm], rtol=0, atol=1e-12)
    torch.testing.assert_close(q_hf, apply_rope(q[..., perm], layout="half"), rtol=0, atol=1e-12)
    scores = apply_rope(q) @ apply_rope(k).transpose(-2, -1)
    torch.testing.assert_close(q_hf @ k_hf.transpose(-2, -1), scores, rtol=0, atol=1e-12)


# --- absorption: why the rotary part has to be separate -----------------------------------


@settings(max_examples=20)
@given(st.integers(0, 2**16), st.integers(1, 12), st.integers(1, 12))
def test_absorbing_w_uk_into_the_query_gives_the_same_content_scores(seed, q_len, k_len):
    mla = module(seed)
    q_content, _ = mla.queries(random(2, q_len, DIM, seed=seed))
    latent, _ = mla.latent(random(2, k_len, DIM, seed=seed + 1))
    rebuilt = mla.content_scores(q_content, latent)
    absorbed = mla.content_scores(q_content, latent, absorb=True)
    assert rebuilt.shape == (2, H, q_len, k_len)
    torch.testing.assert_close(absorbed, rebuilt, rtol=0, atol=1e-11)
    by_hand = q_content[0, 1] @ (latent[0] @ mla.w_uk.weight[D_HEAD : 2 * D_HEAD].T).T
    torch.testing.assert_close(rebuilt[0, 1], by_hand, rtol=0, atol=1e-11)


def test_rope_on_rebuilt_keys_leaves_no_query_to_absorb_into():
    # Coupled RoPE (what MLA avoids): s(m, n) = (R_m q_m) · (R_n W^UK c_n) = q_mᵀ R_{n-m} W^UK c_n.
    # The absorbed query that is right for key position n0, (R_{n0} W^UK)ᵀ R_m q_m, is right
    # for that key only: the matrix between q and c changes with n.
    mla = module(0)
    x = random(1, 9, DIM, seed=7)
    q_content, _ = mla.queries(x)
    latent, _ = mla.latent(x)
    w_uk = mla.w_uk.weight[:D_HEAD]  # head 0: (d_h, d_c)
    positions = torch.arange(9)
    q_rot = apply_rope(q_content[0, 0, :, :], positions)  # (9, d_h)
    k_rot = apply_rope(latent[0] @ w_uk.T, positions)  # (9, d_h)
    coupled = q_rot @ k_rot.T  # (9, 9)
    for n0 in (0, 4):
        eye = torch.eye(D_HEAD, dtype=torch.float64)
        r_n0 = apply_rope(eye, torch.full((D_HEAD,), n0)).T  # R_{n0}: its columns are R e_j
        absorbed = (q_rot @ r_n0 @ w_uk) @ latent[0].T  # one absorbed query per m
        right = (absorbed - coupled).abs() < 1e-10
        assert right[:, n0].all() and not right[:, positions != n0].any()


# --- the rotary part and positions ---------------------------------------------------------


@settings(max_examples=15)
@given(st.integers(0, 10**4), st.integers(0, 2**16), st.sampled_from(["interleaved", "half"]))
def test_shifting_every_position_leaves_scores_and_output_unchanged(shift, seed, layout):
    mla = module(seed % 7, layout=layout)
    x = random(2, 10, DIM, seed=seed)
    torch.testing.assert_close(mla.scores(x, start=shift), mla.scores(x), rtol=0, atol=1e-9)
    torch.testing.assert_close(mla(x, start=shift), mla(x), rtol=0, atol=1e-9)


def test_only_the_rotary_parts_carry_positions():
    mla, x = module(), random(1, 6, DIM, seed=2)
    (q_c0, q_r0), (q_c5, q_r5) = mla.queries(x), mla.queries(x, start=5)
    (c0, k0), (c5, k5) = mla.latent(x), mla.latent(x, start=5)
    assert torch.equal(q_c0, q_c5) and torch.equal(c0, c5)
    assert (q_r0 - q_r5).abs().max() > 0.1 and (k0 - k5).abs().max() > 0.1
    # and the rotary part does depend on the offset: swapping two keys' positions changes it
    swapped = torch.tensor([1, 0, 2, 3, 4, 5])
    k_swapped = apply_rope(mla.w_kr(x), swapped)
    assert (q_r0 @ k0.transpose(-2, -1) - q_r0 @ k_swapped.transpose(-2, -1)).abs().max() > 1e-3


def test_forward_is_softmax_of_the_scores_times_the_rebuilt_values():
    mla, x = module(), random(2, 11, DIM, seed=8)
    weights = torch.softmax(mla.scores(x) + causal_additive_mask(11), dim=-1)  # (2, H, L, L)
    values = (x @ mla.w_dkv.weight.T @ mla.w_uv.weight.T).view(2, 11, H, D_HEAD).transpose(1, 2)
    heads = (weights @ values).transpose(1, 2).reshape(2, 11, H * D_HEAD)
    torch.testing.assert_close(mla(x), heads @ mla.w_o.weight.T, rtol=0, atol=1e-12)


def test_scores_are_scaled_by_the_full_query_width():
    mla, x = module(), random(1, 5, DIM, seed=9)
    q_c, q_r = mla.queries(x)
    c, k_r = mla.latent(x)
    k_c = (c @ mla.w_uk.weight.T).view(1, 5, H, D_HEAD).transpose(1, 2)
    q = torch.cat((q_c, q_r), dim=-1)  # (16)
    k = torch.cat((k_c, k_r[:, None].expand(-1, H, -1, -1)), dim=-1)  # (17)
    expected = q @ k.transpose(-2, -1) / math.sqrt(D_HEAD + D_ROPE)
    torch.testing.assert_close(mla.scores(x), expected, rtol=0, atol=1e-12)


# --- the cache ----------------------------------------------------------------------------


def test_decoding_from_the_latent_cache_equals_the_full_pass():
    mla, x = module(), random(2, 12, DIM, seed=10)
    full = mla(x)
    for t in (1, 5, 11):
        cache = mla.latent(x[:, :t])
        assert sum(entry.shape[-1] for entry in cache) == mla.cache_floats_per_token
        step = mla(x[:, t : t + 2], cache=cache)  # two new tokens at positions t, t + 1
        torch.testing.assert_close(step, full[:, t : t + 2], rtol=0, atol=1e-12)


def test_deepseek_v2_caches_576_numbers_per_token_against_32768():
    # §3.1.2: H = 128 heads of d_h = 128, d_c = 512, d_h^R = 64.
    # Table 1, per token: (d_c + d_h^R) l for MLA against 2 H d_h l for MHA.
    mla, mha = mla_cache_floats(512, 64), mha_cache_floats(128, 128)
    assert (mla, mha) == (576, 32768)
    assert mha / mla == pytest.approx(512 / 9) and round(mha / mla, 1) == 56.9
    assert mla == 9 * 128 // 2  # Table 1: d_c = 4 d_h, d_h^R = d_h / 2 gives 9/2 d_h
    assert mla == 2 * 2.25 * 128  # "equal to GQA with only 2.25 groups"
    assert 60 * mla == 34560  # 60 layers


def test_the_properties_count_the_module_dims():
    mla = module()
    assert mla.cache_floats_per_token == D_LATENT + D_ROPE == 22
    assert mla.mha_cache_floats_per_token == 2 * H * D_HEAD == 64


def test_unbatched_input_is_the_batched_row():
    mla, x = module(), random(3, 7, DIM, seed=11)
    torch.testing.assert_close(mla(x[1]), mla(x)[1], rtol=0, atol=1e-12)
    assert mla.scores(x[1]).shape == (H, 7, 7)


# --- bad input -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"n_heads": 0}, ValueError, "n_heads"),
        ({"d_rope": 5}, ValueError, "d_rope"),
        ({"d_latent": 0}, ValueError, "d_latent"),
        ({"d_head": 2.0}, TypeError, "d_head"),
        ({"dim": True}, TypeError, "dim"),
        ({"base": 1.0}, ValueError, "base"),
        ({"layout": "complex"}, ValueError, "layout"),
    ],
)
def test_bad_constructor_arguments_name_themselves(kwargs, error, match):
    args = {"dim": DIM, "n_heads": H, "d_latent": D_LATENT, "d_head": D_HEAD, "d_rope": D_ROPE}
    with pytest.raises(error, match=match):
        MLAAttention(**{**args, **kwargs})


def test_bad_inputs_name_themselves():
    mla, x = module(), random(1, 4, DIM)
    with pytest.raises(ValueError, match="x must have last dimension"):
        mla(random(1, 4, DIM + 1))
    with pytest.raises(ValueError, match="x must have rank"):
        mla(random(1, 1, 4, DIM))
    with pytest.raises(TypeError, match="x must be a floating"):
        mla(torch.ones(1, 4, DIM, dtype=torch.int64))
    with pytest.raises(ValueError, match="start"):
        mla(x, start=-1)
    cache = mla.latent(x)
    with pytest.raises(ValueError, match="start must equal the cache's length 4"):
        mla(x, start=3, cache=cache)
    with pytest.raises(TypeError, match="cache must be a tuple"):
        mla(x, cache=list(cache))
    with pytest.raises(ValueError, match="cache latent"):
        mla(x, cache=(cache[0][..., :-1], cache[1]))
    with pytest.raises(ValueError, match="x's batch"):
        mla(random(2, 4, DIM), cache=cache)
    with pytest.raises(ValueError, match="latent"):
        mla.content_scores(mla.queries(x)[0], random(1, 4, D_LATENT + 1))
    with pytest.raises(ValueError, match="d_rope"):
        mla_cache_floats(512, 63)
