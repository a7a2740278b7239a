"""pe_book.mrope: Qwen2-VL's position ids, the section split, relative scores, bad input.

Cross-checked against transformers' Qwen2-VL (``models/qwen2_vl/modeling_qwen2_vl.py``,
v5): ``Qwen2VLRotaryEmbedding`` (whose ``recomposition_frequencies`` does the section
split that ``apply_multimodal_rotary_pos_emb`` did in v4) with ``apply_rotary_pos_emb``,
and ``Qwen2VLModel.get_rope_index`` called unbound on a stub holding only the config
(no model, no weights).
"""

import itertools
import math
import types

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pe_book import mrope, rope
from pe_book.sinusoidal import LAYOUTS


def random(*shape, seed=0, dtype=torch.float64):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


@st.composite
def dims_and_sections(draw):
    half = draw(st.integers(3, 24))
    t = draw(st.integers(1, half - 2))
    h = draw(st.integers(1, half - t - 1))
    return 2 * half, (t, h, half - t - h)


texts = st.tuples(st.just("text"), st.integers(1, 4))
visions = st.tuples(
    st.sampled_from(["image", "video"]), st.integers(1, 3), st.integers(1, 4), st.integers(1, 4)
)
segment_lists = st.lists(st.one_of(texts, visions), max_size=5)


