"""`python -m generator init` writes a working start in an empty or existing repository, and never overwrites.

Each test runs the generator as a user would, in a subprocess standing in a new git repository: init, then
regenerate and check pass at once, the example's generated module builds a BackendConfig that torch's FX flow
uses, a second init changes nothing, and an existing pyproject.toml keeps every byte it had.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from generator import starting
from tests.support import small_yaml
from tests.support.projects import git

STARTED = [
    "pyproject.toml", "spec/my_backend.py", "generated/__init__.py", ".pre-commit-config.yaml",
    ".github/workflows/backend-configs.yml", ".gitignore",
]  # fmt: skip


def generator(folder: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("GENERATOR_TRACEBACK", None)
    return subprocess.run([sys.executable, "-m", "generator", *args], cwd=folder, capture_output=True, text=True,
                          env=env, timeout=300)  # fmt: skip


def new_repository(folder: Path) -> Path:
    folder.mkdir()
    git(folder, "init", "-q")
    return folder


def files_below(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not {".git", ".cache"} & set(p.relative_to(folder).parts)
    }


def table(project: Path) -> dict:
    return tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["backend-config-generator"]


@pytest.fixture(scope="module")
def started(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """A new git repository after init, regenerate and check: (its folder, init's run)."""
    project = new_repository(tmp_path_factory.mktemp("init") / "repository")
    init = generator(project, "init")
    assert init.returncode == 0, init.stderr
    regenerate = generator(project, "regenerate")
    assert regenerate.returncode == 0, regenerate.stderr
    return project, init


def test_init_writes_a_start_that_regenerate_then_check_accept(started):
    project, init = started
    guess = "it installs backend-config-generator==0.1.0 from your package index; --install says where you get the tool"
    notes = {".github/workflows/backend-configs.yml": f": {guess}"}  # this checkout is installed from a folder
    assert init.stdout.splitlines() == [f"written   {path}{notes.get(path, '')}" for path in STARTED] + [
        "next: backend-config-generator regenerate"
    ]
    assert init.stderr == ""
    assert table(project) == starting.DEFAULTS  # what the tool reads when the table is absent
    assert (project / "generated" / "my_backend.py").is_file()
    check = generator(project, "check")
    assert (check.returncode, check.stderr) == (0, ""), check.stdout
    assert check.stdout == "2 generated files are up to date\n"


def test_the_start_commits_clean_and_check_passes_on_the_commit(started, tmp_path):
    """The generator's cache is ignored; a clone of the commit (what CI checks out) passes check."""
    project, _ = started
    assert ".cache/" not in git(project, "status", "--porcelain", "--untracked-files=all")
    clone = tmp_path / "clone"
    shutil.copytree(project, clone)
    git(clone, "add", "-A")
    git(clone, "commit", "-qm", "start")
    assert git(clone, "status", "--porcelain") == ""
    shutil.rmtree(clone / ".cache", ignore_errors=True)
    check = generator(clone, "check")
    assert check.returncode == 0, check.stdout + check.stderr


def test_the_example_builds_a_backend_config_that_fx_quantizes_with(started):
    project, _ = started
    program = textwrap.dedent("""
        import warnings
        import torch
        from torch.ao.quantization import get_default_qconfig_mapping
        from torch.ao.quantization.backend_config import BackendConfig
        from torch.ao.quantization.quantize_fx import convert_to_reference_fx, prepare_fx
        from generated.my_backend import get_my_backend_config
        import generated.my_backend

        warnings.simplefilter("ignore")
        config = get_my_backend_config()
        assert isinstance(config, BackendConfig) and config.name == "my_backend", config
        patterns = sorted(str(p) for p in config._pattern_complex_format_to_config)
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Conv2d(3, 3, 3), torch.nn.ReLU()).eval()
        inputs = (torch.rand(1, 3, 8, 8),)
        prepared = prepare_fx(model, get_default_qconfig_mapping("fbgemm"), inputs, backend_config=config)
        prepared(*inputs)
        converted = convert_to_reference_fx(prepared, backend_config=config)
        fused = any(isinstance(m, torch.ao.nn.intrinsic.ConvReLU2d) for m in converted.modules())
        quantized = any(isinstance(m, torch.ao.nn.quantized.reference.Conv2d) for m in converted.modules())
        print(generated.my_backend.__file__, len(patterns), fused, quantized)
    """)
    done = subprocess.run([sys.executable, "-c", program], cwd=project, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    where, patterns, fused, quantized = done.stdout.split()
    assert Path(where) == project / "generated" / "my_backend.py"  # the project's package, not another
    assert (patterns, fused, quantized) == ("3", "True", "True")


def test_init_twice_changes_nothing_and_says_what_it_kept(started):
    project, _ = started
    before = files_below(project)
    again = generator(project, "init")
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines() == [
        "kept      pyproject.toml: it has [tool.backend-config-generator]",
        *(f"kept      {path}" for path in STARTED[1:]),
        "next: backend-config-generator regenerate",
    ]
    assert files_below(project) == before


def test_an_existing_pyproject_keeps_every_byte_and_gets_the_table(tmp_path):
    project = new_repository(tmp_path / "repository")
    original = b'[project]\nname = "acme-quant"\nversion = "1.0"\n\n[tool.ruff]\nline-length = 100  # ours'
    (project / "pyproject.toml").write_bytes(original)  # no newline at its end
    init = generator(project, "init")
    assert init.returncode == 0, init.stderr
    assert init.stdout.splitlines()[0] == "written   pyproject.toml: [tool.backend-config-generator] appended"
    text = (project / "pyproject.toml").read_bytes()
    assert text.startswith(original + b"\n")
    parsed = tomllib.loads(text.decode())
    assert parsed["project"] == {"name": "acme-quant", "version": "1.0"} and parsed["tool"]["ruff"] == {
        "line-length": 100
    }
    assert table(project) == starting.DEFAULTS
    # A repository that installs itself: CI installs it too, so the packages its spec imports are there.
    workflow = small_yaml.load((project / ".github/workflows/backend-configs.yml").read_text(encoding="utf-8"))
    steps = workflow["jobs"]["backend-configs"]["steps"]
    [install] = [step["run"] for step in steps if "pip install" in step.get("run", "")]
    assert install.endswith("&& pip install -e .")


def test_existing_files_are_kept_byte_for_byte(tmp_path):
    project = new_repository(tmp_path / "repository")
    mine = {
        ".pre-commit-config.yaml": b"repos: []\n",
        "generated/__init__.py": b"# ours\n",
    }
    for name, data in mine.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_bytes(data)
    init = generator(project, "init")
    assert init.returncode == 0, init.stderr
    assert {name: (project / name).read_bytes() for name in mine} == mine
    lines = init.stdout.splitlines()
    assert "kept      generated/__init__.py" in lines
    assert "kept      .pre-commit-config.yaml: add the hook backend-config-generator-check to it yourself " \
        "(see the .pre-commit-config.yaml init writes)" in lines  # fmt: skip
    assert "written   spec/my_backend.py" in lines


def test_a_spec_folder_with_spec_files_gets_no_example(tmp_path):
    project = new_repository(tmp_path / "repository")
    (project / "spec").mkdir()
    (project / "spec" / "npu.py").write_text("MODULE = None\n", encoding="utf-8")
    init = generator(project, "init")
    assert init.returncode == 0, init.stderr
    assert "kept      spec: it has spec files (npu.py); no example added" in init.stdout.splitlines()
    assert sorted(p.name for p in (project / "spec").iterdir()) == ["npu.py"]


def test_the_options_are_the_table_s_keys(tmp_path):
    project = new_repository(tmp_path / "repository")
    init = generator(project, "init", "--package", "acme_quant.backend_configs", "--specs", "backend_specs")
    assert init.returncode == 0, init.stderr
    assert table(project) == {
        **starting.DEFAULTS, "specs": "backend_specs", "generated": "acme_quant/backend_configs",
        "package": "acme_quant.backend_configs",
    }  # fmt: skip
    written = [line.split()[1] for line in init.stdout.splitlines() if line.startswith("written")]
    assert written[1:4] == [
        "backend_specs/my_backend.py", "acme_quant/__init__.py", "acme_quant/backend_configs/__init__.py"
    ]
    assert "acme_quant.backend_configs.my_backend" in (project / "backend_specs" / "my_backend.py").read_text()
    # --generated alone names the package after its path
    other = new_repository(tmp_path / "other")
    assert generator(other, "init", "--generated", "src/acme/configs/").returncode == 0
    assert (table(other)["generated"], table(other)["package"]) == ("src/acme/configs", "acme.configs")
    assert (other / "src" / "acme" / "__init__.py").is_file() and not (other / "src" / "__init__.py").exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (("--package", "acme.configs", "--generated", "out"),
         "error: --package acme.configs cannot be imported from --generated out: the generated folder must end in "
         "acme/configs"),
        (("--package", "acme-quant"),
         "error: --package acme-quant: an import name is dotted Python identifiers (acme_quant.configs)"),
        (("--specs", "../elsewhere"),
         "error: --specs ../elsewhere: give a folder inside the project, relative to its root"),
    ],
)  # fmt: skip
def test_options_that_cannot_work_are_one_line_and_write_nothing(tmp_path, args, message):
    project = new_repository(tmp_path / "repository")
    init = generator(project, "init", *args)
    assert (init.returncode, init.stdout, init.stderr) == (2, "", message + "\n")
    assert files_below(project) == {}


