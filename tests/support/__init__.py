"""What the tests share and are not tests.

- projects.py: the one factory of project copies tests run the generator on, its variants named (a fresh copy,
  one at one path per module, one restored in place (restoring.py), one reduced to some spec files, the
  tutorial's, one committed to git), and the fixtures made of them;
- shared_builds.py: what is built once per test run and shared by the run's workers;
- builders.py: every builder the spec describes, and the reference builder each must equal;
- backend_checks.py: the generic checks of a generated builder, above all one with no reference;
- spec_code.py: spec files given code of their own, and a run of the generator as a user runs it;
- user_builder.py, legacy_builder.py: builders written as users write them, for `import`;
- scripts a test runs as a file in a fresh interpreter: check_each_edit.py, commands_in_one_interpreter.py,
  killed_writer.py (`python -m tests.support.killed_writer`), random_entries.py (also run by hand).
"""
