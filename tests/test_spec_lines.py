"""Spec locations are found by bisection in each code object's line table, not by frame.f_lineno
(which CPython 3.11 computes by scanning the whole table: quadratic in a spec's size).
They must be the very lines f_lineno gives."""

import textwrap

from generator.loading import loader, locations
from generator.project import spec_files
from tests.support.projects import fresh_copy


def test_every_spec_location_is_the_line_python_reports(monkeypatch, tmp_path):
    project = fresh_copy(tmp_path / "project")
    # A spec whose calls sit in functions, comprehensions and lines that open several calls.
    (project / "spec" / "lines.py").write_text(textwrap.dedent('''
        """Lines."""

        from generator.dsl import Backend, DTypeConfig, Module, config, nn, torch

        lines_dtype_config = DTypeConfig(input_dtype=torch.quint8, output_dtype=torch.quint8)
        dtype_configs = [lines_dtype_config]


        def configs(ops):
            return [
                config(op, dtype_configs)
                for op in ops
            ]


        MODULE = Module(doc="Lines.", backends=[Backend(name="lines", builder="get_lines_backend_config",
            doc="Lines.", configs=[configs([nn.ReLU, nn.ReLU6]), config(nn.Tanh, dtype_configs), config(
                nn.Sigmoid, dtype_configs)])])
    '''))
    pairs = []
    real = locations._line_number

    def checking(frame):
        line = real(frame)
        pairs.append((line, frame.f_lineno))
        return line

    monkeypatch.setattr(locations, "_line_number", checking)
    for path in spec_files(project):  # in this process, as each load's own process runs it
        loader.load_here(project, path)
    assert len(pairs) > 100
    assert [line for line, _ in pairs] == [expected for _, expected in pairs]
