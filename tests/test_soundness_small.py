"""Small soundness promises (issue 32): what only the manifest lists is generated, line endings, one-line errors.

- Only files the manifest lists are treated as generated: a user's copy of a generated module in the
  generated folder (header line and all) is neither called orphaned nor deleted; a listed output whose
  spec file is gone is removed, unless edited by hand since, when it is left alone and no longer listed.
"""

import importlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from generator import cli
from tests.support.projects import ROOT, commit_all, git


def run(capsys, project: Path, *args: str) -> tuple[int, str, str]:
    code = cli.main(["--root", str(project), *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# ---------------------------------------------------------------- only what the manifest lists is generated


def test_a_copy_of_a_generated_module_is_the_user_s_own(project_with_only, capsys):
    project = project_with_only("x86")
    copy = project / "generated" / "x86_tuned.py"
    shutil.copyfile(project / "generated" / "x86.py", copy)  # it starts with the generator's header line
    before = copy.read_bytes()
    code, out, err = run(capsys, project, "check")
    assert (code, err) == (0, "")
    assert "x86_tuned" not in out
    code, out, err = run(capsys, project, "regenerate", "--force")
    assert code == 0
    assert "x86_tuned" not in out + err
    assert copy.read_bytes() == before
    assert run(capsys, project, "check", "--full")[0] == 0
    assert copy.read_bytes() == before


def test_an_output_whose_spec_file_is_gone_is_left_alone_once_edited_by_hand(project_with_only, capsys):
    project = project_with_only("native", "x86")
    (project / "spec" / "x86.py").unlink()
    edited = project / "generated" / "x86.py"
    edited.write_text(edited.read_text() + "# mine now\n")
    code, out, err = run(capsys, project, "check")
    assert code == 1
    assert "generated/x86.py: its spec file is gone (edited by hand" in out
    code, out, err = run(capsys, project, "regenerate")
    assert code == 0
    assert err == "warning: generated/x86.py: its spec file is gone, but it was edited by hand: left alone\n"
    assert edited.read_text().endswith("# mine now\n")
    assert "generated/x86.py" not in (project / "generated" / "manifest.json").read_text()
    code, out, err = run(capsys, project, "check", "--full")
    assert (code, err) == (0, "")
    assert "x86" not in out


def test_matrix_keeps_the_record_of_an_output_whose_spec_file_is_gone(project_with_only, capsys):
    """`matrix` writes the manifest too, and removes nothing: the next regenerate still knows the orphan."""
    project = project_with_only("native", "x86")
    (project / "spec" / "x86.py").unlink()
    assert run(capsys, project, "matrix")[0] == 0
    assert run(capsys, project, "check")[0] == 1
    code, out, _ = run(capsys, project, "regenerate")
    assert code == 0
    assert "removed   generated/x86.py" in out.splitlines()
    assert not (project / "generated" / "x86.py").exists()
    assert run(capsys, project, "check")[0] == 0


TUNED_SPEC = '''"""A backend of the user's own."""

from generator.dsl import Backend, DTypeConfig, Module, config, nn, torch

tuned_dtype_config = DTypeConfig(input_dtype=torch.quint8, output_dtype=torch.quint8, weight_dtype=torch.qint8)

MODULE = Module(
    doc="Tuned.",
    backends=[Backend(name="x86_tuned", builder="get_x86_tuned_backend_config", doc="Tuned.",
                      configs=[config(nn.Conv2d, [tuned_dtype_config])])],
)
'''


def test_a_spec_file_never_overwrites_a_copy_the_manifest_does_not_list(project_with_only, capsys):
    project = project_with_only("x86")
    copy = project / "generated" / "x86_tuned.py"
    shutil.copyfile(project / "generated" / "x86.py", copy)  # it starts with the generator's header line
    before = copy.read_bytes()
    (project / "spec" / "x86_tuned.py").write_text(TUNED_SPEC)
    code, out, err = run(capsys, project, "regenerate")
    assert code == 2
    assert err.startswith("error: spec/x86_tuned.py:") and err.count("\n") == 1
    assert "would overwrite generated/x86_tuned.py, which the generator did not write" in err
    assert copy.read_bytes() == before


# ---------------------------------------------------------------- no internal errors, one line each


SHADOWS = ("numbers", "platform", "string", "copy")


def test_standard_library_names_in_the_project_root_do_not_stand_in_for_the_standard_library(project_with_only):
    """`python -m generator` run from the root puts the root first on sys.path: a project's copy.py must not
    replace the standard library's in the generator, torch or black."""
    project = project_with_only("x86")
    for name in SHADOWS:
        (project / f"{name}.py").write_text(f"raise RuntimeError('the project root {name}.py was imported')\n")
    for command in (["regenerate", "--force"], ["diff", "--against-torch"], ["check", "--full"]):
        done = subprocess.run(
            [sys.executable, "-m", "generator", *command], cwd=project, capture_output=True, text=True,
            env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
        )  # fmt: skip
        assert done.returncode == 0, (command, done.stderr)
        assert done.stderr == ""


def test_an_error_message_is_one_line_whatever_characters_it_holds(project_with_only, capsys):
    project = project_with_only("x86")
    spec = project / "spec" / "x86.py"
    spec.write_text(spec.read_text() + "raise ValueError('first\\n9 generated files are up to date\\x1b[2K\\rfake')\n")
    for command in ("regenerate", "check"):
        code, out, err = run(capsys, project, command)
        assert code == 2
        assert err.count("\n") == 1 and "\r" not in err and "\x1b" not in err
        assert err.startswith("error: spec/x86.py:")
        assert "first\\n9 generated files are up to date\\x1b[2K\\rfake" in err


def test_the_project_root_on_the_path_of_user_code_comes_after_the_standard_library(tmp_path):
    """While a spec's names are imported, a standard-library module that torch imports lazily is the real one."""
    from generator.building import resolution

    (tmp_path / "sched.py").write_text("raise RuntimeError('the project root sched.py was imported')\n")
    (tmp_path / "myops_of_the_project.py").write_text("VALUE = 1\n")
    sys.modules.pop("sched", None)
    with resolution.project_on_path(tmp_path):
        assert importlib.import_module("sched").__file__ != str(tmp_path / "sched.py")
        assert importlib.import_module("myops_of_the_project").VALUE == 1  # the project's own modules are found
    sys.modules.pop("myops_of_the_project")
    assert str(tmp_path) not in sys.path


RAISING_GETATTR = '''from torch.ao.quantization.backend_config import get_fbgemm_backend_config as get_w_backend_config


def __getattr__(name):
    raise {raised}
'''


@pytest.mark.parametrize("raised", ["ValueError('no ' + name)", "SystemExit(0)"])
@pytest.mark.parametrize("function", ["get_w_backend_config", "get_missing_backend_config"])
def test_import_from_a_module_whose_getattr_raises_is_one_line(project_with_only, capsys, raised, function):
    project = project_with_only("x86")
    module = f"raising_getattr_{'exit' if 'Exit' in raised else 'value'}_{function.split('_')[1]}"
    (project / f"{module}.py").write_text(RAISING_GETATTR.format(raised=raised))
    before = sorted((project / "spec").iterdir())
    code, out, err = run(capsys, project, "import", f"{module}:{function}", "--name", "w")
    assert code == 2
    assert err.count("\n") == 1 and err.startswith(f"error: {module}.py:5: ")
    assert "internal error" not in err
    assert sorted((project / "spec").iterdir()) == before


def test_a_symlinked_templates_functions_folder_is_read_through_the_link(project_with_only, capsys, tmp_path):
    project = project_with_only("x86")
    real = tmp_path / "shared-function-templates"
    shutil.move(project / "templates" / "functions", real)
    (project / "templates" / "functions").symlink_to(real, target_is_directory=True)
    assert run(capsys, project, "regenerate")[0] == 0
    assert run(capsys, project, "check", "--full")[:1] == (0,)
    sequential = real / "sequential.py.j2"
    sequential.write_text(sequential.read_text().replace("    return", "    # through the link\n    return"))
    code, out, err = run(capsys, project, "check")
    assert code == 1
    assert "generated/x86.py: stale: templates/functions/sequential.py.j2 changed" in out
    code, out, err = run(capsys, project, "regenerate")
    assert (code, err) == (0, "")
    assert "# through the link" in (project / "generated" / "x86.py").read_text()
    assert run(capsys, project, "check", "--full")[0] == 0


def test_function_templates_in_a_symlinked_folder_are_listed(tmp_path):
    """function() checks its template among those the environment lists: a symlinked folder's count too."""
    from generator import project
    from generator.building import rendering

    folder, real = tmp_path / "templates", tmp_path / "elsewhere"
    shutil.copytree(project.shipped_templates() / "functions", real)
    folder.mkdir()
    (folder / "functions").symlink_to(real, target_is_directory=True)
    (real / "loop").symlink_to(folder, target_is_directory=True)  # a cycle ends
    listed = rendering.make_environment(folder).list_templates()
    assert "functions/sequential.py.j2" in listed
    assert "functions/sequential.py.j2" in project.Templates((folder,), ("templates",)).every()


def test_a_spec_file_name_as_long_as_the_file_system_allows_is_generated(project_with_only, capsys):
    """A temporary file's name adds to its target's: for a name near the 255-byte limit it is shortened."""
    project = project_with_only("qnnpack_pt2e")
    long_name = "q" * 251  # + ".py": 254 bytes
    (project / "spec" / "qnnpack_pt2e.py").rename(project / "spec" / f"{long_name}.py")
    for command in (["regenerate"], ["check"], ["check", "--full"]):
        code, out, err = run(capsys, project, *command)
        assert (code, err) == (0, ""), command
    assert (project / "generated" / f"{long_name}.py").is_file()
    assert not [p for p in (project / "generated").iterdir() if p.name.endswith(".tmp")]


# ---------------------------------------------------------------- validation: dtypes in their roles, bounds in range


def test_a_pt2e_pattern_may_take_int8_weights_and_an_fx_pattern_may_not():
    from generator.building import dtype_roles
    from generator.errors import SpecFieldError
    from generator.model import DTypeConfig, PatternConfig, TorchRef

    int8 = DTypeConfig("int8_dtype_config", TorchRef("torch.int8"), TorchRef("torch.int8"), TorchRef("torch.int8"))
    dtype_roles.check_pattern_config(PatternConfig(TorchRef("torch.ops.aten.addmm.default"), (int8,)), None)
    with pytest.raises(SpecFieldError, match="weight_dtype=torch.int8 is no weight dtype torch's FX flow can use"):
        dtype_roles.check_pattern_config(PatternConfig(TorchRef("torch.nn.Linear"), (int8,)), None)


# ---------------------------------------------------------------- line endings


def test_a_crlf_clone_is_fresh_and_what_it_commits_is_fresh_in_an_lf_clone(project_with_only, tmp_path, capsys):
    """`git clone -c core.autocrlf=true` checks text files out with CRLF (the project has no .gitattributes of
    its own): the same text, so the same digests; regenerate writes LF, and what is committed there is fresh
    in a clone without autocrlf."""
    project = commit_all(project_with_only("x86"))
    crlf = tmp_path / "crlf"
    git(tmp_path, "clone", "-q", "-c", "core.autocrlf=true", str(project), str(crlf))
    assert b"\r\n" in (crlf / "generated" / "x86.py").read_bytes()
    assert b"\r\n" in (crlf / "spec" / "x86.py").read_bytes()
    for command in (["check"], ["check", "--full"]):
        code, out, err = run(capsys, crlf, *command)
        assert (code, err) == (0, ""), (command, out)
    spec = crlf / "spec" / "x86.py"
    spec.write_bytes(spec.read_bytes().replace(b'"""x86 backend', b'"""The x86 backend', 1))
    assert run(capsys, crlf, "regenerate", "--force")[0] == 0
    assert b"\r\n" not in (crlf / "generated" / "x86.py").read_bytes()
    assert run(capsys, crlf, "check", "--full")[0] == 0
    git(crlf, "commit", "-qam", "edited in a CRLF clone")
    lf = tmp_path / "lf"
    git(tmp_path, "clone", "-q", "-c", "core.autocrlf=false", str(crlf), str(lf))
    assert b"\r\n" not in (lf / "generated" / "manifest.json").read_bytes()
    for command in (["check"], ["check", "--full"]):
        code, out, err = run(capsys, lf, *command)
        assert (code, err) == (0, ""), (command, out)


def test_the_repository_checks_text_out_with_lf_whatever_core_autocrlf_says():
    attributes = (ROOT / ".gitattributes").read_text().splitlines()
    assert "* text=auto eol=lf" in attributes
