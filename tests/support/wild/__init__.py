"""Public third-party BackendConfig builders, each adapted as little as torch 2.13.0 (CPU) needs.

Each module's docstring names the repository and path it comes from and every change made to it.
tests/test_import_corpus.py imports each builder with `python -m generator import` and states, per builder,
what `import` must do with it.
"""
