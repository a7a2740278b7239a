"""pe_book.exercises: checkers accept right answers, report stubs, and name the first wrong case."""

import numpy as np
import pytest
import torch

from pe_book import exercises, symmetry
from pe_book.attention import attention, causal_mask

# these tests pass the package's own functions as the reader's right answers
pytestmark = pytest.mark.usefixtures("reference_calls_allowed")


def stub(*args):
    raise NotImplementedError


def test_check_reports_a_stub_as_not_attempted(capsys):
    exercises.check_permutation_matrix(stub)
    assert "not attempted yet" in capsys.readouterr().out


def test_permutation_matrix_checker(capsys):
    exercises.check_permutation_matrix(symmetry.permutation_matrix)
    assert "all 11 cases agree" in capsys.readouterr().out
    with pytest.raises(
        exercises.ExerciseMismatch, match=r"case 7 of 11 .*\ninput: perm=\[1, 2, 0\]"
    ):
        exercises.check_permutation_matrix(
            lambda perm: symmetry.permutation_matrix(perm).T
        )  # P⁻¹, not P


def test_attention_checker_accepts_the_package_and_catches_a_missing_scale(capsys):
    exercises.check_attention(lambda q, k, v, causal: attention(q, k, v, causal=causal))
    assert "all 7 cases agree" in capsys.readouterr().out

    def unscaled(q, k, v, causal):
        return torch.softmax(q @ k.T, dim=-1) @ v

    with pytest.raises(exercises.ExerciseMismatch, match=r"case 2 of 7 .*\n.*\n.* entries miss"):
        exercises.check_attention(unscaled)


def test_attention_checker_catches_a_top_left_aligned_mask():
    def top_left(q, k, v, causal):
        scores = q @ k.T / q.shape[-1] ** 0.5
        if causal:
            scores = scores.masked_fill(
                ~torch.ones_like(scores, dtype=torch.bool).tril(), float("-inf")
            )
        return torch.softmax(scores, dim=-1) @ v

    with pytest.raises(
        exercises.ExerciseMismatch, match=r"q \(2, 4\), k \(5, 4\), v \(5, 5\), causal=True"
    ):
        exercises.check_attention(top_left)


def test_recover_positions_checker(capsys):
    exercises.check_recover_positions(lambda share: 1 / share - 1)
    assert "all 5 cases agree" in capsys.readouterr().out
    with pytest.raises(exercises.ExerciseMismatch, match="entries miss"):
        exercises.check_recover_positions(lambda share: 1 / share)  # off by one


def test_a_crash_in_the_readers_code_is_reported_with_the_case():
    with pytest.raises(exercises.ExerciseMismatch, match="raised ZeroDivisionError"):
        exercises.check_recover_positions(lambda share: 1 / 0)


def test_shape_and_type_mismatches_are_explained(capsys):
    with pytest.raises(exercises.ExerciseMismatch, match=r"shape \(1, 1\) where \(1,\) is asked"):
        exercises.check_recover_positions(lambda share: share[:, None])
    with pytest.raises(exercises.ExerciseMismatch, match=r"expected numbers .*, got str"):
        exercises.check_recover_positions(lambda share: "positions")
    exercises.check_recover_positions(lambda share: (1 / share - 1).tolist())  # values count
    assert "all 5 cases agree" in capsys.readouterr().out


def null_space_solution(weight, seq_len):
    _, _, vh = torch.linalg.svd(weight)
    return torch.arange(seq_len, dtype=weight.dtype)[:, None] * vh[-1]


def test_invisible_positions_checker(capsys):
    exercises.check_invisible_positions(null_space_solution)
    assert "invisible to each of the 3 layers" in capsys.readouterr().out
    exercises.check_invisible_positions(stub)
    assert "not attempted yet" in capsys.readouterr().out
    with pytest.raises(exercises.ExerciseMismatch, match="must be at least 1e-3 apart"):
        exercises.check_invisible_positions(lambda weight, seq_len: torch.zeros(seq_len, 4))
    with pytest.raises(exercises.ExerciseMismatch, match="the layer sees your positions"):
        exercises.check_invisible_positions(
            lambda weight, seq_len: (
                torch.arange(seq_len, dtype=torch.float64)[:, None] * torch.ones(4)
            )
        )
    with pytest.raises(exercises.ExerciseMismatch, match="expected numbers of shape"):
        exercises.check_invisible_positions(lambda weight, seq_len: torch.zeros(3))


