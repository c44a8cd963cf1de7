"""The backend-config generator: a compact spec of PyTorch quantization backends -> flat modules.

Data flows one way: spec files -> model (frozen dataclasses) -> expansion -> rendering
(Jinja2) -> formatting (black) -> writing. The package shows it as layers, each of
which imports only from the layers before it:

- base, the plain nouns at the top: `errors`, `model`, `spelling` (how model values
  are written as Python), `digests`, `files` (atomic writes), `cache` (what a run
  keeps for the next), `project` (where a project keeps its files), `process` (work
  in a forked child), `heap`, `progress`, `user_code` (running user code), `starting`
  (the files `init` writes to start a project), `annotations` (GitHub workflow commands);
- `loading`: spec files -> model, with `dsl`, the vocabulary spec files import;
- `freshness`: the manifest, and which generated files are out of date;
- `building`: expansion, validation, rendering, formatting, checks, the matrix;
- `review`: equality of BackendConfigs, and `diff`;
- `importer`: an existing builder -> a spec;
- `commands`: the commands' bodies; `cli`: their arguments, the console and the exit code.

`check`, a no-op `regenerate` and spec loading import no torch, Jinja2 or black:
the layers below `building` never do, and `building` and above import them inside the
functions that need them. tests/test_layers.py holds both rules against the code.
"""
