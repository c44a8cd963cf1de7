"""One exception class per way the generator can fail.

Every error carries the spec location it is about, when there is one, and prints
as a single line `spec/file.py:LINE: what is wrong`. Each class carries the exit
code the command line ends with (`exit_code`): 2, but 130 for Ctrl-C.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the model is not needed to raise or print an error, and check's fast path skips it
    from generator.model import SourceLocation


class GeneratorError(Exception):
    """Base class: a failure the user can fix, reported as one line."""

    exit_code = 2

    def __init__(self, message: str, location: SourceLocation | None = None):
        super().__init__(message)
        self.message = message
        self.location = location

    def __reduce__(self):
        # Pickled whole, location included (an error sent by a forked child, generator.process):
        # Exception's own pickling keeps the message alone.
        return type(self), (self.message, self.location)

    def __str__(self) -> str:
        if self.location is None:
            return self.message
        return f"{self.location}: {self.message}"


class SpecSyntaxError(GeneratorError):
    """A spec file is not valid Python."""


class SpecExecutionError(GeneratorError):
    """A spec file raised while it was being loaded."""


class SpecFieldError(GeneratorError):
    """A spec value is missing, misspelt or of the wrong kind."""


class EmptyAxisError(GeneratorError):
    """A fusion combinator was given an axis with no values."""


class UnknownTorchNameError(GeneratorError):
    """A spec names a torch object that does not exist."""


class TorchKindError(GeneratorError):
    """A spec names a torch object of the wrong kind (e.g. a dtype that is not one)."""


class DuplicateOutputError(GeneratorError):
    """Two spec files would write the same generated module."""


class DuplicateBackendError(GeneratorError):
    """Two backends anywhere in the project share a name or a label (matrix, diff and lint key on them)."""


class DeclarationWithoutReferenceError(GeneratorError):
    """added()/removed()/changed() where no backend that reaches it has a reference builder to differ from."""


class NameClashError(GeneratorError):
    """A builder name is used twice in one module, or clashes with another name the module defines."""


class EmptyBackendError(GeneratorError):
    """A backend expands to zero patterns."""


class TemplateRenderError(GeneratorError):
    """A template failed to render, e.g. it used an undefined variable."""


class FormattingError(GeneratorError):
    """black rejected the rendered module (the template produced invalid Python)."""


class OutputCheckError(GeneratorError):
    """A rendered module does not compile, or uses a name it neither defines nor imports."""


class LintError(GeneratorError):
    """A lint warning turned into an error by --strict."""


class GitError(GeneratorError):
    """A git command needed by `diff --rev` failed."""


class BuilderImportError(GeneratorError):
    """`import MODULE:FUNCTION` names a module or function that cannot be imported."""


class BuilderCallError(GeneratorError):
    """The builder named by `import` raised when it was called."""


class NotABackendConfigError(GeneratorError):
    """The builder named by `import` returned something other than a BackendConfig."""


class UnnamedCallableError(GeneratorError):
    """`import` met a callable it can neither reference, template nor import by path."""


class UnspellableBoundError(GeneratorError):
    """`import` met a DTypeWithConstraints bound a spec cannot write: not a finite number."""


class BuilderRebindsError(GeneratorError):
    """The builder named by `import` rebinds, when it runs, a module-level name the generated module imports."""


class UnusablePatternConfigError(GeneratorError):
    """`import` met a pattern config holding a value torch stores unchecked but its flow cannot use
    (one DTypeConfig for a list, a string for an ObservationType, ...) or a subclass of torch's classes."""


class ImportedSpecRefusedError(GeneratorError):
    """The spec `import` would write is one regenerate refuses; nothing is written."""


class ImportWouldDropError(GeneratorError):
    """`import --force` would replace a spec file that declares other backends too."""


class SpecExistsError(GeneratorError):
    """`import` would overwrite an existing spec file (and --force was not given)."""


class ImportNameError(GeneratorError):
    """`import --name` is not usable as a spec file name."""


class UnknownBackendError(GeneratorError):
    """A command was given a backend name that no spec or generated module defines."""


class NothingToCompareError(GeneratorError):
    """`diff` found nothing to compare: not a project, a revision without generated/, a missing file."""


class NotAProjectError(GeneratorError):
    """The project root has no spec/ folder."""


class NoSpecFilesError(GeneratorError):
    """spec/ holds no spec file, so there is nothing to generate (and regenerate would delete everything)."""


class WriteError(GeneratorError):
    """A generated file (or its folder) cannot be written."""


class ManifestError(GeneratorError):
    """The manifest lists a path the generator could not have written (a bad merge, a hand edit): untrusted,
    so nothing it names is deleted or replaced."""


class FileAccessError(GeneratorError):
    """A file the generator needs cannot be read, or another operating-system failure."""


class Interrupted(GeneratorError):
    """The user pressed Ctrl-C (SIGINT); writing is atomic, so every file is whole."""

    exit_code = 130  # 128 + SIGINT, what a shell reports for Ctrl-C


class InternalError(GeneratorError):
    """A bug in the generator itself: still one line, with what to report."""


class ReferenceBuilderError(GeneratorError):
    """A backend's reference builder is not callable, fails, or returns no BackendConfig."""


class GeneratedModuleError(GeneratorError):
    """A generated module that `diff` needs is missing or fails to import."""


class MissingDependencyError(GeneratorError):
    """The interpreter running the generator lacks a package it needs (torch, Jinja2, black, ...)."""


class NotImportableError(GeneratorError):
    """A spec names an object whose package imports only from the project root, not from any other folder."""


class ProjectConfigError(GeneratorError):
    """The project's [tool.backend-config-generator] table in pyproject.toml is not valid."""


class ProcessLimitError(GeneratorError):
    """The system refused a process or a file the command needs (ulimit -u, -n, -v): no fault of the spec."""


class ProcessEndedError(GeneratorError):
    """A process the command runs (the load server) was ended from outside the command: no fault of the spec."""
