"""Hand-written helpers that live next to the generated modules."""

HELP = 1