def test_a_table_that_says_otherwise_is_one_line_and_writes_nothing(tmp_path):
    project = new_repository(tmp_path / "repository")
    (project / "pyproject.toml").write_text('[tool.backend-config-generator]\npackage = "acme"\ngenerated = "acme"\n')
    before = files_below(project)
    init = generator(project, "init", "--package", "other")
    assert (init.returncode, init.stdout) == (2, "")
    assert init.stderr == (
        "error: pyproject.toml's [tool.backend-config-generator] already says package = \"acme\", not --package "
        "other: edit the table or leave the option out\n"
    )
    assert files_below(project) == before
    # Without options (or with the table's own values), init starts the layout the table says.
    init = generator(project, "init", "--package", "acme")
    assert init.returncode == 0, init.stderr
    assert (project / "acme" / "__init__.py").is_file() and (project / "spec" / "my_backend.py").is_file()


def test_a_pyproject_that_is_not_toml_is_one_line_and_writes_nothing(tmp_path):
    project = new_repository(tmp_path / "repository")
    (project / "pyproject.toml").write_text("[project\n")
    init = generator(project, "init")
    assert (init.returncode, init.stdout) == (2, "")
    assert init.stderr.startswith("error: pyproject.toml is not valid TOML (") and init.stderr.count("\n") == 1
    assert files_below(project) == {"pyproject.toml": b"[project\n"}


