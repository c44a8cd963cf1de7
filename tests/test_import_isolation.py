"""`import` runs spec/_common.py's op groups (to compact the spec and to place its patterns in
sections) in a child process: whatever that spec code does to the process it runs in stays
there, and the command writes what it would have written without it."""

import generator.spelling
from tests.support.builders import unused_backend_name
from tests.support.cli_runs import run

TARGET = "torch.ao.quantization.backend_config.fbgemm:get_fbgemm_backend_config"  # compacts to native_layout(...)
MUTATING = (
    "\nimport generator.spelling as _spelling\n"
    '_spelling.MODULE_ALIASES["torch.nn"] = "nnx"  # the generator\'s own table, in whichever process runs this\n'
)


def test_the_op_groups_run_under_import_leave_the_command_untouched(fresh_project, capsys):
    name = unused_backend_name("fbgemm_again")
    common = fresh_project / "spec" / "_common.py"
    common.write_text(common.read_text() + MUTATING)
    before = dict(generator.spelling.MODULE_ALIASES)
    code, out = run(capsys, "--root", str(fresh_project), "import", TARGET, "--name", name)
    assert code == 0, out
    assert generator.spelling.MODULE_ALIASES == before  # this process is the command's
    spec = (fresh_project / "spec" / f"{name}.py").read_text()
    assert "native_layout(" in spec, spec  # the op groups ran (in their child) and compacted the spec
    assert "nnx" not in spec
