"""Loading: spec files -> the model (`generator.model.ModuleSpec`), and what each load read.

Owns executing spec files, each in a process of its own forked from a fresh
interpreter, the load server (`loader`; `processes`: the loads and the server's side;
`load_server`: the command's side, standard library only, so a command starts it first),
recording what a load reads: project files, paths it tests, files outside the
project, environment variables (`reads`, with `read_hooks`: what a load's process replaces to
see reads that raise no audit event), the spec line a value was written at
and the name it is assigned to (`locations`), the values spec code hands the vocabulary and their checks
(`spec_values`), patterns and declared differences (`patterns`), the spellings a
spec gives its numbers (`spellings`), the syntax trees of spec files (`syntax`),
the rule that a loaded spec holds plain values (`plain_values`), and the loads and
compiled spec code kept between runs (`model_cache`, `compiled`). The spec
vocabulary itself is `generator.dsl`, which belongs to this layer and is made of
`spec_values`, `patterns` and `locations`; `reads` knows nothing of it (its naming
calls report the modules they name to `reads.note_module`).

May import: the base modules (`generator.errors`, `model`, `digests`, `files`,
`user_code`, `spelling`, `project`, ...) and `generator.dsl`. Never torch, Jinja2 or black.
"""