def test_a_project_in_a_subfolder_gets_its_hook_and_ci_at_the_repository_s_top(tmp_path):
    repository = new_repository(tmp_path / "repository")
    (repository / "vendor" / "configs").mkdir(parents=True)
    init = generator(repository, "init", "--root", "vendor/configs")
    assert init.returncode == 0, init.stderr
    assert init.stdout.splitlines()[-1] == "next: backend-config-generator --root vendor/configs regenerate"
    assert (repository / "vendor" / "configs" / "pyproject.toml").is_file()
    config = small_yaml.load((repository / ".pre-commit-config.yaml").read_text(encoding="utf-8"))
    assert config["repos"][0]["hooks"][0]["entry"] == "backend-config-generator --root vendor/configs check"
    workflow = small_yaml.load((repository / ".github/workflows/backend-configs.yml").read_text(encoding="utf-8"))
    runs = [step.get("run") for step in workflow["jobs"]["backend-configs"]["steps"]]
    assert "backend-config-generator --root vendor/configs check" in runs
    assert "backend-config-generator --root vendor/configs verify" in runs


def test_a_subfolder_with_a_space_is_quoted_wherever_init_writes_a_command(tmp_path):
    repository = new_repository(tmp_path / "repository")
    (repository / "sub dir").mkdir()
    init = generator(repository, "init", "--root", "sub dir")
    assert init.returncode == 0, init.stderr
    assert init.stdout.splitlines()[-1] == "next: backend-config-generator --root 'sub dir' regenerate"
    config = small_yaml.load((repository / ".pre-commit-config.yaml").read_text(encoding="utf-8"))
    assert config["repos"][0]["hooks"][0]["entry"] == "backend-config-generator --root 'sub dir' check"
    workflow = small_yaml.load((repository / ".github/workflows/backend-configs.yml").read_text(encoding="utf-8"))
    runs = [step.get("run") for step in workflow["jobs"]["backend-configs"]["steps"]]
    command = "backend-config-generator --root 'sub dir'"
    assert runs[-2:] == [f"{command} check", f"{command} verify"]