def reference_rotation(x, position_ids, sections, base=10000.0, layout="half"):
    """Pair by pair in float64: pair i of section j turns by position_ids[j, row] * b^(-2i/d)."""
    dim = x.shape[-1]
    owner = [j for j, size in enumerate(sections) for _ in range(size)]
    rows, ids = x.tolist(), position_ids.tolist()
    out = [list(row) for row in rows]
    for row, values in enumerate(rows):
        for i in range(dim // 2):
            angle = ids[owner[i]][row] * base ** (-2 * i / dim)
            a, b = (i, i + dim // 2) if layout == "half" else (2 * i, 2 * i + 1)
            out[row][a] = values[a] * math.cos(angle) - values[b] * math.sin(angle)
            out[row][b] = values[a] * math.sin(angle) + values[b] * math.cos(angle)
    return torch.tensor(out, dtype=torch.float64)


# --- position ids (Qwen2-VL section 2.1) ---


def test_text_image_text_ids_by_hand():
    # 2 text tokens at 0, 1; a 2 x 3 image from 2: t = 2, rows 2..3, columns 2..4;
    # the largest id so far is 4, so the text after it starts at 5.
    ids = mrope.mrope_position_ids([("text", 2), ("image", 1, 2, 3), ("text", 2)])
    expected = torch.tensor(
        [
            [0, 1, 2, 2, 2, 2, 2, 2, 5, 6],
            [0, 1, 2, 2, 2, 3, 3, 3, 5, 6],
            [0, 1, 2, 3, 4, 2, 3, 4, 5, 6],
        ]
    )
    assert ids.dtype == torch.int64
    assert torch.equal(ids, expected)


def test_text_after_a_long_video_starts_after_its_last_frame():
    # 4 frames of 1 x 2 tokens from 1: t = 1..4 is the largest component, so text is at 5
    ids = mrope.mrope_position_ids([("text", 1), ("video", 4, 1, 2), ("text", 1)])
    expected = torch.tensor(
        [
            [0, 1, 1, 2, 2, 3, 3, 4, 4, 5],
            [0, 1, 1, 1, 1, 1, 1, 1, 1, 5],
            [0, 1, 2, 1, 2, 1, 2, 1, 2, 5],
        ]
    )
    assert torch.equal(ids, expected)


def test_no_segments_give_no_ids():
    assert mrope.mrope_position_ids([]).shape == (3, 0)


@settings(max_examples=30)
@given(segment_lists, st.integers(0, 5), st.integers(0, 50))
def test_a_sequence_continues_from_its_largest_id(segments, cut, start):
    cut = min(cut, len(segments))
    whole = mrope.mrope_position_ids(segments, start=start)
    head = mrope.mrope_position_ids(segments[:cut], start=start)
    nxt = int(head.max()) + 1 if head.numel() else start
    tail = mrope.mrope_position_ids(segments[cut:], start=nxt)
    assert torch.equal(whole, torch.cat((head, tail), dim=1))
    assert torch.equal(whole, mrope.mrope_position_ids(segments) + start)
    assert whole.shape[1] == sum(math.prod(s[1:]) for s in segments)


# --- the rotation ---


def test_qwen2_vl_sections_give_the_fast_pairs_to_time():
    components = mrope.section_components(128, [16, 24, 24])
    assert components.tolist() == [0] * 16 + [1] * 24 + [2] * 24


@settings(max_examples=20)
@given(dims_and_sections(), st.sampled_from(LAYOUTS), st.integers(0, 2**16))
def test_pairs_turn_by_their_sections_component(dim_sections, layout, seed):
    dim, sections = dim_sections
    ids = torch.randint(0, 5000, (3, 4), generator=torch.Generator().manual_seed(seed))
    x = random(4, dim, seed=seed)
    got = mrope.apply_mrope(x, ids, sections, layout=layout)
    expected = reference_rotation(x, ids, sections, layout=layout)
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-9)


@settings(max_examples=30)
@given(dims_and_sections(), st.integers(0, 2**16))
def test_angles_are_each_components_position_times_theta(dim_sections, seed):
    dim, sections = dim_sections
    ids = torch.randint(0, 10**6, (3, 5), generator=torch.Generator().manual_seed(seed))
    angles = mrope.mrope_angles(ids, dim, sections)
    bounds = [0, sections[0], sections[0] + sections[1], dim // 2]
    for j in range(3):
        i = torch.arange(bounds[j], bounds[j + 1], dtype=torch.float64)
        expected = ids[j, :, None].double() * 10000.0 ** (-2 * i / dim)
        torch.testing.assert_close(angles[:, bounds[j] : bounds[j + 1]], expected)


@settings(max_examples=30)
@given(dims_and_sections(), st.sampled_from(LAYOUTS), st.integers(1, 40), st.integers(0, 2**16))
def test_text_ids_give_rope_exactly(dim_sections, layout, seq_len, seed):
    dim, sections = dim_sections
    x = random(2, seq_len, dim, seed=seed, dtype=torch.float32)
    ids = mrope.mrope_position_ids([("text", seq_len)])
    got = mrope.apply_mrope(x, ids, sections, layout=layout)
    assert torch.equal(got, rope.apply_rope(x, layout=layout))


@settings(max_examples=30)
@given(
    dims_and_sections(),
    st.tuples(*[st.integers(0, 10**4)] * 3),
    st.booleans(),
    st.integers(0, 2**16),
)
def test_scores_depend_on_component_differences_only(dim_sections, shift, same, seed):
    dim, sections = dim_sections
    shift = torch.tensor([shift[0]] * 3 if same else shift)[:, None]  # (3, 1)
    ids = torch.randint(0, 1000, (3, 6), generator=torch.Generator().manual_seed(seed))
    q, k = random(6, dim, seed=seed), random(6, dim, seed=seed + 1)
    scores = mrope.apply_mrope(q, ids, sections) @ mrope.apply_mrope(k, ids, sections).T
    moved = ids + shift
    shifted = mrope.apply_mrope(q, moved, sections) @ mrope.apply_mrope(k, moved, sections).T
    torch.testing.assert_close(shifted, scores, rtol=0, atol=1e-8)


@pytest.mark.parametrize("component", range(3))
def test_each_component_moves_the_score(component):
    q, k = random(1, 32, seed=1), random(1, 32, seed=2)
    ids = torch.tensor([[7], [3], [5]])
    moved = ids.clone()
    moved[component] += 1
    score = mrope.apply_mrope(q, ids, (4, 6, 6)) @ mrope.apply_mrope(k, ids, (4, 6, 6)).T
    other = mrope.apply_mrope(q, ids, (4, 6, 6)) @ mrope.apply_mrope(k, moved, (4, 6, 6)).T
    assert abs(float(score - other)) > 1e-3


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_module_equals_apply_mrope_as_its_cache_grows(dtype):
    module = mrope.MRope(32, (4, 6, 6), max_len=4)
    ids = mrope.mrope_position_ids([("text", 3), ("image", 2, 5, 7), ("text", 300)])
    x = random(2, ids.shape[1], 32, seed=3, dtype=dtype)
    got = module(x, ids)
    assert module.cos.shape[0] >= int(ids.max()) + 1 and got.dtype == dtype
    assert torch.equal(got, mrope.apply_mrope(x, ids, (4, 6, 6)))


def test_module_keeps_float32_tables_under_half_precision():
    module = mrope.MRope(16, (2, 3, 3)).to(torch.bfloat16)
    assert module.cos.dtype == torch.float32 and module.cos64.dtype == torch.float64
    ids = mrope.mrope_position_ids([("image", 1, 3, 3)])
    x = random(ids.shape[1], 16, seed=4, dtype=torch.float32)
    got = module(x.bfloat16(), ids)
    assert got.dtype == torch.bfloat16
    torch.testing.assert_close(got.float(), mrope.apply_mrope(x, ids, (2, 3, 3)), atol=0.05, rtol=0)


# --- transformers' Qwen2-VL ---


@pytest.fixture(scope="module")
def qwen2_vl():
    return pytest.importorskip("transformers.models.qwen2_vl.modeling_qwen2_vl")


def text_config(qwen2_vl, dim, sections):
    config = pytest.importorskip("transformers.models.qwen2_vl.configuration_qwen2_vl")
    return config.Qwen2VLTextConfig(
        hidden_size=2 * dim,
        num_attention_heads=2,
        num_key_value_heads=2,
        num_hidden_layers=1,
        intermediate_size=8,
        vocab_size=8,
        bos_token_id=None,
        eos_token_id=None,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": sections},
    )


def qwen2_vl_rotation(qwen2_vl, x, ids, dim, sections):
    """x (1, H, L, dim) rotated by transformers, and its cos/sin (L, dim) = cat((cos, cos), -1)."""
    embedding = qwen2_vl.Qwen2VLRotaryEmbedding(text_config(qwen2_vl, dim, sections))
    cos, sin = embedding(x, ids[:, None, :])  # ids (3, batch 1, L)
    rotated, _ = qwen2_vl.apply_rotary_pos_emb(x, x, cos, sin)
    return rotated, cos[0], sin[0]


SEGMENTS = [("text", 3), ("image", 1, 4, 6), ("text", 5), ("video", 3, 2, 2), ("text", 5)]


@pytest.mark.parametrize(("dim", "sections"), [(32, [4, 6, 6]), (128, [16, 24, 24])])
def test_matches_qwen2_vl_rotary_embedding(qwen2_vl, dim, sections):
    ids = mrope.mrope_position_ids(SEGMENTS)  # ids up to 21
    for seed in (5, 6):  # a query and a key
        x = random(1, 2, ids.shape[1], dim, seed=seed, dtype=torch.float32)
        expected, cos, sin = qwen2_vl_rotation(qwen2_vl, x, ids, dim, sections)
        assert (mrope.apply_mrope(x, ids, sections) - expected).abs().max() < 1e-5
    our_cos, our_sin = mrope.mrope_cos_sin(ids, dim, sections)
    for ours, theirs in ((our_cos, cos), (our_sin, sin)):
        assert (ours - theirs[:, : dim // 2]).abs().max() < 1e-6
        assert (ours - theirs[:, dim // 2 :]).abs().max() < 1e-6


def test_far_positions_differ_from_transformers_by_its_float32_angles(qwen2_vl):
    # transformers forms p θ_i in float32, so its error grows with p; pe_book's does not
    ids = mrope.mrope_position_ids([*SEGMENTS, ("text", 2000)])  # ids up to 2021
    x = random(1, 2, ids.shape[1], 128, seed=7, dtype=torch.float32)
    exact = mrope.apply_mrope(x.double(), ids, [16, 24, 24])
    ours = mrope.apply_mrope(x, ids, [16, 24, 24])
    theirs, _, _ = qwen2_vl_rotation(qwen2_vl, x, ids, 128, [16, 24, 24])
    assert (ours - exact).abs().max() < 1e-6 < 1e-5 < (theirs - exact).abs().max() < 1e-3


def transformers_ids(qwen2_vl, segments, merge=2):
    """get_rope_index on token types alone (input_ids are never looked up), unbound on a stub."""
    from transformers import Qwen2VLConfig

    config = Qwen2VLConfig(vision_config={"spatial_merge_size": merge})
    stub = types.SimpleNamespace(
        config=config,
        get_vision_position_ids=lambda *a, **kw: qwen2_vl.Qwen2VLModel.get_vision_position_ids(
            None, *a, **kw
        ),
    )
    kinds = {"text": 0, "image": 1, "video": 2}
    types_, grids = [], {"image": [], "video": []}
    for kind, *sizes in segments:
        types_ += [kinds[kind]] * math.prod(sizes)
        if kind != "text":
            grids[kind].append([sizes[0], sizes[1] * merge, sizes[2] * merge])  # pre-merge
    token_types = torch.tensor([types_], dtype=torch.int64)
    ids, _ = qwen2_vl.Qwen2VLModel.get_rope_index(
        stub,
        torch.zeros_like(token_types),
        token_types,
        image_grid_thw=torch.tensor(grids["image"]) if grids["image"] else None,
        video_grid_thw=torch.tensor(grids["video"]) if grids["video"] else None,
    )
    return ids[:, 0]  # (3, L)


def separated(segments):
    """No two images or two videos side by side (the processor puts text between them)."""
    return all(a[0] == "text" or a[0] != b[0] for a, b in itertools.pairwise(segments))


@settings(max_examples=30)
@given(segment_lists.filter(lambda s: s and separated(s)))
def test_position_ids_match_get_rope_index(qwen2_vl, segments):
    # grid_t <= max(grid_h, grid_w): the case where transformers 5.x follows the paper
    segments = [s if s[0] == "text" else (s[0], min(s[1], max(s[2:])), *s[2:]) for s in segments]
    assert torch.equal(mrope.mrope_position_ids(segments), transformers_ids(qwen2_vl, segments))


def test_get_rope_index_moves_on_by_the_larger_side_after_a_long_video(qwen2_vl):
    # transformers 5.x advances by max(grid_h, grid_w) after a vision segment; the paper
    # (and Qwen2-VL's original code) by the largest id + 1, which differs when grid_t is larger.
    segments = [("text", 1), ("video", 4, 1, 2), ("text", 2)]
    ours, theirs = mrope.mrope_position_ids(segments), transformers_ids(qwen2_vl, segments)
    assert torch.equal(ours[:, :-2], theirs[:, :-2])
    gap = ours[:, -2:] - theirs[:, -2:]
    assert gap.unique().tolist() in ([0], [4 - 2])  # 0 if transformers follows the paper again


# --- bad input ---


@pytest.mark.parametrize(
    ("sections", "error", "match"),
    [
        ((4, 6, 5), ValueError, "sections must be three"),
        ((8, 8), ValueError, "sections must be three"),
        ((4, 0, 12), ValueError, r"sections\[1\]"),
        ((4.0, 6, 6), TypeError, r"sections\[0\]"),
        ("466", TypeError, "sections"),
        (16, TypeError, "sections"),
    ],
)
def test_bad_sections_are_refused(sections, error, match):
    with pytest.raises(error, match=match):
        mrope.section_components(32, sections)
    with pytest.raises(error, match=match):
        mrope.MRope(32, sections)


@pytest.mark.parametrize(
    ("position_ids", "error"),
    [
        (torch.zeros(2, 4, dtype=torch.int64), ValueError),
        (torch.zeros(4, dtype=torch.int64), ValueError),
        (torch.zeros(3, 4), TypeError),
        (torch.zeros(3, 4, dtype=torch.bool), TypeError),
        (torch.tensor([[0, 1, -1, 2]] * 3), ValueError),
        ([[0, 1, 2, 3]] * 3, TypeError),
        (torch.zeros(3, 5, dtype=torch.int64), ValueError),  # 5 columns for 4 rows of x
    ],
)
def test_bad_position_ids_are_refused(position_ids, error):
    x = random(4, 32)
    with pytest.raises(error, match="position_ids"):
        mrope.apply_mrope(x, position_ids, (4, 6, 6))
    with pytest.raises(error, match="position_ids"):
        mrope.MRope(32, (4, 6, 6))(x, position_ids)


@pytest.mark.parametrize(
    ("segments", "error", "match"),
    [
        ([("audio", 3)], ValueError, r"segments\[0\]\[0\]"),
        ([("text", 0)], ValueError, r"segments\[0\]\[1\]"),
        ([("text", 2.0)], TypeError, r"segments\[0\]\[1\]"),
        ([("text", 2), ("image", 1, 2)], ValueError, r"segments\[1\]"),
        ([("image", 1, 2, -2)], ValueError, r"segments\[0\]\[3\]"),
        ([3], TypeError, r"segments\[0\]"),
        ("text", TypeError, "segments"),
    ],
)
def test_bad_segments_are_refused(segments, error, match):
    with pytest.raises(error, match=match):
        mrope.mrope_position_ids(segments)


def test_other_bad_arguments_are_refused():
    ids = mrope.mrope_position_ids([("text", 4)])
    with pytest.raises(ValueError, match="start"):
        mrope.mrope_position_ids([("text", 1)], start=-1)
    with pytest.raises(TypeError, match="x"):
        mrope.apply_mrope(torch.zeros(4, 32, dtype=torch.int64), ids, (4, 6, 6))
    with pytest.raises(ValueError, match="layout"):
        mrope.apply_mrope(random(4, 32), ids, (4, 6, 6), layout="adjacent")
    with pytest.raises(ValueError, match="base"):
        mrope.apply_mrope(random(4, 32), ids, (4, 6, 6), base=1.0)
    with pytest.raises(ValueError, match="sections"):
        mrope.apply_mrope(random(4, 30), ids, (4, 6, 6))
    with pytest.raises(ValueError, match="x"):
        mrope.MRope(32, (4, 6, 6))(random(4, 16), ids)
