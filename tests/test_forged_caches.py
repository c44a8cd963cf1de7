"""A cache makes a run faster, never different: an entry that this user's own runs did not make is a miss.

Every entry of .cache/generator/ is sealed (HMAC-SHA256) under a secret kept outside the project, in the
user's cache folder (generator/cache.py). An entry forged as the store's format is known (its key kept, its
payload altered, the SHA-256 checksum the store used before recomputed), or sealed under another user's
secret, is not used: `regenerate --force` writes byte for byte what a run without caches writes, and `check`
says what it says without them. Each forgery below is one that a store trusting its checksums would take."""

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys

import pytest

from generator import cache
from tests.support.projects import ROOT, fresh_copy

SPEC = "tensorrt"  # the smallest spec file
OUTPUTS = (f"generated/{SPEC}.py", "docs/support-matrix.md", "generated/manifest.json")
DOC = b"BackendConfig for the TensorRT backend."  # in spec/tensorrt.py, its load and its output
FORGED_DOC = b"BackendConfig for the TensorRT backenD."  # as long: pickles and marshalled code stay sound


def run(project, *args, env=None):
    env = dict(env or os.environ, PYTHONPATH=str(ROOT))
    command = [sys.executable, "-m", "generator", "--root", str(project), *args]
    return subprocess.run(command, cwd=project, env=env, capture_output=True, text=True)


def outputs(project):
    return {name: (project / name).read_bytes() for name in OUTPUTS}


@pytest.fixture(scope="module")
def forced_once(tmp_path_factory):
    """(path, copy, outputs, said): a project of one spec file after `regenerate --force` at `path` (every kind
    of entry made by this user's run), a copy of it, what it wrote and what `check` says: what a run without
    caches writes and says (tests/test_caches.py)."""
    path = fresh_copy(tmp_path_factory.mktemp("forged") / "project", SPEC, factory=tmp_path_factory)
    done = run(path, "regenerate", "--force")
    assert done.returncode == 0, done.stderr
    checked = run(path, "check")
    assert checked.returncode == 0, checked.stderr
    copy = tmp_path_factory.mktemp("forged-copy") / "project"
    shutil.copytree(path, copy, symlinks=True)
    return path, copy, outputs(path), (checked.stdout, checked.stderr)


@pytest.fixture
def project(forced_once):
    """The project as `regenerate --force` left it, at the path it ran at: compiled code is kept by path."""
    path, copy, _, _ = forced_once
    shutil.rmtree(path)
    return shutil.copytree(copy, path, symlinks=True)


def forge(project, kind, name, alter):
    """Entry `name` of `kind` with its key kept, its payload `alter`ed and the old checksum (SHA-256 of key and
    payload) recomputed: all that anyone without the user's secret can make."""
    path = cache.Cache(project, kind).path(name)
    data = path.read_bytes()
    key, payload = data[:32], alter(data[64:])
    assert payload != data[64:], f"{kind}/{name}: nothing to forge"
    path.write_bytes(key + hashlib.sha256(key + payload).digest() + payload)


def entries(project, kind):
    return cache.Cache(project, kind).names()


def replaced(old, new):
    def alter(payload):
        assert old in payload
        return payload.replace(old, new)

    return alter


def forge_format(project):
    """Every formatted piece spelt otherwise in only what the content check allows (letter case)."""

    def alter(payload):
        pieces = json.loads(payload)
        return json.dumps({k: t.replace("torch.", "TORCH.") for k, t in pieces.items()}, sort_keys=True).encode()

    for name in entries(project, cache.FORMAT):
        forge(project, cache.FORMAT, name, alter)


def forge_code(project):
    """The compiled code of spec/tensorrt.py with its module doc altered."""
    forged = 0
    for name in entries(project, cache.CODE):
        if DOC in cache.Cache(project, cache.CODE).read(name).payload:
            forge(project, cache.CODE, name, replaced(DOC, FORGED_DOC))
            forged += 1
    assert forged == 1


def forge_templates(project):
    """Each compiled template that writes a pattern config, writing another name."""
    forged = 0
    for name in entries(project, cache.TEMPLATES):
        if b"BackendPatternConfig" in cache.Cache(project, cache.TEMPLATES).read(name).payload:
            forge(project, cache.TEMPLATES, name, replaced(b"BackendPatternConfig", b"BackendPatternConfiG"))
            forged += 1
    assert forged >= 1


def forge_models(project):
    """spec/tensorrt.py's kept load, with its module doc altered; the module made stale without an input edit."""
    forge(project, cache.MODELS, f"spec/{SPEC}.py", replaced(DOC, FORGED_DOC))
    (project / f"generated/{SPEC}.py").unlink()


def forge_torch_names(project):
    """Every torch name said to be of no kind at all: if taken, validation fails."""

    def alter(payload):
        facts = json.loads(payload)
        return json.dumps({name: dict(fact, kinds=[]) for name, fact in facts.items()}, indent=0).encode()

    (name,) = entries(project, cache.TORCH_NAMES)
    forge(project, cache.TORCH_NAMES, name, alter)


FORGERIES = {
    "format": (forge_format, ("regenerate", "--force")),
    "code": (forge_code, ("regenerate", "--force")),
    "templates": (forge_templates, ("regenerate", "--force")),
    "models": (forge_models, ("regenerate",)),
    "torch names": (forge_torch_names, ("regenerate", "--force")),
}


