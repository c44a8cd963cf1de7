"""This environment's proofs: that its generator, black and Jinja2 write a generated file's bytes from its inputs.

The committed manifest records only the project's inputs, the same in every teammate's clone. What a
run's environment adds (digests.is_environmental: the generator's code and the templates it ships,
black's and Jinja2's versions) can change no committed file unless it changes a file's bytes, and
each environment finds that out once: a run that rendered a target and found its bytes on disk (or
wrote them) keeps a proof in the project's cache (cache.PROOFS), found by all of the target's current
inputs, the environment's included (environments that take turns in one clone each stay proven).
`check` then trusts the file without rendering it; another build of the tool, another black, an
edited input make another key, and the next run renders the file once to prove it again.

A proof also names the project files the proving load read that the manifest does not list (a spec
that reads a new file since its output last changed): it holds only while they are as they were read.
A proof is a cache entry, sealed like every other: deleting it costs a render, never a wrong verdict.
"""

from __future__ import annotations

import json

from generator import cache, digests
from generator.freshness import manifest
from generator.freshness.planning import Status, Target, status

_KEPT = 1024  # proofs, by their key: a few environments (two Pythons, two branches of the tool) stay proven each
UNPROVEN = "unproven"  # the file is what the manifest records, but this environment never rendered its inputs


def settled(target: Target, recorded: manifest.Manifest | None) -> Status:
    """planning.status, with this environment's proofs: a file the manifest records, from inputs that changed or
    not, is fresh once proven here, else UNPROVEN; either keeps the inputs that changed since the manifest's record."""
    found = status(target, recorded)
    if not found.as_recorded:
        return found
    proven = holds(target, recorded.outputs[target.relative].digest)
    return Status("fresh" if proven else UNPROVEN, found.reasons, as_recorded=True)


def holds(target: Target, digest: str) -> bool:
    """Whether this environment proved that it writes text of `digest` for the target's current inputs."""
    kept = cache.Cache(target.root, cache.PROOFS).get(_key(target))
    try:
        proof = json.loads(kept) if kept is not None else None
        if not isinstance(proof, dict) or proof.get("digest") != digest:
            return False
        reads = dict(proof.get("reads", {}))
    except (ValueError, TypeError, AttributeError):  # not UTF-8, not JSON, not this shape: no proof
        return False
    return all(digests.input_digest(target.root, name) == read for name, read in reads.items())


def keep(planned: Target, observed: Target, text: str) -> None:
    """Keep the proof that this environment writes `text` for `planned`'s inputs (as a run plans them from the
    manifest); `observed` is the same target with the inputs its load read."""
    planned_inputs = dict(planned.made_from)
    reads = {name: d for name, d in observed.made_from if planned_inputs.get(name) != d}
    payload = json.dumps({"digest": digests.text_digest(text), "reads": dict(sorted(reads.items()))}, indent=1).encode()
    kept = cache.Cache(planned.root, cache.PROOFS)
    if kept.get(_key(planned)) != payload:  # a forced run proves again what is kept already
        kept.put(_key(planned), payload)
        kept.prune(_KEPT)


def _key(target: Target) -> bytes:
    return cache.key(cache.PROOFS, target.relative, target.inputs)
