"""Pattern entries drawn at random from the shapes the builder template renders, with the values a spec
may hold, spelt the ways a spec or `repr` may spell them, at lengths around black's line length.

Used to test that generator/building/entry_layout.py lays an entry out exactly as black does, or not at all
(tests/test_entry_layout.py); `python -m tests.support.random_entries N` runs N of them.
"""

from __future__ import annotations

import random
import string
import sys

INDENT = " " * 12  # where the template puts an entry (generator/entry_layout.INDENT)

_SETTERS = [
    ".set_observation_type",
    ".set_root_module",
    ".set_qat_module",
    ".set_reference_quantized_module",
    ".set_fused_module",
    ".set_fuser_method",
    "._set_root_node_getter",
    "._set_extra_inputs_getter",
    "._set_pattern_complex_format",
    "._set_input_type_to_index",
]
_NUMBERS = ["0", "1", "2", "12", "-1", "0.5", "1e-05", "1.5e-07", "2", "255", "-128", "1_000", "3.0"]
# Spellings black writes otherwise, or that need more than a name, a number or a plain string.
_ODD_NUMBERS = ["1E5", ".5", "1.", "0xff", "0XFF", "1e+5", "1j", "0o17", "1.5E-3", "00"]
_ODD_STRINGS = ["'it\"s'", "u'x'", "b'x'", "r'x'", "'a\\'b'", "f'x'", '"""x"""', "'tab\\t'", "'é'"]
_ODD_JOINS = [" , ", ",", " ,", "  ", " = "]
_COMMENTS = ["# conv", "# other", "# Registered twice: torch keeps this first position with the later config."]
_ODD_COMMENTS = ["#no space", "#", "#  two spaces", "# fmt: off", "# type: ignore", "# yapf: disable", "#: sphinx"]
# Items black splits or moves: one with brackets past the line length, two on one line.
_ODD_ITEMS = ["0: f(" + "a" * 80 + "),", "0: (" + "b" * 40 + ", " + "c" * 40 + "),", "0: A, 1: B,", "0: [a],"]
# Characters str.strip() takes for space: Python parses \x1c-\x1f nowhere, black drops the others at a line's end.
_CONTROLS = "\x1c\x1d\x1f\x0b\x0c\t\r"


