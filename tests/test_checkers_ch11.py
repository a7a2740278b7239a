"""Exercise 11.3's checker: the right verdict rule passes, each known wrong rule fails."""

import pytest

from pe_book import exercises


def right(low, high, margin):
    if high < -margin:
        return "uses it"
    if high <= margin:
        return "keeps its quality"
    if low > margin:
        return "hurt by it"
    return "inconclusive"


def by_the_mean(low, high, margin):  # ignores the interval's width
    mean = (low + high) / 2
    if mean < -margin:
        return "uses it"
    return "keeps its quality" if mean <= margin else "hurt by it"


WRONG = {
    "decides by the mean": by_the_mean,
    "strict at the upper margin": lambda lo, hi, m: right(lo, hi, m) if hi != m else "inconclusive",
    "hurt when the lower end touches the margin": (
        lambda lo, hi, m: "hurt by it" if lo >= m else right(lo, hi, m)
    ),
    "uses it when the upper end touches minus the margin": (
        lambda lo, hi, m: "uses it" if hi <= -m else right(lo, hi, m)
    ),
    "ignores the margin": lambda lo, hi, m: right(lo, hi, 0.0),
}


def test_the_right_rule_passes(capsys):
    exercises.check_context_effect(right)
    assert "all 9 cases agree" in capsys.readouterr().out


@pytest.mark.parametrize("name", WRONG)
def test_a_known_wrong_rule_fails(name):
    with pytest.raises(exercises.ExerciseMismatch):
        exercises.check_context_effect(WRONG[name])
