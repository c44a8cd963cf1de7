"""Building: the model -> generated text. Expansion, validation, rendering, formatting, checks.

Owns expansion into exactly what torch builds (`expansion`), validation of torch
names (`resolution`, `method_names`, `torch_names`), the names a spec chooses and
where generated modules import from (`naming`, `importability`), rendering through
Jinja2 (`rendering`, `template_cache`), formatting with black (`formatting`,
`entry_layout`), the static check of each output (`output_check`, `check_memo`),
the support matrix (`matrix`), the spec lint (`lint`), and `pipeline`, which joins
them. Writing is left to the caller.

May import: the base modules, `generator.loading` and `generator.freshness`.
"""
