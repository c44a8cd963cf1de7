"""Stage 4: format rendered source with black, in-process, with black's default style."""

from __future__ import annotations

from generator.errors import FormattingError


def format_source(source: str, output: str) -> str:
    import black  # imported here so that `check`'s fast path never loads it

    try:
        return black.format_str(source, mode=black.Mode())
    except black.parsing.InvalidInput as error:
        raise FormattingError(f"{output}: the templates rendered invalid Python: {error}") from None
