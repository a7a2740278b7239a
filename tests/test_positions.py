"""pe_book.positions: the position-method interface and its registry."""

from __future__ import annotations

import inspect

import pytest
import torch

from pe_book import model, positions, results
from pe_book.model import CharLM, ModelConfig
from pe_book.rope_scaling import LinearScaling


def config(position: str) -> ModelConfig:
    return ModelConfig(position, vocab_size=20, dim=16, n_layers=2, n_heads=2, train_len=8)


def test_the_registry_holds_the_book_methods_in_order():
    assert positions.names() == (
        "none", "sinusoidal", "learned", "shaw", "t5", "rope", "alibi",  # the committed study
        "kerple", "fire", "xpos", "p_rope", "cope",  # chapter 10
        "randomized_rope", "irope",  # chapter 10's randomized positions, Llama 4's layer plan
    )
    assert model.POSITIONS == positions.names()
    assert results.STUDIED == positions.names()[:7]  # chapter 10's are registered, not studied


def test_an_unknown_method_is_refused_with_the_known_ones():
    with pytest.raises(ValueError, match="position must be one of"):
        ModelConfig("not-a-method", vocab_size=20)


@pytest.mark.parametrize(
    ("name", "embeds", "biases", "rotates", "own_attention"),
    [
        ("none", False, False, False, False),
        ("sinusoidal", True, False, False, False),
        ("learned", True, False, False, False),
        ("shaw", False, False, False, True),
        ("t5", False, True, False, False),
        ("rope", False, False, True, False),
        ("alibi", False, True, False, False),
    ],
)
def test_each_method_uses_the_hooks_its_chapter_describes(
    name, embeds, biases, rotates, own_attention
):
    method = positions.build(config(name))
    x = torch.randn(2, 8, 16)
    assert (not torch.equal(method.embed(x), x)) is embeds
    bias = method.score_bias(8, 8, torch.float32)
    assert (bias is not None) is biases
    if bias is not None:
        assert bias.shape == (2, 8, 8)
    q, k = torch.randn(2, 2, 8, 8), torch.randn(2, 2, 8, 8)
    rq, rk = method.rotate(q, k)
    assert (not torch.equal(rq, q)) is rotates and (not torch.equal(rk, k)) is rotates
    layer = method.make_attention(config(name))
    assert (type(layer).__name__ == "ShawAttention") is own_attention


def test_a_score_bias_can_place_its_queries_for_decoding():
    for name in ("t5", "alibi"):
        method = positions.build(config(name))
        full = method.score_bias(8, 8, torch.float64)
        last = method.score_bias(1, 8, torch.float64)  # the newest query, with a cache
        assert torch.equal(last, full[:, -1:, :])
        assert torch.equal(method.score_bias(1, 8, torch.float64, start=3), full[:, 3:4, :])


def test_only_rope_takes_an_inference_time_scaling():
    rope_model = CharLM(config("rope"))
    tokens = torch.randint(0, 20, (1, 8))
    before = rope_model(tokens)
    rope_model.set_rope_scaling(LinearScaling(2.0))
    assert not torch.equal(rope_model(tokens), before)
    with pytest.raises(ValueError, match="needs position='rope'"):
        CharLM(config("alibi")).set_rope_scaling(LinearScaling(2.0))


def test_the_model_never_branches_on_a_method_name():
    source = inspect.getsource(model)
    assert "config.position ==" not in source and 'position == "' not in source


def test_a_new_method_is_one_class_and_one_registration(monkeypatch):
    monkeypatch.setattr(positions, "_REGISTRY", dict(positions._REGISTRY))

    @positions.register("double")
    class Double(positions.PositionMethod):
        def embed(self, x):
            return 2 * x

    settings = type("Settings", (), {"position": "double", "n_heads": 2})()
    built = positions.build(settings)
    assert isinstance(built, Double) and float(built.embed(torch.ones(1))) == 2.0
    assert "double" in positions.names()
    with pytest.raises(ValueError, match="registered twice"):
        positions.register("double")(Double)


def test_the_order_does_not_depend_on_which_module_was_imported_first():
    import subprocess
    import sys

    code = (
        "import pe_book.alibi, pe_book.rope; from pe_book import positions;"
        " print(positions.names())"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == str(positions.names())

