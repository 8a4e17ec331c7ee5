"""Attack runs kept in the store by the content of their inputs (``stats.memo``).

An attack on outputs alone is a pure function of arrays: the queries', population's and validation
records' labels, logits and reference masks, its parameters, the mode and the seed. Its result is kept
in the store's ``memo/attack`` namespace by the hash of all of that and of miaudit's code, so a second audit of
the same outputs (``miaudit score`` run again, another report, another FPR level) reads every attack's
scores instead of recomputing them; so are the deployable thresholds, which cost the attack again per
pseudo-target. Attacks that read the models or the records' inputs are always run: their inputs are torch
modules and images, which would cost more to hash than to score.

Reference logits held as a ``LogitStack`` are keyed by each model's digest, which the signal store knows
already (``training.signal_store``), so a key costs reading the queries' logits, not every reference's.
"""

from __future__ import annotations

import inspect
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

import numpy as np

from .. import storage
from ..attacks import AttackInputs, AttackResult, RecordSet, registry
from ..attacks.base import AttackParams
from ..stats import memo
from ..stats.logitstack import LogitStack

J = TypeVar("J")  # a JSON-able value

UNCACHED_NEEDS = {"models", "x", "labels"}  # what an attack may read that the key does not cover


def _stack_parts(block: np.ndarray | LogitStack) -> list[memo.Part]:
    if isinstance(block, LogitStack) and block.source is not None:
        return [block.rows, block.n_classes, *(block.source.digest(m) for m in block.per_model)]
    return [np.asarray(block)]


def _record_parts(records: RecordSet | None) -> list[memo.Part]:
    if records is None:
        return [None]
    arrays = (records.labels, records.target_logits, records.ref_in, records.target_views, records.ref_views)
    return [*arrays, *_stack_parts(records.ref_logits)]


def key_parts(info: registry.AttackInfo, params: AttackParams, inputs: AttackInputs) -> list[memo.Part] | None:
    """What determines the attack's result on ``inputs`` (restricted to its references already); None when
    the attack reads something the key cannot cover."""
    if info.needs & UNCACHED_NEEDS:
        return None
    parts: list[memo.Part] = [info.name, _source_digest(info.fn), params.model_dump_json(), inputs.mode, inputs.seed]
    for records in (inputs.queries, inputs.population, inputs.validation):
        parts += _record_parts(records)
    return parts


def _source_digest(fn: Callable) -> str | None:
    """The hash of the file defining ``fn`` when it lies outside miaudit (a user's registered attack: editing
    it must not serve its old results; miaudit's own code is in every key already)."""
    path = inspect.getsourcefile(fn)
    if path is None or Path(path).resolve().is_relative_to(memo.PACKAGE):
        return None
    return storage.hash_file(path)


def execute(info: registry.AttackInfo, params: AttackParams, references: int, inputs: AttackInputs) -> AttackResult:
    """``registry.execute``, its result read from the store when the same attack ran on the same content."""
    parts = key_parts(info, params, inputs.first(references))
    if parts is None:
        return registry.execute(info, params, references, inputs)
    blob = memo.memoized("attack", parts, lambda: _to_bytes(registry.execute(info, params, references, inputs)))
    return _from_bytes(blob)


def memoized_json(kind: str, parts: list[memo.Part] | None, compute: Callable[[], J]) -> J:
    """``compute()`` (JSON-able), kept by ``parts`` when given (None: always computed; read back from JSON, the
    value ``compute`` gave)."""
    if parts is None:
        return compute()
    return json.loads(memo.memoized(kind, parts, lambda: json.dumps(compute()).encode()))


def _to_bytes(result: AttackResult) -> bytes:
    arrays = {"scores": result.scores}
    for name in ("log_pvalues", "log_pvalues_calibrated"):
        if getattr(result, name) is not None:
            arrays[name] = getattr(result, name)
    arrays.update({f"extra.{k}": np.asarray(v) for k, v in result.extra.items()})
    buf = io.BytesIO()
    # the cast: numpy's stub reads the ** as its allow_pickle flag
    np.savez(buf, allow_pickle=False, **cast(dict[str, Any], arrays))
    return buf.getvalue()


def _from_bytes(blob: bytes) -> AttackResult:
    with np.load(io.BytesIO(blob), allow_pickle=False) as f:
        arrays = {name: f[name] for name in f.files}
    extra = {name.removeprefix("extra."): v for name, v in arrays.items() if name.startswith("extra.")}
    return AttackResult(
        scores=arrays["scores"],
        log_pvalues=arrays.get("log_pvalues"),
        log_pvalues_calibrated=arrays.get("log_pvalues_calibrated"),
        extra=extra,
    )
