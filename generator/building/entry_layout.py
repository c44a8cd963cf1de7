"""Part of stage 4: lay a pattern entry out exactly as black does, so that black need not run.

A pattern entry rendered by the builder template (one call per line, the comma
on a line of its own) is never black's layout. `laid_out` gives black's layout
of an entry for the shapes the template renders, or None when it cannot be sure:
then black formats the entry. A layout it gives is written as it is, without
black (generator/building/formatting.py), so it must be black's output byte for byte:

- Line breaks and indentation follow black's rules for these shapes (one line
  when it fits; a chain of two or more calls split before each `.method`; a
  call split at its bracket; a list of names that does not fit, one name a
  line with black's trailing comma; a dict kept open by its trailing comma).
- Every line is spelt as black spells it (`_spelt_as_black`): only names,
  plain double-quoted strings, decimal numbers in black's form, brackets,
  commas, dots, keyword `=`, dict `:` and unary minus, spaced as black spaces
  them, and own-line comments that start with `# `. Anything else (another
  operator, a keyword, a number or string black would respell, a backslash,
  non-ASCII text, a control character (a tab too), `# fmt:`/`# type:`/`# yapf:`
  comments, a trailing comma already there) gets no layout.

tests/test_entry_layout.py compares it with black for every entry of the
committed spec, around every length where a rule changes (87 to 90
characters), and for thousands of entries drawn at random from these shapes.
"""
from __future__ import annotations

import functools
import keyword
import re

LINE_LENGTH = 88  # black's default, which formatting.format_block uses
INDENT = " " * 12  # where the builder template puts its pattern entries; see formatting._ENTRY_INDENT

# A string, from left to right, so that quotes inside another string are not taken for one; a single-quoted
# one with no quotes inside is a plain string, which black writes with double quotes.
_STRING = re.compile(r"\"[^\"\n]*\"|'([^'\"\n]*)'|'[^'\n]*'")
_OPENING_CALL = re.compile(r"\.[A-Za-z_][A-Za-z0-9_]*\(")  # a call whose argument follows on the next lines
_CALL = re.compile(r"\.?[A-Za-z_][A-Za-z0-9_]*\(")  # a segment starts with a call: `Name(` or `.name(`
_MAGIC_COMMA = re.compile(r",\s*[)\]}]")
_NAME_LIST = re.compile(r"\[((?:[A-Za-z_][A-Za-z0-9_]*, )*[A-Za-z_][A-Za-z0-9_]*)\]")
# One `key: value,` a line, neither with brackets: black keeps it as it is, however long.
_DICT_ITEM = re.compile(r"-?[A-Za-z0-9_.]+: -?[A-Za-z0-9_.]+,")
_SPECIAL_COMMENT = re.compile(r"(fmt|type|yapf)\s*:", re.IGNORECASE)
# Printable ASCII but a backslash, and newlines: str.strip() takes a tab, \r, \f, \v and \x1c-\x1f for space,
# and Python parses the last four nowhere; black is left to judge each.
_PRINTABLE = re.compile(r"[\x20-\x5b\x5d-\x7e\n]*")


def laid_out(entry: str) -> str | None:
    """The entry (own-line comments, then `Call(...)` and `.method(...)` lines, then a line holding `,`)
    as black lays it out at the template's indentation; None when its shape is not one this predicts."""
    if not _PRINTABLE.fullmatch(entry) or not entry.endswith("\n,\n") or _SPECIAL_COMMENT.search(entry):
        return None
    comments, segments = [], []
    lines = iter(entry[: -len("\n,\n")].split("\n"))
    for line in lines:
        text = line.strip()
        if text.startswith("#") and not segments:
            comments.append(INDENT + text + "\n")
        elif _is_segment(text, first=not segments):
            segments.append(_double_quoted(text))
        elif segments and _OPENING_CALL.fullmatch(text):
            segments.append(_exploded_dict(text, lines))
        else:
            return None
    if not segments or None in segments:
        return None
    if any(("'" in s or '"' in s) and not _plain_strings_only(s) for s in segments):
        return None
    code = _code_lines(segments)
    if code is None or not _spelt_as_black(comments, code):
        return None
    return "".join(comments) + "".join(line + "\n" for line in code)


