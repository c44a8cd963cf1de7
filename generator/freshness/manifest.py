"""The manifest: what each generated file was made from, in one file (generated/manifest.json: the
generated folder's manifest.json, project.ProjectConfig.manifest).

Generated files carry no input digests, so a change that leaves a file's body
alone leaves the file alone. The manifest records instead:
- `inputs`: the digest of every project input (the project's files and environment
  variables a spec load read, its templates, its table);
- `outputs`: per generated file, the digest of its text and the names of its
  inputs. `pinned` holds the digests of inputs that the file was made from when
  they differ from `inputs` (a file whose inputs changed since, but not its bytes);
  `previous` exists only while a regenerate runs (see `pending`);
- `written_by`: the tool's version that last wrote a generated file.

It holds nothing of a teammate's environment (digests.is_environmental: the
generator's code, the templates it ships, black's and Jinja2's versions): each
environment proves on its own that it writes the same bytes (freshness/proofs.py).
A file's record changes only when its bytes do, so an input that changes no output,
another build of the tool or another black leaves the manifest as it is. Nothing
here imports torch, Jinja2 or black.

It also owns the write protocol (`write_outputs`): the order in which a run
writes the generated files and the manifest, so that a run killed at any point
leaves every file whole and the manifest able to tell which are new.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath

from generator import digests, errors, files, project

PATH = Path(project.DEFAULT.manifest)  # in a project of the default layout; path_in(root) in any
ABOUT = "Written by python -m generator regenerate: what each generated file was made from. DO NOT EDIT."
WRITER = f"{project.COMMAND} {project.VERSION}"  # this tool, as `written_by` names it


@dataclass(frozen=True)
class Entry:
    """One generated file: the digest of its text and the inputs it was made from."""

    digest: str
    inputs: tuple[str, ...]
    pinned: tuple[tuple[str, str], ...] = ()
    previous: str | None = None  # the digest of the text a running regenerate replaces


@dataclass(frozen=True)
class Manifest:
    inputs: dict[str, str] = field(default_factory=dict)
    outputs: dict[str, Entry] = field(default_factory=dict)
    written_by: str = ""

    def made_from(self, entry: Entry) -> dict[str, str]:
        """The input digests one output was made from (None for an input never recorded)."""
        pinned = dict(entry.pinned)
        return {name: pinned.get(name, self.inputs.get(name)) for name in entry.inputs}

    def text(self) -> str:
        """The manifest file: sorted keys, one value per line, so a change touches few lines."""
        outputs = {}
        for output, entry in sorted(self.outputs.items()):
            record = {"digest": entry.digest, "inputs": list(entry.inputs)}
            if entry.pinned:
                record["pinned"] = dict(entry.pinned)
            if entry.previous:
                record["previous"] = entry.previous
            outputs[output] = record
        document = {"about": ABOUT, "inputs": dict(sorted(self.inputs.items())), "outputs": outputs}
        document["written_by"] = self.written_by
        return json.dumps(document, indent=1) + "\n"


def path_in(root: Path) -> Path:
    """The manifest's path relative to the root: in the generated folder the project configures."""
    return Path(project.config(root).manifest)


def read(root: Path) -> Manifest | None:
    """The manifest, or None when it is missing or not one (a hand edit that broke it, JSON too deep to read).

    It is untrusted input (a bad merge, a hand edit, a pull request): ManifestError when it lists an output the
    generator could not have written here, or an input by an absolute path, so nothing it names outside the
    generated files is ever deleted or replaced. The environment's inputs that an older manifest recorded are
    left out, as this tool records none."""
    relative = path_in(root)
    try:
        text = (root / relative).read_text(encoding="utf-8")
        document = json.loads(text)
        outputs = {
            name: Entry(
                _string(record["digest"]),
                _project_inputs(_string(name) for name in record["inputs"]),
                tuple(
                    sorted(
                        (_string(n), _string(d))
                        for n, d in record.get("pinned", {}).items()
                        if not digests.is_environmental(n)
                    )
                ),
                record.get("previous") and _string(record["previous"]),
            )
            for name, record in document["outputs"].items()
        }
        inputs = {
            _string(name): _string(digest)
            for name, digest in document["inputs"].items()
            if not digests.is_environmental(name)
        }
        written_by = _string(document.get("written_by", ""))
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return None
    _check_paths(root, relative.as_posix(), text, outputs, inputs)
    return Manifest(inputs, outputs, written_by)