def test_recover_positions_needs_the_values_not_just_the_length():
    def cheat(share):
        return torch.arange(share.shape[0], dtype=torch.float64)

    with pytest.raises(exercises.ExerciseMismatch, match=r"bos_share\(seq_len=5\)\[2:5\]"):
        exercises.check_recover_positions(cheat)


def test_chapter_2_to_4_checkers_accept_right_and_reject_wrong_answers(capsys):
    from pe_book import sinusoidal, taylor

    exercises.check_taylor_terms(taylor.taylor_terms)
    exercises.check_circle_solution(taylor.circle_solution)
    exercises.check_diagonal_leak(lambda h1, h2: ((h1 + h2) / 2, (h2 - h1) / 2))
    exercises.check_sinusoidal_table(lambda L, d, b: sinusoidal.sinusoidal_table(L, d, b))
    exercises.check_layout_permutation(sinusoidal.layout_permutation)
    exercises.check_turning_pairs(
        lambda n, d, b: int((sinusoidal.wavelengths(d, b) <= n - 1).sum())
    )
    exercises.check_base_for_wavelength(
        lambda d, longest: (longest / (2 * torch.pi)) ** (d / (d - 2))
    )
    exercises.check_shift_matrix(sinusoidal.shift_matrix)
    exercises.check_direction_matrix(lambda: torch.tensor([[0.5, 0.75**0.5], [-(0.75**0.5), 0.5]]))
    out = capsys.readouterr().out
    assert out.count("agree with") == 7 and "knows the direction" in out
    assert "all 4 bases give the wanted longest wavelength" in out
    with pytest.raises(exercises.ExerciseMismatch, match="does not match"):
        exercises.check_sinusoidal_table(
            lambda L, d, b: sinusoidal.sinusoidal_table(L, d, b, "half")
        )
    with pytest.raises(exercises.ExerciseMismatch, match="misses"):
        exercises.check_diagonal_leak(lambda h1, h2: ((h1 + h2) / 2, (h1 - h2) / 2))
    with pytest.raises(exercises.ExerciseMismatch, match="misses"):
        exercises.check_direction_matrix(lambda: torch.eye(2))
    with pytest.raises(exercises.ExerciseMismatch, match="miss"):
        exercises.check_bilinear_terms(lambda w: (1.0, 0.0, 0.0, 0.0))
    with pytest.raises(exercises.ExerciseMismatch, match="does not match"):
        exercises.check_shift_matrix(lambda k, d, b: sinusoidal.shift_matrix(k, d, b).T)


def test_chapter_7_checkers_accept_right_and_reject_wrong_answers(capsys):
    from pe_book import rope, rope_scaling

    exercises.check_rope_rotation(lambda x, positions: rope.apply_rope(x, positions))
    even_then_odd = lambda q: torch.cat((q[..., 0::2], q[..., 1::2]), -1)  # noqa: E731
    interleave = lambda q: torch.stack(q.chunk(2, -1), -1).flatten(-2)  # noqa: E731
    exercises.check_layout_conversion(interleave)  # half -> interleaved
    exercises.check_ntk_frequencies(
        lambda d, b, s: rope_scaling.scaled_frequencies(d, b, rope_scaling.NTKScaling(s))[0]
    )
    assert "not attempted" not in capsys.readouterr().out
    with pytest.raises(exercises.ExerciseMismatch):  # the half layout is not the exercise
        exercises.check_rope_rotation(
            lambda x, positions: rope.apply_rope(x, positions, layout="half")
        )
    with pytest.raises(exercises.ExerciseMismatch):  # no conversion at all
        exercises.check_layout_conversion(lambda q: q)
    with pytest.raises(exercises.ExerciseMismatch):  # odd then even: a sign flips
        exercises.check_layout_conversion(lambda q: torch.cat((q[..., 1::2], q[..., 0::2]), -1))
    with pytest.raises(exercises.ExerciseMismatch, match="goes from half to interleaved"):
        exercises.check_layout_conversion(even_then_odd)  # interleaved -> half
    with pytest.raises(exercises.ExerciseMismatch):  # linear, not NTK-aware
        exercises.check_ntk_frequencies(
            lambda d, b, s: rope_scaling.scaled_frequencies(d, b)[0] / s
        )