def _exploded_dict(opening: str, lines) -> str | None:
    """A call whose argument is a dict with a trailing comma, one item a line (the template renders it so):
    the trailing comma makes black keep it open, whatever its length, at the next two indentation levels.
    Only items black cannot split (no brackets, one a line) are predicted."""
    body = []
    for line in lines:
        body.append(line)
        if line.strip() == ")":
            break
    texts = [line.strip() for line in body]
    if len(texts) < 4 or texts[:1] != ["{"] or texts[-2:] != ["}", ")"]:
        return None
    if not all(_DICT_ITEM.fullmatch(text) for text in texts[1:-2]):
        return None
    items = [INDENT + " " * 8 + text for text in texts[1:-2]]
    return "\n".join([opening, INDENT + "    {", *items, INDENT + "    }", INDENT + ")"])


def _is_segment(text: str, first: bool) -> bool:
    """`Name(...)` first, `.name(...)` after: one call whose brackets close at the end and nowhere before."""
    call = _CALL.match(text)
    if not call or text.startswith(".") == first or "#" in text or _MAGIC_COMMA.search(text):
        return False
    depth = 0
    for index in range(call.end() - 1, len(text)):
        char = text[index]
        depth += (char in "([{") - (char in ")]}")
        if depth == 0:
            return index == len(text) - 1
        if depth < 0:
            return False
    return False


def _double_quoted(segment: str) -> str:
    """The segment with each plain single-quoted string written with double quotes, as black writes it."""
    return _STRING.sub(lambda string: string[0] if string[1] is None else f'"{string[1]}"', segment)


def _plain_strings_only(segment: str) -> bool:
    """Every quote in the segment belongs to a plain double-quoted string (no quotes or escapes inside)."""
    return '"' not in re.sub(r'"[^\'"\\\n]*"', "", segment) and "'" not in re.sub(r'"[^\'"\\\n]*"', "", segment)


def _code_lines(segments: list[str]) -> list[str] | None:
    """black's lines for `segments` joined, with the list's trailing comma, at INDENT.

    One line when it fits. Else black splits the chain before each `.method`
    when there are two or more. When there is one, it splits at that call's
    bracket (its arguments on a line of their own, one level deeper), or, when
    the line that opens it does not fit, at the first call's bracket, the
    second call staying on the closing line.
    """
    whole = INDENT + "".join(segments) + ","
    exploded = any("\n" in segment for segment in segments)
    if len(whole) <= LINE_LENGTH and not exploded:
        return [whole]
    if len(segments) > 2:
        lines = _call_lines("", segments[0], "")
        for index, segment in enumerate(segments[1:], 2):
            comma = "," if index == len(segments) else ""
            call = (INDENT + segment + comma).split("\n") if "\n" in segment else _call_lines("", segment, comma)
            if lines is None or call is None:
                return None
            lines += call
        return lines
    if len(segments) != 2 or exploded:
        return None
    first, second = segments
    if len(INDENT + first + second.split("(", 1)[0] + "(") <= LINE_LENGTH:
        return _split_call(first, second, ",")
    split = _split_call("", first, "")
    closing = INDENT + ")" + second + ","
    return None if split is None or len(closing) > LINE_LENGTH else [*split[:-1], closing]


def _call_lines(before: str, call: str, comma: str) -> list[str] | None:
    """black's lines for `before` + `call` (`name(arguments)` or `.name(arguments)`) + `comma` at INDENT:
    one line when it fits, else split at the call's bracket."""
    line = INDENT + before + call + comma
    return [line] if len(line) <= LINE_LENGTH else _split_call(before, call, comma)


def _split_call(before: str, call: str, comma: str) -> list[str] | None:
    """`before` + `call` + `comma` split at the call's bracket, with a list of names exploded one a line
    when it does not fit on a line of its own; None when the opening line does not fit."""
    method, arguments = call.split("(", 1)
    arguments = arguments[:-1]
    head = INDENT + before + method + "("
    if not arguments or len(head) > LINE_LENGTH:
        return None
    body = INDENT + "    " + arguments
    tail = INDENT + ")" + comma
    if len(body) <= LINE_LENGTH:
        return [head, body, tail]
    names = _NAME_LIST.fullmatch(arguments)
    if names is None:
        return None
    # One name a line (a long one stays long), each with a comma when there are several: black adds the
    # comma when it splits the list at its commas; a single name is only moved to a line of its own.
    listed = [name.strip() for name in names[1].split(",")]
    items = [INDENT + " " * 8 + name + ("," if len(listed) > 1 else "") for name in listed]
    return [head, INDENT + "    [", *items, INDENT + "    ]", tail]


