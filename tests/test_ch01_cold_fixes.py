"""Chapter 1's cold read (why attention cannot see order): the wrong answers that passed
exercise 1.2 now fail, its messages stop blaming float32 (which the statement says is
enough) and explain a NaN, and exercise 1.4 takes arrays and lists as the policy says."""

import pytest
import torch
import torch.nn.functional as F

from pe_book import exercises

NEG_INF = float("-inf")


def _attention(q, k, v, causal, fill=NEG_INF, strict=False):
    """softmax(q kᵀ/√d) v with the bottom-right mask filled with ``fill`` (a right answer
    with -inf); ``strict`` hides a query's own position too."""
    scores = q @ k.T / q.shape[-1] ** 0.5
    if causal:
        q_len, k_len = scores.shape
        last = torch.arange(q_len)[:, None] + (k_len - q_len) - int(strict)
        scores = scores.masked_fill(torch.arange(k_len)[None] > last, fill)
    return torch.softmax(scores, dim=-1) @ v


def _sdpa(q, k, v, causal):
    """The cold reader's answer that wrote no attention at all (it passed all 6 cases)."""
    q_len, k_len = q.shape[0], k.shape[0]
    mask = None
    if causal:
        mask = torch.arange(k_len)[None] <= torch.arange(q_len)[:, None] + (k_len - q_len)
    return F.scaled_dot_product_attention(q[None], k[None], v[None], attn_mask=mask)[0]


def test_pytorchs_whole_attention_fails_exercise_1_2():
    with pytest.raises(exercises.ExerciseMismatch, match="scaled_dot_product_attention"):
        exercises.check_attention(_sdpa)


def test_a_finite_mask_fill_fails_exercise_1_2():
    # -20 passed every randn case (scores of a few units); query 0's one key scores -30
    with pytest.raises(exercises.ExerciseMismatch, match="query 0's one key scores -30"):
        exercises.check_attention(lambda *args: _attention(*args, fill=-20.0))


@pytest.mark.parametrize("fill", [NEG_INF, -1e9], ids=["-inf", "-1e9"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["float64", "float32"])
def test_right_answers_pass_exercise_1_2_in_float32_too(fill, dtype, capsys):
    def answer(q, k, v, causal):
        return _attention(q.to(dtype), k.to(dtype), v.to(dtype), causal, fill=fill)

    exercises.check_attention(answer)
    assert "all 7 cases agree" in capsys.readouterr().out


def test_a_float32_logic_error_is_not_blamed_on_float32():
    def answer(q, k, v, causal):  # a fill of -10: an error of about 1e-4, in float32
        return _attention(q.float(), k.float(), v.float(), causal, fill=-10.0)

    with pytest.raises(exercises.ExerciseMismatch) as raised:
        exercises.check_attention(answer)
    message = str(raised.value)
    assert "the likely cause" not in message and "compute in float64" not in message
    assert "Float32 is not the cause" in message


def test_a_strict_mask_names_the_row_with_no_visible_key():
    with pytest.raises(exercises.ExerciseMismatch, match="no visible key"):
        exercises.check_attention(lambda *args: _attention(*args, strict=True))


def _invisible(weight, seq_len):
    _, _, vh = torch.linalg.svd(weight)
    return torch.arange(seq_len, dtype=weight.dtype)[:, None] * vh[-1]


@pytest.mark.parametrize(
    "convert",
    [lambda t: t.numpy(), lambda t: t.tolist(), lambda t: t.float().numpy()],
    ids=["NumPy array", "list", "float32 NumPy array"],
)
def test_exercise_1_4_judges_arrays_and_lists_like_tensors(convert, capsys):
    exercises.check_invisible_positions(lambda weight, n: convert(_invisible(weight, n)))
    assert "invisible to each of the 3 layers" in capsys.readouterr().out


def test_exercise_1_4_still_fails_what_is_not_numbers():
    with pytest.raises(exercises.ExerciseMismatch, match="a tensor, a NumPy array or a list"):
        exercises.check_invisible_positions(lambda weight, n: "positions")