def test_chapter_9_checkers_accept_right_and_reject_wrong_answers(capsys):
    from pe_book import alibi

    def masked_bias(q_len, k_len, slopes):  # -inf above the diagonal is fine too
        bias = alibi.alibi_bias(q_len, k_len, slopes)
        return bias.masked_fill(~causal_mask(q_len, k_len), float("-inf"))

    def mean_distance(slope, m):
        weights = alibi.bias_only_weights(torch.tensor([slope]), m)[0]
        return float((weights * torch.arange(m + 1)).sum())

    exercises.check_alibi_slopes(alibi.alibi_slopes)
    exercises.check_decoding_bias(masked_bias)
    exercises.check_mean_distance(mean_distance)
    out = capsys.readouterr().out
    assert "not attempted" not in out and "all 6 cases agree on the entries" in out
    with pytest.raises(exercises.ExerciseMismatch, match="n_heads=3"):  # powers of two only
        exercises.check_alibi_slopes(lambda n: [2 ** (-8 * (h + 1) / n) for h in range(n)])
    with pytest.raises(exercises.ExerciseMismatch, match="q_len=1, k_len=6"):  # no KV offset
        exercises.check_decoding_bias(
            lambda q_len, k_len, s: alibi.alibi_bias(q_len, k_len, s, start=0)
        )
    with pytest.raises(exercises.ExerciseMismatch, match="shape"):
        exercises.check_decoding_bias(lambda q_len, k_len, s: alibi.alibi_bias(q_len, k_len, s)[0])
    with pytest.raises(
        exercises.ExerciseMismatch, match=r"slope=0\.5, m=0"
    ):  # infinite-sum formula
        exercises.check_mean_distance(lambda s, m: 1 / (torch.e**s - 1) if s else m / 2)
    exercises.check_alibi_slopes(stub)
    assert "not attempted yet" in capsys.readouterr().out


