"""Review: generated builders compared, field by field, with torch's or another revision's.

Modules, each importing only those above it in this list:
- `results`: the per-backend records a diff reports (`BackendDiff`, `PatternChange`, ...).
- `spellings`: the spec's words in a generated module's source: how it spells each dtype config's
  values (`2**-14`) and the names of its constraints (`_W_S8`), read without running it.
- `identity`: what counts as the same across two configs: exact sameness of plain values
  (`same`), the key a pattern config is matched by (`pattern_key`, `configs_by_key`) and a
  dtype config's content key (`dtype_config_key`).
- `callables`: when two callables (fuser methods, node getters) are interchangeable:
  identical, equivalent code (`equivalent_functions`), or the same behaviour in trial calls
  on real modules (`callables_match`, one verdict kept per pair and pattern).
- `equality`: the equality proof of two BackendConfigs (`compare_backend_configs`), every
  difference a `Difference`.
- `changes`: the reviewer's per-pattern changes from one config to another (`backend_diff`).
- `divergence`: the differences a spec declares from its reference builder, apart from the rest.
- `sides`: each side of a `diff` built: the working tree or a git revision (`Side`), its
  generated modules and backends, its spec lines, and whether its generated/ is stale.
- `references`: the generated builders a spec names, the backends a command chooses (`choose`), and
  those builders with their reference builders (`load_builders`).
- `diff`: the comparisons, against a reference builder (`against_torch`) or between two
  revisions (`against_revision`), one `BackendDiff` per backend.
- `formats`: how the results print (text, Markdown, JSON).
- `flows`: torch's FX flows on a small model made of a backend's patterns, bounded in time, their
  steps in torch's words, what they found (`Finding`) and the patterns they do not exercise.
- `flow_comparison`: those flows recorded step by step, with a generated config against its
  reference's (`compare`, the spec's declared differences named where they are the cause), or
  without a reference against the float model (`against_float`).
- `verify`: `python -m generator verify`, backend by backend: the equality proof (`diff`) and the flows,
  and its report (text, or GitHub Actions annotations).
`identity`, `callables`, `equality`, `changes` and `divergence` import torch; `sides`, `diff`,
`flows`, `flow_comparison` and `verify` import it only inside the functions that build configs;
`results`, `spellings` and `formats` never do.

May import: the base modules, `generator.loading`, `generator.freshness` and `generator.building`.
"""