class Entries:
    """A source of random entries (seeded: the same seed gives the same entries)."""

    def __init__(self, seed: int):
        self.random = random.Random(seed)

    def length(self) -> int:
        """Mostly short, often long enough to reach the line length with what surrounds it."""
        return self.random.choice([1, 2, 3, 5, 8, 12, 20]) if self.random.random() < 0.6 else self.random.randint(1, 80)

    def name(self, length: int | None = None) -> str:
        length = length or self.length()
        first = self.random.choice(string.ascii_letters + "_")
        rest = string.ascii_letters + string.digits + "_"
        return first + "".join(self.random.choice(rest) for _ in range(length - 1))

    def dotted(self) -> str:
        return ".".join(self.name(self.random.randint(1, 12)) for _ in range(self.random.randint(1, 4)))

    def keyword(self) -> str:
        return self.random.choice(["None", "True", "False", "lambda", "not", "is", "and", "in", "if"])

    def number(self) -> str:
        return self.random.choice(_ODD_NUMBERS if self.random.random() < 0.15 else _NUMBERS)

    def string(self) -> str:
        if self.random.random() < 0.15:
            return self.random.choice(_ODD_STRINGS)
        text = "".join(self.random.choice(string.ascii_letters + " _.-:") for _ in range(self.length() // 2))
        return f"'{text}'" if self.random.random() < 0.5 else f'"{text}"'

    def value(self, depth: int = 0) -> str:
        nested = depth < 2
        kinds = ["name", "dotted", "number", "string", "keyword"] + ["tuple", "call", "list", "dict", "parens"] * nested
        kind = self.random.choices(kinds, weights=[6, 6, 2, 2, 1] + [3, 3, 1, 1, 1] * nested)[0]
        if kind == "name":
            return self.name()
        if kind == "dotted":
            return self.dotted()
        if kind == "number":
            return self.number()
        if kind == "string":
            return self.string()
        if kind == "keyword":
            return self.keyword()
        items = [self.value(depth + 1) for _ in range(self.random.randint(1, 4))]
        if kind == "parens":  # redundant ones, which black may remove
            return f"({items[0]})"
        if kind == "tuple":
            return f"({items[0]},)" if len(items) == 1 else f"({self.join(items)})"
        if kind == "list":
            return f"[{self.join(items)}]"
        if kind == "dict":
            return "{" + self.join(f"{self.value(depth + 1)}: {item}" for item in items) + "}"
        keywords = [f"{self.name(self.random.randint(1, 10))}={v}" for v in items[self.random.randint(0, len(items)) :]]
        return f"{self.dotted()}({self.join(items[: len(items) - len(keywords)] + keywords)})"

    def join(self, items) -> str:
        return (self.random.choice(_ODD_JOINS) if self.random.random() < 0.03 else ", ").join(items)

    def dtype_configs(self) -> str:
        count = self.random.choice([1, 1, 2, 3, 4, 6])
        return f".set_dtype_configs([{', '.join(self.name() for _ in range(count))}])"

    def exploded_dict(self) -> list[str]:
        """`._set_num_tensor_args_to_observation_type(` with a dict one item a line, as the template renders it."""
        items = [f"    {self.number()}: ObservationType.{self.name()}," for _ in range(self.random.randint(1, 3))]
        if self.random.random() < 0.1:
            items.insert(self.random.randint(0, len(items)), self.random.choice(_ODD_ITEMS))
        return [f"._set_{self.name()}(", "{", *items, "}", ")"]

    def entry(self) -> str:
        """One entry: comments, `BackendPatternConfig(...)`, its setters, then `,` on a line of its own."""
        comments = [
            self.random.choice(_ODD_COMMENTS if self.random.random() < 0.1 else _COMMENTS)
            for _ in range(self.random.choice([0, 0, 1, 1, 2]))
        ]
        pattern = "" if self.random.random() < 0.1 else self.value(1 if self.random.random() < 0.5 else 0)
        segments = [f"BackendPatternConfig({pattern})"]
        for _ in range(self.random.choice([0, 1, 1, 2, 2, 3, 5])):
            segments.append(f"{self.random.choice(_SETTERS)}({self.value()})")
        if self.random.random() < 0.8:
            segments.insert(self.random.randint(1, len(segments)), self.dtype_configs())
        lines = [*comments, *segments]
        if self.random.random() < 0.15:
            lines += self.exploded_dict()
        if self.random.random() < 0.05:  # a space black removes, or two calls on one line
            index = self.random.randrange(len(lines))
            lines[index] = self.random.choice([lines[index] + " ", lines[index].replace("(", "( ", 1)])
        if self.random.random() < 0.03:  # a control character at either end of a line
            index, control = self.random.randrange(len(lines)), self.random.choice(_CONTROLS)
            lines[index] = self.random.choice([lines[index] + control, control + lines[index]])
        return "".join(f"{INDENT}{line}\n" for line in lines) + ",\n"


def check(count: int, seed: int = 0) -> tuple[int, int, list[str]]:
    """(entries, entries laid out, entries whose layout is not black's) for `count` random entries."""
    import black

    from generator.building import entry_layout, formatting

    source = Entries(seed)
    entries = [source.entry() for _ in range(count)]
    layouts = {e: entry_layout.laid_out(e) for e in entries}
    predicted = [e for e in entries if layouts[e] is not None]
    wrapped = formatting._WRAP_HEAD + "".join(formatting._ENTRY_LINE + e for e in predicted) + formatting._WRAP_TAIL
    by_black = black.format_str(wrapped, mode=black.Mode())
    if not (by_black.startswith(formatting._WRAP_HEAD) and by_black.endswith(formatting._WRAP_TAIL)):
        raise AssertionError("black did not keep the wrapper")
    formatted = by_black[len(formatting._WRAP_HEAD) : -len(formatting._WRAP_TAIL)].split(formatting._FORMATTED_MARKER)
    assert formatted[0] == "" and len(formatted) == len(predicted) + 1
    wrong = [e for e, f in zip(predicted, formatted[1:]) if layouts[e] != f]
    return len(entries), len(predicted), wrong


if __name__ == "__main__":
    total, laid, wrong = check(int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 0)
    print(f"{total} entries, {laid} laid out, {len(wrong)} not as black lays them out")
    for text in wrong[:5]:
        print(text)
