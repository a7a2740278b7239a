"""pe_book.data: the pinned standard-library corpus, its vocabulary, split and batches."""

import itertools

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from pe_book import data


@pytest.fixture(scope="module")
def corpus():
    return data.load_corpus()


@given(st.text(alphabet=st.characters(min_codepoint=9, max_codepoint=126), max_size=200))
def test_ascii_text_round_trips(text):
    text = "".join(c for c in text if c in data.VOCAB)
    assert data.decode(data.encode(text)) == text


def test_characters_outside_the_vocabulary_become_token_0():
    assert data.encode("é\x00x→").tolist() == [0, 0, data.VOCAB.index("x"), 0]
    assert len(data.VOCAB) == 98 and data.VOCAB[1:3] == ("\t", "\n")


def test_pinned_list_is_sorted_without_tests_or_machine_specific_files():
    files = data.pinned_files()
    assert files == sorted(files) and len(files) == len(set(files)) > 400
    assert not any("/test" in f or f.startswith(("test", "idlelib/", "encodings/")) for f in files)
    assert not any(f.startswith("_sysconfigdata_") for f in files)


def test_corpus_split_by_file_and_checksum(corpus):
    assert corpus.train.dtype == torch.uint8 and corpus.vocab_size == 98
    assert 5_000_000 < corpus.train.numel() and 500_000 < corpus.valid.numel()
    assert corpus.valid.numel() < corpus.train.numel() / 5
    # the first file (__future__.py, index 0) is validation text
    assert data.decode(corpus.valid[:3]) == '"""'
    assert len(corpus.checksum) == 64 and data.load_corpus().checksum == corpus.checksum


def test_a_missing_pinned_file_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"__future__\.py"):
        data.load_corpus(tmp_path)


def test_batches_are_reproducible_and_targets_are_the_next_character(corpus):
    offsets = data.batch_offsets(corpus.train.numel(), 16, 4, 3, seed=7)
    assert torch.equal(offsets, data.batch_offsets(corpus.train.numel(), 16, 4, 3, seed=7))
    x, y = data.training_batch(corpus.train, offsets[0], 16)
    assert x.shape == y.shape == (4, 16) and torch.equal(x[:, 1:], y[:, :-1])


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: data.encode(b"x"), TypeError, "text"),
        (lambda: data.decode(torch.tensor([98])), ValueError, "tokens"),
        (lambda: data.batch_offsets(10, 10, 1, 1, seed=0), ValueError, "n_tokens"),
        (lambda: data.batch_offsets(100, 0, 1, 1, seed=0), ValueError, "seq_len"),
        (lambda: data.eval_segments(torch.zeros(5, dtype=torch.uint8), 9, 1), ValueError, "short"),
    ],
)
def test_bad_input_is_refused(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_eval_segments_are_spread_evenly_and_never_overlap():
    tokens = torch.arange(100, dtype=torch.uint8)
    segments = data.eval_segments(tokens, 9, 5)
    assert segments.shape == (5, 10) and segments.dtype == torch.int64
    starts = segments[:, 0].tolist()
    assert starts[0] == 0 and starts[-1] == 90  # the first and the last possible start
    assert all(b - a >= 10 for a, b in itertools.pairwise(starts))
    with pytest.raises(ValueError, match="non-overlapping"):
        data.eval_segments(tokens, 9, 11)


def test_no_evaluation_segment_is_a_copy_of_training_text(corpus):
    """Split by file is not enough when files are near-copies (the generated codec tables
    were: five of the 64 segments occurred verbatim in training). Checked in pieces of 128
    characters: no segment is a copy, and few pieces recur (code does repeat itself)."""
    from pe_book import study

    train = data.decode(corpus.train)
    copied, total = [], 0
    for segment in study._segments(corpus, study.StudyConfig()):
        text = data.decode(segment)
        pieces = [text[i : i + 128] for i in range(0, len(text) - 127, 128)]
        copied.append(sum(piece in train for piece in pieces))
        total += len(pieces)
    assert max(copied) < len(pieces) and sum(copied) / total < 0.05, copied