def _string(value) -> str:
    if not isinstance(value, str):
        raise TypeError(value)
    return value


def _check_paths(root: Path, relative: str, text: str, outputs: dict[str, Entry], inputs: dict[str, str]) -> None:
    """Every output a file the generator writes (a module in the generated folder, the matrix), every input
    named relative to the root."""
    layout = project.config(root)
    for name in sorted(outputs):
        if not _could_be_written(root, layout, name):
            matrix = f" and {layout.matrix}" if layout.matrix else ""
            raise errors.ManifestError(
                f"lists {name!r} as a generated file, which the generator does not write (only "
                f"{layout.generated}/*.py{matrix}), so it neither removes nor replaces it; take that entry out "
                f"(a bad merge?), or delete {relative} and run python -m generator regenerate",
                _line_of(relative, text, name),
            )
    for name in sorted({*inputs, *(n for entry in outputs.values() for n in entry.inputs)}):
        if PurePosixPath(name).is_absolute() or PureWindowsPath(name).is_absolute() or "\0" in name:
            raise errors.ManifestError(
                f"lists the input {name!r}, which is no path relative to the project; take that entry out, or "
                f"delete {relative} and run python -m generator regenerate",
                _line_of(relative, text, name),
            )


def _could_be_written(root: Path, layout: project.ProjectConfig, name: str) -> bool:
    """A generated module's file (`generated/x86.py`), the configured matrix, or a matrix the project had
    before its table moved it: a Markdown file of the project that is gone or starts with the matrix's header."""
    if name == layout.matrix:
        return True
    folder, _, file = name.rpartition("/")
    stem = file.removesuffix(".py")
    if folder == layout.generated and file.endswith(".py"):
        return stem.isidentifier() and not stem.startswith("__") and stem != PATH.stem
    parts = name.split("/")
    if not name.endswith(".md") or any(part in ("", ".", "..") or part.startswith(".") for part in parts):
        return False
    if "\\" in name or PureWindowsPath(name).is_absolute() or project.is_output(root, name):
        return False
    header = digests.MARKDOWN.line(digests.GENERATED_TEXT).encode()
    try:
        descriptor = os.open(root / name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO: never waited on
        with os.fdopen(descriptor, "rb", buffering=0) as stream:
            return stat.S_ISREG(os.fstat(descriptor).st_mode) and stream.read(len(header)) == header
    except FileNotFoundError:
        return True
    except OSError:
        return False


def _line_of(relative: str, text: str, name: str):
    """Where the manifest names `name` (its first line saying so), or its first line."""
    from generator.model import SourceLocation  # only for an error: check's fast path does without the model

    quoted = json.dumps(name)
    found = next((number for number, line in enumerate(text.splitlines(), 1) if quoted in line), 1)
    return SourceLocation(relative, found)


def _project_inputs(names) -> tuple[str, ...]:
    return tuple(name for name in names if not digests.is_environmental(name))


def updated(
    old: Manifest | None, current: dict[str, dict[str, str]], written: dict[str, str], orphans=()
) -> Manifest:
    """The manifest after writing some outputs.

    `current` maps every output to its current inputs {name: digest}; `written`
    maps the outputs whose text changes to the digest of their new text. Only those
    get a new record; the others keep theirs, with the digests they were made from,
    and so do the `orphans` (outputs whose spec file is gone, that this run leaves to a
    regenerate). So the manifest is the same whichever environment wrote the outputs
    (each renders the same bytes), and unchanged where no output changed.
    """
    current = {output: committed(made_from) for output, made_from in current.items()}
    now = {name: digest for made_from in current.values() for name, digest in made_from.items()}
    records = {}  # output: (digest, {input: the digest it was made from})
    for output, made_from in [*current.items(), *((o, {}) for o in orphans if o not in current)]:
        if output in written:
            records[output] = (written[output], made_from)
        elif old is not None and output in old.outputs:
            entry = old.outputs[output]
            records[output] = (entry.digest, {n: d for n, d in old.made_from(entry).items() if d is not None})
    # Each input's digest: its current one where a record was made from it, else the least recorded. So the
    # manifest is one function of its records, whichever run wrote which of them.
    used: dict[str, set[str]] = {}
    for _, made_from in records.values():
        for name, digest in made_from.items():
            used.setdefault(name, set()).add(digest)
    inputs = {name: now[name] if now.get(name) in found else min(found) for name, found in used.items()}
    outputs = {}
    for output, (digest, made_from) in sorted(records.items()):
        pinned = tuple(sorted((n, d) for n, d in made_from.items() if inputs[n] != d))
        names = tuple(sorted(made_from)) if output in written else old.outputs[output].inputs
        outputs[output] = Entry(digest, names, pinned)
    writer = WRITER if written or old is None else old.written_by
    return Manifest(inputs, outputs, writer)


def committed(made_from) -> dict[str, str]:
    """The inputs as the manifest records them: the project's alone (not the environment's, which each
    environment proves: freshness/proofs.py), and an environment variable by READ, never by a digest of its
    value (a committed file holds nothing of a secret; the proof's key holds the value's keyed digest)."""
    return {
        name: digests.READ if name.startswith(digests.ENVIRONMENT) else digest
        for name, digest in dict(made_from).items()
        if not digests.is_environmental(name)
    }


def pending(manifest: Manifest, replaced: dict[str, str]) -> Manifest:
    """The manifest written before the outputs: it also knows each replaced file's old digest.

    A run killed while writing outputs then leaves each file either new (its
    digest is the recorded one: fresh) or old (its digest is `previous`: stale,
    not edited by hand).
    """
    outputs = {
        output: Entry(entry.digest, entry.inputs, entry.pinned, replaced.get(output))
        for output, entry in manifest.outputs.items()
    }
    return Manifest(manifest.inputs, outputs, manifest.written_by)


def write_outputs(
    root: Path, targets, texts: dict[str, str], every=None, remove=(), forget=()
) -> list[tuple[str, Path]]:
    """Write the targets' new texts, then the manifest; `every` is all targets (default: `targets`).

    The manifest is written twice when a file changes: first with each replaced
    file's old digest (so that a run killed among the outputs leaves files that
    check calls either fresh or stale, never edited by hand), last without.
    The files in `remove` (outputs whose spec file is gone) are removed before the last manifest,
    so that a run killed before it leaves them listed, to be removed by the next run. The files in
    `forget` are no longer listed (and left alone); other listed files that no target makes stay listed.
    Before any of it, every folder written or removed from must take a new file. What happened is
    returned as ("written", "unchanged" or "removed", path relative to `root`) for the caller to print once
    the tree is whole: a full or closed standard output cannot stop the run halfway.
    """
    relative = path_in(root)
    for directory in {t.output.parent for t in targets} | {(root / relative).parent}:
        files.remove_stale_temporaries(directory)
    recorded = read(root)
    new_texts = {t.relative: texts[t.name] for t in targets if t.name in texts}
    current = {t.relative: dict(t.made_from) for t in (every or targets)}
    gone = {relative.as_posix(), *(p.relative_to(root).as_posix() for p in (*remove, *forget))}
    orphans = [o for o in (recorded.outputs if recorded else ()) if o not in gone and (root / o).is_file()]
    new_digests = {o: digests.text_digest(text) for o, text in new_texts.items()}
    known = recorded.outputs if recorded is not None else {}
    changed = {o: d for o, d in new_digests.items() if o not in known or known[o].digest != d}
    # A manifest rewritten for a changed file records anew every file built (those whose inputs changed among them):
    # which files those are depends on the tree and the manifest alone, not on what this environment proved.
    final = updated(recorded, current, new_digests if changed else {}, orphans)
    replaced = {t.relative: digest_of(t.output) for t in targets if t.relative in new_texts}
    replaced = {o: d for o, d in replaced.items() if d != final.outputs[o].digest}
    manifest_changes = bool(replaced) or digest_of(root / relative) != digests.text_digest(final.text())
    files.ensure_writable([*(root / o for o in replaced), *[root / relative] * manifest_changes, *remove])
    if replaced:
        files.write_if_changed(root / relative, pending(final, replaced).text())
    report = []
    for target in targets:
        written = target.relative in new_texts and files.write_if_changed(target.output, new_texts[target.relative])
        report.append(("written" if written else "unchanged", target.output.relative_to(root)))
    for path in remove:
        files.remove(path)
        report.append(("removed", path.relative_to(root)))
    if files.write_if_changed(root / relative, final.text()):
        report.append(("written", relative))
    return report


def digest_of(path: Path) -> str | None:
    """The digest of a file's text as on disk (what the manifest records); None when it does not exist."""
    return digests.file_text_digest(path) if path.exists() else None
