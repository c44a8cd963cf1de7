"""generator/loading/plain_values.py: the pickler's quick answer is always the walk's answer.

A load asks the pickler first (`_all_plain`) and walks in Python (`_first_odd`) only to locate
a value it refused. Here both see random structures of the model's classes, containers, dicts,
plain values, subclasses of built-in types and classes pickle cannot write by name, and must agree.
"""

import random
from dataclasses import dataclass

from generator.loading import plain_values
from generator.model import SourceLocation, TorchRef


class _Text(str):
    pass


class _Count(int):
    pass


class _Pair(tuple):
    pass


@dataclass(frozen=True)
class _Other:
    """A dataclass not of the model: both go through its fields too."""

    value: object


def _unnamed_class():
    class Local:  # pickle cannot write it by name: the pickler fails and the walk answers
        pass

    return Local


def _plain_leaf(rng: random.Random):
    return rng.choice(["conv", 3, 2.5, True, None, b"x", SourceLocation("spec/x.py", 4), _Other])


def _odd_leaf(rng: random.Random):
    return rng.choice([_Text("conv"), _Count(3), _Pair((1, 2)), _unnamed_class()(), _unnamed_class()])


def _structure(rng: random.Random, depth: int, odd_chance: float):
    if depth == 0 or rng.random() < 0.3:
        return _odd_leaf(rng) if rng.random() < odd_chance else _plain_leaf(rng)
    items = [_structure(rng, depth - 1, odd_chance) for _ in range(rng.randint(0, 3))]
    shape = rng.choice(["tuple", "list", "dict", "frozenset", "ref", "other"])
    if shape == "dict":
        return {f"k{i}": item for i, item in enumerate(items)}
    if shape == "frozenset":
        return frozenset(item for item in items if type(item) in (str, int, float, bool, type(None), bytes))
    if shape == "ref":
        return TorchRef("torch.nn.Conv2d", location=items[0] if items else None)
    if shape == "other":
        return _Other(tuple(items))
    return tuple(items) if shape == "tuple" else items


def test_the_pickler_and_the_walk_agree_on_random_structures():
    rng = random.Random(20)
    answers = set()
    for case in range(3000):
        value = _structure(rng, rng.randint(0, 5), rng.choice([0.0, 0.02, 0.2]))
        shared = [value, value]  # one object twice: both must still see it
        walked = plain_values._first_odd(shared) is None
        assert plain_values._all_plain(shared) is walked, (case, value)
        answers.add(walked)
    assert answers == {True, False}


def test_an_odd_value_behind_a_class_pickle_cannot_write_is_still_found():
    value = (_unnamed_class(), {"fused": TorchRef(_Text("torch.ao.nn.intrinsic.ConvReLU2d"))})
    assert plain_values._first_odd(value) is not None
    assert plain_values._all_plain(value) is False
