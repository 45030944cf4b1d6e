"""The machine.json schema (colltune-machine/1, docs/MACHINE.md): a validator that names the
file, the field and the reason, as every colltune input does."""

from __future__ import annotations

from pathlib import Path

from ..core.files import problem_recorder, read_validated

SCHEMA = "colltune-machine/1"
SCHEMA_VERSION = 1
PART_STATUSES = ("ok", "failed", "skipped", "interrupted", "running")


class MachineFileError(ValueError):
    """A machine file that cannot be used: the message names the file, the field, why."""


def validate(doc, where: str = "machine.json") -> list[str]:
    """Every problem found in a machine document (empty: valid)."""
    errors: list[str] = []

    need = problem_recorder(where, errors)

    if not need(isinstance(doc, dict), "(top)", "not a JSON object"):
        return errors
    need(doc.get("schema") == SCHEMA, "schema", f"expected {SCHEMA!r}, found "
         f"{doc.get('schema')!r}")
    need(doc.get("schema_version") == SCHEMA_VERSION, "schema_version",
         f"expected {SCHEMA_VERSION}, found {doc.get('schema_version')!r}")
    need(isinstance(doc.get("cores", []), list), "cores", "not a list")
    parts = doc.get("parts")
    if need(isinstance(parts, dict), "parts", "missing or not an object"):
        for name, part in parts.items():
            need(isinstance(part, dict) and part.get("status") in PART_STATUSES,
                 f"parts.{name}.status", f"one of {', '.join(PART_STATUSES)}")
    caches = doc.get("caches")
    if need(isinstance(caches, list), "caches", "missing or not a list"):
        for i, c in enumerate(caches):
            f = f"caches[{i}]"
            if not need(isinstance(c, dict), f, "not an object"):
                continue
            need(isinstance(c.get("level"), int) and c["level"] >= 1, f + ".level",
                 "a positive integer")
            need(c.get("type") in ("Data", "Unified", "Instruction"), f + ".type",
                 "Data, Unified or Instruction")
            need(isinstance(c.get("size_bytes"), int) and c["size_bytes"] > 0,
                 f + ".size_bytes", "a positive integer")
            need("os_size_bytes" in c and (c["os_size_bytes"] is None
                                           or isinstance(c["os_size_bytes"], int)),
                 f + ".os_size_bytes", "an integer or null")
            need("shared_by" in c and _groups_ok(c["shared_by"]), f + ".shared_by",
                 "null or a list of lists of core ids")
    need("memory" in doc and (doc["memory"] is None or isinstance(doc["memory"], dict)),
         "memory", "null or an object")
    layers = doc.get("comm_layers")
    if need(isinstance(layers, list), "comm_layers", "missing or not a list"):
        for i, layer in enumerate(layers):
            f = f"comm_layers[{i}]"
            need(isinstance(layer.get("latency_us"), int | float) and layer["latency_us"] > 0,
                 f + ".latency_us", "a positive number")
            need(_groups_ok(layer.get("pairs")) and all(len(p) == 2 for p in layer["pairs"]),
                 f + ".pairs", "a list of [core, core] pairs")
    return errors


def _groups_ok(groups) -> bool:
    if groups is None:
        return True
    return isinstance(groups, list) and all(
        isinstance(g, list) and all(isinstance(x, int) for x in g) for g in groups)


def load(path: str | Path) -> dict:
    """Read and validate a machine file; MachineFileError says what is wrong."""

    return read_validated(path, validate, MachineFileError)
