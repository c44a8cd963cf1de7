"""Part of stage 4: lay a pattern entry out as black will, so that black only has to confirm it.

black formats a text twice unless its first pass gives back the text it was
given (black.format_str: a second pass settles trailing commas it added). A
pattern entry rendered by the builder template (one call per line, the comma
on a line of its own) is never black's layout, so every new entry costs two
passes. `laid_out` predicts black's layout of an entry for the shapes the
template renders, and says nothing (None) when it is unsure.

A prediction changes only what black ignores or normalizes the same way in
both texts: line breaks and indentation inside the list's brackets, the
indentation of own-line comments, and the quotes of plain strings. So black's
output for it is its output for the rendered text whether it is right or not;
a right one is returned after one pass. The one token it adds is black's own:
the trailing comma of a list of names that does not fit on its line, which
black splits one name a line and ends with a comma (tests/test_format_speed.py
checks that black gives the same around every length where that starts).
Texts black treats specially (`# fmt:`, `# type:` and `# yapf:` comments,
backslashes, non-ASCII text, trailing commas already there) get no prediction.
"""

from __future__ import annotations

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
_SPECIAL_COMMENT = re.compile(r"(fmt|type|yapf)\s*:", re.IGNORECASE)


def laid_out(entry: str) -> str | None:
    """The entry (own-line comments, then `Call(...)` and `.method(...)` lines, then a line holding `,`)
    as black lays it out at the template's indentation; None when its shape is not one this predicts."""
    if not entry.isascii() or "\\" in entry or not entry.endswith("\n,\n") or _SPECIAL_COMMENT.search(entry):
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
    return None if code is None else "".join(comments) + "".join(line + "\n" for line in code)


def _exploded_dict(opening: str, lines) -> str | None:
    """A call whose argument is a dict with a trailing comma, one item a line (the template renders it so):
    the trailing comma makes black keep it open, whatever its length, at the next two indentation levels."""
    body = []
    for line in lines:
        body.append(line)
        if line.strip() == ")":
            break
    texts = [line.strip() for line in body]
    if len(texts) < 4 or texts[:1] != ["{"] or texts[-2:] != ["}", ")"]:
        return None
    if not all(t.endswith(",") and "#" not in t and "'" not in t and '"' not in t for t in texts[1:-2]):
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