def test_a_refused_init_makes_no_folder(tmp_path):
    """A file standing where init must make a folder is found before any folder is made."""
    project = new_repository(tmp_path / "repository")
    (project / ".github").write_text("not a folder\n")
    init = generator(project, "init")
    assert (init.returncode, init.stdout) == (2, "")
    assert init.stderr == (
        f"error: cannot write {project / '.github/workflows/backend-configs.yml'}: {project / '.github'} is a file, "
        "not a folder\n"
    )
    assert sorted(p.name for p in project.iterdir()) == [".git", ".github"]


def test_init_refuses_a_table_every_other_command_refuses(tmp_path):
    project = new_repository(tmp_path / "repository")
    (project / "pyproject.toml").write_text('[tool.backend-config-generator]\nspecz = "spec"\n')
    before = files_below(project)
    init = generator(project, "init")
    assert (init.returncode, init.stdout) == (2, "")
    assert init.stderr.startswith("error: pyproject.toml: [tool.backend-config-generator] specz: unknown key")
    assert files_below(project) == before


def test_the_ci_job_installs_the_tool_then_runs_check_and_verify(started):
    project, _ = started
    workflow = small_yaml.load((project / ".github/workflows/backend-configs.yml").read_text(encoding="utf-8"))
    runs = [step.get("run") for step in workflow["jobs"]["backend-configs"]["steps"]]
    assert runs[-2:] == ["backend-config-generator check", "backend-config-generator verify"]
    assert runs[-3].startswith("pip install backend-config-generator==") and "&& pip install -e" not in runs[-3]


def test_init_needs_an_existing_folder(tmp_path):
    init = generator(tmp_path, "init", "--root", "missing")
    assert (init.returncode, init.stdout) == (2, "")
    assert init.stderr == (
        f"error: {tmp_path / 'missing'} is not a folder: make it first (mkdir), or run init in the repository's "
        "folder\n"
    )
    assert not (tmp_path / "missing").exists()


def test_init_inside_a_project_s_folder_says_so_unless_given_root(tmp_path):
    """Run from spec/ by mistake, init would start a second project there."""
    project = new_repository(tmp_path / "repository")
    assert generator(project, "init").returncode == 0
    inside = project / "spec"
    before = files_below(project)
    init = generator(inside, "init")
    assert (init.returncode, init.stdout) == (2, "")
    assert init.stderr == (
        f"error: {inside} is inside the project {project}: run init there, or pass --root {inside} to start "
        "another project here\n"
    )
    assert files_below(project) == before
    assert generator(inside, "init", "--root", ".").returncode == 0  # asked for: a project of its own
    assert (inside / "pyproject.toml").is_file()


