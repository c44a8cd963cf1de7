"""Freshness: which generated files are out of date, decided without building anything.

Owns the manifest (`manifest`: what each generated file was made from, and the
order in which a run writes the generated files and the manifest) and planning
(`planning`: the targets, their inputs and why each is stale). `check` and a
no-op `regenerate` run on this layer alone.

May import: the base modules and `generator.loading`. Never torch, Jinja2 or black.
"""
