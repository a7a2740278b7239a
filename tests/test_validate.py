"""Argument checks: bad input raises TypeError/ValueError naming the argument."""

import math

import pytest
import torch

from pe_book._registry import add, lookup
from pe_book._validate import (
    validate_base,
    validate_choice,
    validate_finite,
    validate_int,
    validate_positive_float,
    validate_tensor,
)


@pytest.mark.parametrize("value", [True, 2.0, "3", None])
def test_check_int_refuses_non_integers(value):
    with pytest.raises(TypeError, match="seq_len must be an int"):
        validate_int("seq_len", value)


def test_check_int_minimum_and_even():
    assert validate_int("dim", 8, minimum=2, even=True) == 8
    with pytest.raises(ValueError, match=r"seq_len must be an int >= 1, got 0"):
        validate_int("seq_len", 0, minimum=1)
    with pytest.raises(ValueError, match="dim must be even"):
        validate_int("dim", 7, even=True)


@pytest.mark.parametrize("value", [0.0, -1.0, math.inf, math.nan])
def test_check_positive_float_refuses_bad_values(value):
    with pytest.raises(ValueError, match="base must be a finite number > 0"):
        validate_positive_float("base", value)


def test_check_positive_float_refuses_bool_and_text():
    with pytest.raises(TypeError, match="base must be a real number"):
        validate_positive_float("base", True)
    with pytest.raises(TypeError, match="base must be a real number"):
        validate_positive_float("base", "10000")


def test_check_choice_lists_the_accepted_values():
    assert validate_choice("layout", "half", ["interleaved", "half"]) == "half"
    with pytest.raises(ValueError, match=r"layout must be one of \['interleaved', 'half'\]"):
        validate_choice("layout", "pairs", ["interleaved", "half"])


def test_check_tensor_rank_dtype_and_type():
    x = torch.zeros(2, 3)
    assert validate_tensor("x", x, ndim=2, floating=True) is x
    with pytest.raises(TypeError, match=r"x must be a torch\.Tensor"):
        validate_tensor("x", [[0.0]])
    with pytest.raises(ValueError, match=r"x must have rank 3 or 4, got shape \(2, 3\)"):
        validate_tensor("x", x, ndim=(3, 4))
    with pytest.raises(ValueError, match="x must have rank >= 3"):
        validate_tensor("x", x, min_ndim=3)
    with pytest.raises(TypeError, match="floating-point"):
        validate_tensor("x", torch.zeros(2, dtype=torch.long), floating=True)


def test_check_finite_refuses_nan_but_allows_minus_infinity():
    validate_finite("bias", torch.tensor([0.0, -math.inf]))
    with pytest.raises(ValueError, match="bias contains NaN"):
        validate_finite("bias", torch.tensor([0.0, math.nan]))


def test_check_tensor_last_dimension_and_base():
    assert validate_tensor("x", torch.zeros(2, 8), last_dim=8).shape == (2, 8)
    with pytest.raises(ValueError, match="x must have last dimension dim=8, got 3"):
        validate_tensor("x", torch.zeros(2, 3), last_dim=8)
    assert validate_base(10000) == 10000.0
    with pytest.raises(ValueError, match=r"base must be a finite number > 1\.0, got 1\.0"):
        validate_base(1)


def test_registry_lookup_lists_known_names_and_add_refuses_a_second_entry():
    table: dict[str, int] = {}
    assert add(table, "a", 1, "thing") == 1
    assert lookup(table, "a", "thing") == 1
    with pytest.raises(KeyError, match=r"unknown thing 'b'; known: \['a'\]"):
        lookup(table, "b", "thing")
    with pytest.raises(ValueError, match="thing 'a' is registered twice"):
        add(table, "a", 2, "thing")
    assert table == {"a": 1}  # the first entry stays