def test_a_gitignore_of_the_team_s_own_gets_cache_appended_and_keeps_its_lines(tmp_path):
    project = new_repository(tmp_path / "repository")
    (project / ".gitignore").write_bytes(b"build/\n*.egg-info")  # no newline at its end
    init = generator(project, "init")
    assert init.returncode == 0, init.stderr
    assert "written   .gitignore: .cache/ appended: the generator's caches are no files to commit" in init.stdout
    assert (project / ".gitignore").read_bytes() == b"build/\n*.egg-info\n.cache/\n"
    assert generator(project, "regenerate").returncode == 0
    assert ".cache" not in git(project, "status", "--porcelain", "--untracked-files=all")
    again = generator(project, "init")  # ignored already: kept
    assert "kept      .gitignore" in again.stdout.splitlines() and again.returncode == 0


@pytest.mark.parametrize(
    ("listed", "expected"),
    [
        ('packages = [\n    "acme",\n]\n', 'packages = [\n    "acme",\n    "acme.configs",\n]\n'),
        ('packages = ["acme"]\n', 'packages = ["acme", "acme.configs"]\n'),
        ("packages = []\n", 'packages = ["acme", "acme.configs"]\n'),
    ],
    ids=["one-a-line", "one-line", "empty"],
)
def test_an_explicit_packages_list_gets_the_generated_package(tmp_path, listed, expected):
    """setuptools ships only the packages an explicit list names: without it, the team's wheel would hold no
    generated module (an editable install hides that)."""
    project = new_repository(tmp_path / "repository")
    head = '[project]\nname = "acme"\nversion = "1"\n\n[tool.setuptools]\n'
    (project / "pyproject.toml").write_text(head + listed + "\n[tool.ruff]\nline-length = 100\n")
    init = generator(project, "init", "--package", "acme.configs")
    assert init.returncode == 0, init.stderr
    text = (project / "pyproject.toml").read_text()
    assert text.startswith(head + expected + "\n[tool.ruff]\nline-length = 100\n"), text
    added = "acme.configs" if "acme" in listed else "acme, acme.configs"
    assert f"{added} added to [tool.setuptools] packages" in init.stdout.splitlines()[0]


def test_a_packages_list_init_cannot_edit_gets_the_line_to_add(tmp_path):
    project = new_repository(tmp_path / "repository")
    original = '[project]\nname = "acme"\nversion = "1"\n\n[tool]\nsetuptools = { packages = ["acme"] }\n'
    (project / "pyproject.toml").write_text(original)
    init = generator(project, "init", "--package", "acme.configs")
    assert init.returncode == 0, init.stderr
    assert (project / "pyproject.toml").read_text().startswith(original)
    assert 'add "acme.configs" to [tool.setuptools] packages yourself' in init.stdout.splitlines()[0]


def test_the_ci_job_installs_the_tool_from_where_the_team_gets_it(tmp_path):
    """--install, else the requirement pyproject.toml names (a git tag here)."""
    tagged = "backend-config-generator @ git+https://github.com/acme/backend-config-generator@v0.1.0"
    for options, dependencies in [((), f'["{tagged}"]'), (("--install", "./wheels/b.whl"), "[]")]:
        project = new_repository(tmp_path / f"repository{len(options)}")
        (project / "pyproject.toml").write_text(
            f'[project]\nname = "acme"\nversion = "1"\n[project.optional-dependencies]\ndev = {dependencies}\n'
        )
        init = generator(project, "init", *options)
        assert init.returncode == 0, init.stderr
        assert "package index" not in init.stdout
        workflow = small_yaml.load((project / ".github/workflows/backend-configs.yml").read_text(encoding="utf-8"))
        [install] = [s["run"] for s in workflow["jobs"]["backend-configs"]["steps"] if "pip" in s.get("run", "")]
        expected = f"'{tagged}'" if not options else "./wheels/b.whl"
        assert install.startswith(f"pip install {expected} --extra-index-url "), install
