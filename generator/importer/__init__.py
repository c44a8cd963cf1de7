"""Import: an existing dynamic builder -> a spec file that regenerates it.

Owns reading what a builder returns (`reading`), naming callables made by
factories (`factories`), compacting runs of patterns into op-group calls
(`compaction`), keeping an existing spec that already builds the same
(`round_trip`), writing the spec's source (`spec_writer`), and reading the spec
about to be written as regenerate would (`validation`).

May import: every other layer but the commands and the CLI.
"""