# ---------------------------------------------------------------------------
# Spelling: the tokens of a layout are black's, spaced as black spaces them
# ---------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""(?P<space>\ +)
    | (?P<string>"[^"'\\\n]*")
    | (?P<number>\d(?:_?\d)*(?:\.\d(?:_?\d)*)?(?:e-?\d(?:_?\d)*)?(?![\w.]))
    | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<op>[][(){},.:=-])""",
    re.VERBOSE,
)
_COMMENT = re.compile(r"#(?: [ -~]*[!-~])?")  # `# text`, as black writes an own-line comment
_OPENING, _CLOSING = "([{", ")]}"
_OPERAND = ("name", "string", "number")
# After these (or at the start of a line) a minus is unary: black writes no space after it.
_BEFORE_UNARY = (None, *_OPENING, ",", "=", ":")


def _spelt_as_black(comments: list[str], code: list[str]) -> bool:
    """Whether each comment and code line is spelt as black spells it, tokens and spaces alike."""
    if not all(_COMMENT.fullmatch(line.strip()) for line in comments):
        return False
    brackets = ""
    for line in code:
        brackets = _brackets_after(line, brackets)
        if brackets is None:
            return False
    return not brackets


@functools.lru_cache(maxsize=4096)  # most lines recur, in many entries
def _brackets_after(line: str, open_before: str) -> str | None:
    """The brackets open after `line`, given those open before it; None unless it is indented one level
    a bracket open before it (a closing one ends its level), and each of its tokens is one black keeps
    as it is, with the space black puts before it."""
    text = line.lstrip(" ")
    depth = len(open_before) - (text[:1] in _CLOSING)
    brackets = list(open_before)
    if len(line) - len(text) != len(INDENT) + 4 * depth or not _line_spelt_as_black(text, brackets):
        return None
    return "".join(brackets)


def _line_spelt_as_black(text: str, brackets: list[str]) -> bool:
    """One line's tokens, with `brackets` open before it (updated): each is one black keeps as it is,
    with the space black puts before it."""
    previous: tuple[str, str] | None = None  # (kind, text) of the token before, on this line
    unary = False
    position = 0
    while position < len(text):
        space = ""
        match = _TOKEN.match(text, position)
        if match and match.lastgroup == "space":
            space, match = match[0], _TOKEN.match(text, match.end())
        if match is None or match.lastgroup == "space":
            return False
        kind, token = match.lastgroup, match[0]
        if kind == "name" and keyword.iskeyword(token) and token not in ("None", "True", "False"):
            return False
        expected = _space_before(previous, kind, token, brackets, unary)
        if expected is None or space != expected:
            return False
        unary = token == "-"
        if not _nest(previous, token, brackets):
            return False
        previous, position = (kind, token), match.end()
    return not unary


def _nest(previous, token: str, brackets: list[str]) -> bool:
    """Follow the brackets `token` opens or closes. A parenthesis that is not a call's is a tuple's, or
    black may remove it (`[(a)]` is its `[a]`): such a parenthesis is "a" until a comma makes it a
    tuple's ("t"), and one that closes with neither a comma nor emptiness is not black's spelling."""
    if token in _OPENING:
        call = previous is not None and (previous[0] in ("name", "string") or previous[1] in _CLOSING)
        brackets.append("a" if token == "(" and not call else token)
    elif token == "," and brackets and brackets[-1] == "a":
        brackets[-1] = "t"
    elif token in _CLOSING:
        opening = brackets.pop() if brackets else None
        if _OPENING[_CLOSING.index(token)] != {"a": "(", "t": "("}.get(opening, opening):
            return False
        return opening != "a" or previous == ("op", "(")
    return True


def _space_before(previous, kind: str, token: str, brackets: list[str], unary: bool) -> str | None:
    """The space black puts before `token` after `previous` (None: first on its line), or None when
    the pair is not one black is known to keep as it is here."""
    if previous is None:
        return "" if token not in ",=:" else None
    before_kind, before = previous
    innermost = brackets[-1] if brackets else None
    if before == "." and kind != "name":
        return None  # `.` starts an attribute's name, and nothing else (`.5` is black's `0.5`)
    after_value = before_kind in _OPERAND or before in _CLOSING  # the end of an expression
    if token == "-":  # a unary minus only; black writes a binary one with spaces
        return None if before not in _BEFORE_UNARY or unary else " " if before in ",:" else ""
    if token == "=":  # a keyword argument
        return "" if innermost == "(" and before_kind == "name" else None
    if token == ":":  # a dict's key
        return "" if innermost == "{" and after_value else None
    if token in ",." or token in _CLOSING:
        return "" if after_value or (token in _CLOSING and before in _OPENING) else None
    if token in "([" and after_value:  # a call or a subscript
        return "" if before_kind != "number" else None
    if after_value:
        return None  # two operands side by side
    return " " if before in ",:" else ""  # an operand or an opening bracket, after `(`, `=`, `.` or a unary minus