@pytest.mark.parametrize("kind", sorted(FORGERIES))
def test_a_forged_entry_changes_no_output(forced_once, project, kind):
    *_, written, _ = forced_once
    forgery, command = FORGERIES[kind]
    forgery(project)
    done = run(project, *command)
    assert done.returncode == 0, done.stderr
    assert outputs(project) == written
    full = run(project, "check", "--full")
    assert full.returncode == 0, full.stdout + full.stderr


def test_a_forged_lint_entry_changes_no_warning(forced_once, project):
    *_, said = forced_once
    forge(project, cache.LINT, "findings", lambda _: json.dumps([f"spec/{SPEC}.py:1: a forged warning"]).encode())
    done = run(project, "check")
    assert (done.returncode, done.stdout, done.stderr) == (0, *said)
    assert run(project, "check", "--strict").returncode == 0


def test_a_forged_module_name_changes_no_verdict(forced_once, project):
    *_, written, said = forced_once
    names = entries(project, cache.MODULE_NAMES)
    assert names
    for name in names:
        forge(project, cache.MODULE_NAMES, name, lambda _: b"forged")
    done = run(project, "check")
    assert (done.returncode, done.stdout, done.stderr) == (0, *said)
    assert run(project, "regenerate").returncode == 0
    assert outputs(project) == written and not (project / "generated" / "forged.py").exists()


@pytest.mark.parametrize("kind", [getattr(cache, k) for k in ("MODELS", "CODE", "TEMPLATES", "CHECKS", "FORMAT",
                                                               "TORCH_NAMES", "MODULE_NAMES", "LINT")])  # fmt: skip
def test_an_entry_of_any_kind_with_a_recomputed_checksum_is_a_miss(project, kind):
    kept = cache.Cache(project, kind)
    names = kept.names()
    assert names, kind
    for name in names:
        assert kept.read(name) is not None, (kind, name)  # made by this user's run: used
        forge(project, kind, name, lambda payload: payload + b" ")
        assert kept.read(name) is None, (kind, name)


def test_an_entry_moved_to_another_name_is_a_miss(project):
    kept = cache.Cache(project, cache.CHECKS)
    first, second = kept.names()[:2]
    shutil.copyfile(kept.path(first), kept.path(second))
    assert kept.read(first) is not None and kept.read(second) is None


def test_entries_of_another_user_are_misses_and_cannot_change_output(forced_once, project, tmp_path, monkeypatch):
    *_, written, _ = forced_once
    # Another user's run of the same project: every entry as this user's would be, under another secret.
    theirs = shutil.copytree(project, tmp_path / "theirs", symlinks=True)
    shutil.rmtree(theirs / ".cache")
    with monkeypatch.context() as other_user:
        other_user.setenv("XDG_CACHE_HOME", str(tmp_path / "other-user"))
        cache.forget_secret()
        assert run(theirs, "regenerate", "--force").returncode == 0
        # What they may seal: a formatted piece spelt otherwise, as if black had written it so.
        kept = cache.Cache(theirs, cache.FORMAT)
        (name,) = kept.names()
        entry = kept.read(name)
        assert entry is not None
        pieces = {k: t.replace("torch.", "TORCH.") for k, t in json.loads(entry.payload).items()}
        kept.put(entry.key, json.dumps(pieces, sort_keys=True).encode(), name)
        assert kept.read(name) is not None  # sound under their secret
    cache.forget_secret()  # this user again
    shutil.rmtree(project / ".cache")
    shutil.copytree(theirs / ".cache", project / ".cache")
    kinds = os.listdir(project / ".cache" / "generator")
    assert {cache.FORMAT, cache.MODELS, cache.CODE, cache.TEMPLATES} <= set(kinds)
    for kind in kinds:
        mine = cache.Cache(project, kind)
        assert all(mine.read(n) is None for n in mine.names()), kind
    done = run(project, "regenerate", "--force")
    assert done.returncode == 0, done.stderr
    assert outputs(project) == written
    assert run(project, "check", "--full").returncode == 0


def test_the_secret_is_made_once_for_the_user_alone(tmp_path, project):
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "home-cache"))
    assert run(project, "check", env=env).returncode == 0
    secret = tmp_path / "home-cache" / "backend-config-generator" / "key"
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    assert stat.S_IMODE(secret.parent.stat().st_mode) == 0o700
    made = secret.read_bytes()
    assert len(made) == 32
    assert run(project, "check", env=env).returncode == 0
    assert secret.read_bytes() == made  # kept, not made again


@pytest.mark.parametrize("where", ["unwritable", "readable by others"])
def test_without_a_secret_of_its_own_a_run_uses_no_cache_and_writes_the_same(forced_once, project, tmp_path, where):
    *_, written, _ = forced_once
    home = tmp_path / "home-cache"
    if where == "unwritable":
        home.write_text("a file where a folder would be\n")
    else:
        secret = home / "backend-config-generator" / "key"
        secret.parent.mkdir(parents=True)
        secret.write_bytes(os.urandom(32))
        secret.chmod(0o644)
    env = dict(os.environ, XDG_CACHE_HOME=str(home))
    shutil.rmtree(project / ".cache")
    done = run(project, "regenerate", "--force", env=env)
    assert done.returncode == 0, done.stderr
    assert outputs(project) == written
    kept = project / ".cache" / "generator"
    assert not any(path.is_file() for path in kept.rglob("*") if path.name != "write.lock")
