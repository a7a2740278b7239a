"""pe_book.model: every position mode trains, is causal, and fails clearly where it must."""

import pytest
import torch

from pe_book import data
from pe_book.model import POSITIONS, CharLM, ModelConfig
from pe_book.rope_scaling import YaRNScaling
from pe_book.seed import seed_everything

SMALL = dict(vocab_size=len(data.VOCAB), dim=32, n_layers=2, n_heads=4, train_len=16)


def small(position, **changes):
    seed_everything(0)
    return CharLM(ModelConfig(position, **(SMALL | changes)))


@pytest.fixture(scope="module")
def text():
    return data.encode("def f(x):\n    return x + 1\n" * 200)


@pytest.mark.parametrize("position", POSITIONS)
def test_each_mode_trains_and_the_loss_falls(position, text):
    model = small(position)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    offsets = data.batch_offsets(text.numel(), 16, 8, 30, seed=0)
    losses = []
    for step in range(30):
        loss = model.loss(*data.training_batch(text, offsets[step], 16))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert sum(losses[-5:]) / 5 < 0.5 * losses[0]


@pytest.mark.parametrize("position", POSITIONS)
def test_logits_never_depend_on_later_tokens(position):
    model = small(position).eval()
    generator = torch.Generator().manual_seed(3)
    tokens = torch.randint(0, len(data.VOCAB), (2, 16), generator=generator)
    changed = tokens.clone()
    changed[:, 9:] = torch.randint(0, len(data.VOCAB), (2, 7), generator=generator)
    with torch.no_grad():  # the same seed: randomized positions draw the same sample
        a = (torch.manual_seed(0), model(tokens))[1]
        b = (torch.manual_seed(0), model(changed))[1]
    assert torch.allclose(a[:, :9], b[:, :9], atol=1e-5)
    assert not torch.allclose(a[:, 9:], b[:, 9:], atol=1e-3)


@pytest.mark.parametrize("position", ["none", "sinusoidal", "shaw", "t5", "rope", "alibi"])
def test_modes_other_than_learned_run_past_the_training_length(position):
    with torch.no_grad():
        assert small(position)(torch.zeros(1, 64, dtype=torch.int64)).shape == (1, 64, 98)


def test_learned_refuses_lengths_past_its_table():
    model = small("learned")
    model(torch.zeros(1, 16, dtype=torch.int64))
    with pytest.raises(ValueError, match="max_len=16"):
        model(torch.zeros(1, 17, dtype=torch.int64))


def test_modes_share_everything_but_position_parameters():
    counts = {p: sum(t.numel() for t in small(p).parameters()) for p in POSITIONS}
    base = counts["none"]
    assert counts["sinusoidal"] == counts["rope"] == counts["alibi"] == base
    assert counts["learned"] == base + 16 * 32  # the table
    assert counts["t5"] == base + 32 * 4  # 32 buckets x 4 heads
    assert counts["shaw"] == base + 2 * 2 * (2 * 16 + 1) * 8  # 2 layers, key + value tables
    # chapter 10: r1, r2 per head; FIRE's MLP 1 -> 32 -> 4 heads plus beta and T's multiplier;
    # CoPE's table of P + 1 = 17 rows of d_head = 8 in each of the 2 layers
    assert counts["xpos"] == counts["p_rope"] == base
    assert counts["kerple"] == base + 2 * 4
    assert counts["fire"] == base + (32 + 32) + (32 * 4 + 4) + 2
    assert counts["cope"] == base + 2 * (16 + 1) * 8


def test_rope_scaling_swaps_angles_without_retraining():
    model = small("rope").eval()
    tokens = torch.randint(0, 98, (1, 40), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        before = model(tokens)
        model.set_rope_scaling(YaRNScaling(4.0, original_max_len=16))
        after = model(tokens)
    assert not torch.allclose(before, after)
    with pytest.raises(ValueError, match="position='rope'"):
        small("alibi").set_rope_scaling(None)


@pytest.mark.parametrize(
    ("changes", "message"),
    [({"position": "not-a-method"}, "position"), ({"dim": 30}, "dim"), ({"n_heads": 0}, "n_heads")],
)
def test_bad_config_is_refused(changes, message):
    with pytest.raises((ValueError, TypeError), match=message):
        ModelConfig(**({"position": "none"} | SMALL | changes))


def test_tokens_must_be_int64_batches():
    with pytest.raises(TypeError, match="int64"):
        small("none")(torch.zeros(1, 4, dtype=torch.int32))
