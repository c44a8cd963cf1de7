"""Under a limit on open files (`ulimit -n`), every command either works (loading fewer spec files at once) or says
in one line which limit stopped it: never a traceback, never blaming the spec."""

import resource
import subprocess
import sys

import pytest

from tests.support.projects import fresh_copy


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    return fresh_copy(tmp_path_factory.mktemp("limits") / "project", "x86", factory=tmp_path_factory)


def under_limit(limit: int, value: int):
    def apply() -> None:
        resource.setrlimit(limit, (value, resource.getrlimit(limit)[1]))

    return apply


def run_limited(project, limit: int, value: int, *args):
    return subprocess.run([sys.executable, "-m", "generator", "--root", str(project), *args], cwd=project,
                          capture_output=True, text=True, timeout=300, start_new_session=True,
                          preexec_fn=under_limit(limit, value))  # fmt: skip


def works_or_names_the_limit(done, limit_words: str) -> None:
    if done.returncode == 0:
        return
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: the system refused the command") and limit_words in line, line
    assert "spec" not in line, line


@pytest.mark.parametrize("files", [6, 8, 10, 16])
@pytest.mark.parametrize("command", [["regenerate", "--force"], ["check", "--full"]], ids=["regenerate", "check"])
def test_few_open_files_work_or_name_the_limit(project, files, command):
    works_or_names_the_limit(run_limited(project, resource.RLIMIT_NOFILE, files, *command), "(ulimit -n)")


def test_ten_open_files_are_enough_to_load_spec_files_one_at_a_time(tmp_path):
    project = fresh_copy(tmp_path / "project")  # every spec file: more loads than files to open at once
    done = run_limited(project, resource.RLIMIT_NOFILE, 10, "regenerate", "--force")
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr)