def test_chapter_10_checkers_accept_right_and_reject_wrong_answers(capsys):
    import math

    from pe_book.rope_scaling import partial_rotary_frequencies

    def frequencies(dim, p, base, pairs=math.floor, fastest=True):
        theta = base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)
        kept = torch.arange(dim // 2) < pairs(p * dim / 2)
        return torch.where(kept if fastest else kept.flip(0), theta, 0.0)

    exercises.check_p_rope_frequencies(frequencies)  # tests/test_checkers_ch10.py: the rest
    exercises.check_mla_cache_ratio(lambda h, d, c, r: 2 * h * d / (c + r))
    out = capsys.readouterr().out
    assert "not attempted" not in out and out.count("agree with pe_book") == 2
    with pytest.raises(exercises.ExerciseMismatch, match=r"dim=128, p=0\.25"):  # NeoX's spread
        exercises.check_p_rope_frequencies(lambda d, p, b: partial_rotary_frequencies(d, p, b)[0])
    with pytest.raises(exercises.ExerciseMismatch, match=r"dim=10, p=0\.3"):
        exercises.check_p_rope_frequencies(lambda d, p, b: frequencies(d, p, b, pairs=round))
    with pytest.raises(exercises.ExerciseMismatch, match=r"dim=128, p=0\.25"):  # the slow pairs
        exercises.check_p_rope_frequencies(lambda d, p, b: frequencies(d, p, b, fastest=False))
    for slip in (
        lambda h, d, c, r: 2 * h * d / c,  # forgets the shared k^R
        lambda h, d, c, r: 2 * h * d / (c + h * r),  # one k^R per head
        lambda h, d, c, r: h * d / (c + r),  # keys only
    ):
        with pytest.raises(exercises.ExerciseMismatch, match="n_heads=128, d_head=128"):
            exercises.check_mla_cache_ratio(slip)
    exercises.check_mla_cache_ratio(stub)
    assert "not attempted yet" in capsys.readouterr().out


def test_chapter_11_checkers_accept_right_and_reject_wrong_answers(capsys):
    import math

    exercises.check_perplexity(lambda losses: math.exp(sum(losses) / len(losses)))
    exercises.check_short_context_fraction(lambda n, c: min(c, n) / n)

    def degradation(table, train_len):
        longest = table[max(table, key=int)]
        return None if longest is None else longest / table[str(train_len)]

    exercises.check_degradation(degradation)
    assert "not attempted" not in capsys.readouterr().out
    with pytest.raises(exercises.ExerciseMismatch, match=r"losses \[0\.1"):  # mean of exp
        exercises.check_perplexity(lambda losses: sum(math.exp(x) for x in losses) / len(losses))
    with pytest.raises(exercises.ExerciseMismatch, match="seq_len=64, context=100"):
        exercises.check_short_context_fraction(lambda n, c: c / n)  # more than all of them
    with pytest.raises(exercises.ExerciseMismatch, match="another order"):  # last key, not longest
        exercises.check_degradation(
            lambda t, n: None if None in t.values() else list(t.values())[-1] / t[str(n)]
        )


def test_chapter_12_checkers_accept_right_and_reject_wrong_answers(capsys):
    import math

    exercises.check_shaw_parameters(lambda n, k, d, v: n * (2 if v else 1) * (2 * k + 1) * d)
    exercises.check_shaw_table_bytes(lambda length, d: length * length * d * 4)
    exercises.check_scaling_exponent(lambda t1, l1, t2, l2: math.log(t2 / t1) / math.log(l2 / l1))
    assert "not attempted" not in capsys.readouterr().out
    with pytest.raises(exercises.ExerciseMismatch, match="max_offset=16"):  # 2K, not 2K + 1
        exercises.check_shaw_parameters(lambda n, k, d, v: n * (2 if v else 1) * 2 * k * d)
    with pytest.raises(exercises.ExerciseMismatch, match="seq_len=4"):  # the table, not the gather
        exercises.check_shaw_table_bytes(lambda length, d: 33 * d * 4)
    with pytest.raises(exercises.ExerciseMismatch, match="the same time"):
        exercises.check_scaling_exponent(lambda t1, l1, t2, l2: (t2 / t1) / (l2 / l1))


def _offset_only(score):
    generator = torch.Generator().manual_seed(0)
    for _ in range(5):
        q, k = torch.randn(2, 8, generator=generator, dtype=torch.float64)
        m, n = (int(x) for x in torch.randint(0, 1000, (2,), generator=generator))
        shift = int(torch.randint(1, 1000, (1,), generator=generator))
        if abs(score(q, k, m, n) - score(q, k, m + shift, n + shift)) > 1e-9:
            return False
    return True


def test_chapter_13_checkers_accept_right_and_reject_wrong_answers(capsys):
    def extra(record):
        if record["full_by_bin"] is None:
            return None
        full = np.asarray(record["full_by_bin"])[:, 1:].mean(1)
        return full - np.asarray(record["capped_by_bin"]).mean(1)

    def cheapest(extra, cost, tolerance):
        keepers = [p for p, e in extra.items() if e <= tolerance]
        return min(keepers, key=cost.get) if keepers else None

    exercises.check_offset_only(_offset_only)
    exercises.check_extra_context(extra)
    exercises.check_cheapest_keeper(cheapest)
    assert "not attempted" not in capsys.readouterr().out
    with pytest.raises(exercises.ExerciseMismatch, match="sinusoidal"):  # shift by one only
        exercises.check_offset_only(lambda score: True)
    with pytest.raises(exercises.ExerciseMismatch, match="no full context"):
        exercises.check_extra_context(
            lambda r: [0.0] * len(r["capped_by_bin"]) if r["full_by_bin"] is None else extra(r)
        )  # treats "cannot run" as "costs nothing"
    with pytest.raises(exercises.ExerciseMismatch, match="a cheaper Shaw"):
        exercises.check_cheapest_keeper(lambda e, c, t: min(e, key=e.get))  # ignores t


def test_a_course_adds_an_exercise_with_the_public_check_and_no_package_edit(capsys):
    from pe_book.exercises import Case, ExerciseMismatch, check

    cases = [Case((3,), "x = 3"), Case((0.5,), "x = 0.5", expected=1.0)]

    def stub(x):
        raise NotImplementedError

    check("double", stub, lambda x: 2 * x, cases, against="the course's answer")
    assert "double: not attempted yet." in capsys.readouterr().out
    check("double", lambda x: x + x, lambda x: 2 * x, cases, against="the course's answer")
    assert "all 2 cases agree with the course's answer" in capsys.readouterr().out
    with pytest.raises(ExerciseMismatch, match="case 1 of 2 does not match"):
        check("double", lambda x: x * 3, lambda x: 2 * x, cases)


CHECKERS = sorted(name for name in exercises.__all__ if name.startswith("check_"))


@pytest.mark.parametrize("name", CHECKERS)
def test_every_checker_reports_a_stub_as_not_attempted(name, capsys):
    getattr(exercises, name)(stub)
    out = capsys.readouterr().out
    assert out == (
        f"{name.removeprefix('check_')}: not attempted yet.\n"
        "  Replace the stub's `raise NotImplementedError` with your code (the statement\n"
        "  above says what to return), then rerun this cell.\n"
    )


@pytest.mark.parametrize("name", CHECKERS)
def test_every_checker_names_itself_when_an_answer_is_wrong(name):
    def wrong(*args):
        return "not an answer"

    with pytest.raises(exercises.ExerciseMismatch) as raised:
        getattr(exercises, name)(wrong)
    assert str(raised.value).startswith(name.removeprefix("check_") + ": ")


def test_each_checker_lives_in_its_chapters_module():
    import importlib
    import pkgutil

    modules = [m.name for m in pkgutil.iter_modules(exercises.__path__) if m.name[:2] == "ch"]
    assert len(modules) == 14, modules  # chapters 1 to 14
    homes = {}
    for module_name in modules:
        module = importlib.import_module(f"pe_book.exercises.{module_name}")
        chapter = int(module_name[2:4])
        for name in module.__all__:
            homes[name] = module_name
            assert getattr(exercises, name) is getattr(module, name)
            doc = getattr(module, name).__doc__
            assert doc.startswith(f"Chapter {chapter}:"), (name, doc[:20])
    assert sorted(homes) == CHECKERS  # no checker outside a chapter module, none missing


def test_a_grader_prefixes_its_name_and_prints_its_verdict(capsys):
    from pe_book.exercises.grading import ExerciseMismatch, attempt, grader

    @grader
    def check_even(reader):
        for n in (2, 4):
            if attempt(reader, n) % 2:
                raise ExerciseMismatch(f"n={n} gave an odd number")
        return "both even."

    check_even(lambda n: n)
    assert capsys.readouterr().out == "even: both even.\n"
    with pytest.raises(ExerciseMismatch, match=r"^even: n=2 gave an odd number$"):
        check_even(lambda n: n + 1)
    check_even(stub)
    assert capsys.readouterr().out.startswith("even: not attempted yet.")


# ---- checkers that say what they test (issue 17) ----------------------------------------


def _profile(offsets, dim, base, angle_dtype=torch.float64):
    """The reader's-eye formula, with θ and the angles in ``angle_dtype``."""
    theta = base ** (-torch.arange(0, dim, 2, dtype=angle_dtype) / dim)
    return torch.cos(offsets.to(angle_dtype)[:, None] * theta).mean(-1).double()


def test_a_dtype_alone_never_fails(capsys):  # the book's policy (issue 23): values count
    exercises.check_permutation_matrix(lambda p: symmetry.permutation_matrix(p).double())
    exercises.check_recover_positions(lambda share: (1 / share - 1).float())
    exercises.check_dot_profile(lambda *a: _profile(*a).float())
    assert capsys.readouterr().out.count("cases agree") == 3


def test_float32_angles_are_rejected_and_named(capsys):
    with pytest.raises(exercises.ExerciseMismatch, match=r"float32.* the likely cause"):
        exercises.check_dot_profile(lambda *a: _profile(*a, angle_dtype=torch.float32))
    exercises.check_dot_profile(_profile)
    assert "all 4 cases agree" in capsys.readouterr().out

    def table(seq_len, dim, base, angle_dtype=torch.float64):
        pos = torch.arange(seq_len, dtype=angle_dtype)[:, None]
        angle = pos * base ** (-torch.arange(0, dim, 2, dtype=angle_dtype) / dim)
        return torch.stack((angle.sin(), angle.cos()), -1).flatten(-2)

    with pytest.raises(exercises.ExerciseMismatch, match=r"float32.* the likely cause"):
        exercises.check_sinusoidal_table(lambda *a: table(*a, angle_dtype=torch.float32))
    exercises.check_sinusoidal_table(lambda *a: table(*a).float())  # a float32 table is fine
    assert "cases agree" in capsys.readouterr().out


def test_reach_checker_tests_the_boundary_and_the_no_answer_branch():
    offsets = torch.arange(100_001)

    def reach(dim, base, level, strict=False, missing=-1):
        values = _profile(offsets, dim, base)
        hits = torch.nonzero(values < level if strict else values <= level)
        return int(hits[0, 0]) if hits.numel() else missing

    exercises.check_reach(reach)
    with pytest.raises(exercises.ExerciseMismatch, match=r"level=1\.0"):
        exercises.check_reach(lambda *a: reach(*a, strict=True))  # '<' instead of '<='
    with pytest.raises(exercises.ExerciseMismatch, match=r"level=-1\.0"):
        exercises.check_reach(lambda *a: reach(*a, missing=100_001))


def test_a_wavelength_mismatch_names_the_wavelength_reached():
    with pytest.raises(exercises.ExerciseMismatch, match=r"turn once in .* positions, not 62,8"):
        exercises.check_base_for_wavelength(lambda dim, longest: longest)  # the base = λ


def test_large_tensors_are_summarised_by_their_first_difference():
    from pe_book import relative

    def shifted(offset, bidirectional, num_buckets, max_distance):
        out = relative.t5_bucket(offset, bidirectional, num_buckets, max_distance).clone()
        out[-1] += 1
        return out

    with pytest.raises(exercises.ExerciseMismatch) as raised:
        exercises.check_t5_bucket(shifted)
    message = str(raised.value)
    assert "the first at index [600] (offset r = 300)" in message
    assert message.count(",") < 80  # no 601-entry dump


def test_counts_are_not_truncated():
    from pe_book import relative  # noqa: F401  (the reference builds Shaw's layer)

    with pytest.raises(exercises.ExerciseMismatch, match="whole number of bytes, got"):
        exercises.check_shaw_table_bytes(lambda seq_len, d_head: seq_len**2 * d_head * 4 + 0.5)


def test_perplexity_cases_speak_of_losses():
    with pytest.raises(exercises.ExerciseMismatch, match=r"input: losses \["):
        exercises.check_perplexity(lambda losses: sum(losses))


def test_review_checkers_catch_a_one_pair_test_at_most_and_negative_extras():
    import math

    def one_pair(score):  # tests a single (m, n) and one shift
        q, k = torch.ones(8, dtype=torch.float64), torch.ones(8, dtype=torch.float64)
        return math.isclose(score(q, k, 3, 1), score(q, k, 67, 65), abs_tol=1e-9)

    with pytest.raises(exercises.ExerciseMismatch, match="periodic"):
        exercises.check_offset_only(one_pair)

    def with_first_bin(record):
        if record["full_by_bin"] is None:
            return None
        full = np.asarray(record["full_by_bin"]).mean(1)
        return full - np.asarray(record["capped_by_bin"]).mean(1)

    with pytest.raises(exercises.ExerciseMismatch, match="first bin"):
        exercises.check_extra_context(with_first_bin)

    def absolute(extra, cost, tolerance):
        keepers = [m for m, loss in extra.items() if abs(loss) <= tolerance]
        return min(keepers, key=cost.__getitem__) if keepers else None

    with pytest.raises(exercises.ExerciseMismatch, match="better"):
        exercises.check_cheapest_keeper(absolute)
