"""What the tests share and are not tests: the project copies they run on (projects.py, its one factory),
the builders the spec describes (builders.py), builds shared by the run's workers (shared_builds.py), the
generic checks of a backend (backend_checks.py), builders written as users write them (user_builder.py,
legacy_builder.py), and scripts a test runs as a file in a fresh interpreter (check_each_edit.py,
commands_in_one_interpreter.py, killed_writer.py, random_entries.py)."""
