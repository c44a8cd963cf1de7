"""Import: an existing dynamic builder -> a spec file that regenerates it.

Owns loading the builder and reading what it returns into the model (`reading`);
the dotted paths by which a spec names the objects it holds (`object_paths`); the
names of its dtype configs, constraints and shared dtype-config lists
(`dtype_names`), their numbers spelt as the builder's source spells them
(`number_spellings`); the names of its callables, by path or by a function template
(`callable_names`), or as the factory call that makes them (`factories`);
compacting runs of patterns into op-group calls (`compaction`) and loops over op
lists (`op_lists`); placing each pattern in torch's family (`sections`); fixing the order of a
builder whose order varies between runs (`pattern_order`); keeping an existing
spec that already builds the same (`round_trip`); writing the spec's source
(`spec_writer`); and reading the spec about to be written as regenerate would
(`validation`); and what the generated module still imports from the legacy code
(`dependencies`, which imports no other module of the package).

Within the package, imports point from `reading` down to `callable_names` and
`dtype_names`, from `dtype_names` to `number_spellings`, from `callable_names` to `factories`, and from all of them to
`object_paths`, which imports no other module of the package.

May import: every other layer but the commands and the CLI.
"""
