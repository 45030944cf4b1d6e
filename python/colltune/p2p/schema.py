"""The p2p.json schema (colltune-p2p, version 1, docs/P2P.md): point-to-point costs per
communication layer, read by the collective models. A validator that names the file, the
field and the reason, as every colltune input does; and the switch rule."""

from __future__ import annotations

from pathlib import Path

from ..core.files import is_number, problem_recorder, read_validated

SCHEMA = "colltune-p2p"
SCHEMA_VERSION = 1
MODES = ("blocking", "immediate", "rendezvous")
POINT_NUMBERS = ("os_us", "or_us", "g_us", "oneway_us")


class P2PFileError(ValueError):
    """A p2p file that cannot be used: the message names the file, the field, why."""


def validate(doc, where: str = "p2p.json") -> list[str]:
    """Every problem found in a p2p document (empty: valid)."""
    errors: list[str] = []

    need = problem_recorder(where, errors)

    def value(v, field, null=False):
        if v is None and null:
            return True
        if not need(is_number(v), field, "not a number" + (" or null" if null else "")):
            return False
        return need(v >= 0, field, f"negative ({v})")

    def number(obj, key, field, *, null=False):
        if key not in obj:
            return need(False, field, "missing")
        return value(obj[key], field, null)

    if not need(isinstance(doc, dict), "(top)", "not a JSON object"):
        return errors
    if not need(doc.get("schema") == SCHEMA, "schema",
                f"expected {SCHEMA!r}, found {doc.get('schema')!r}"):
        return errors
    version = doc.get("schema_version")
    if not need(version == SCHEMA_VERSION and not isinstance(version, bool), "schema_version",
                f"schema_version {version!r} is not supported "
                f"(this colltune reads {SCHEMA_VERSION})"):
        return errors
    for key in ("colltune_version", "created_at"):
        need(isinstance(doc.get(key), str), key, "missing" if key not in doc else "not a string")
    for key in ("quick", "complete"):
        need(isinstance(doc.get(key), bool), key, "missing" if key not in doc else "not a boolean")
    need(isinstance(doc.get("host"), dict), "host", "missing or not an object")
    mpi = doc.get("mpi")
    if need(isinstance(mpi, dict), "mpi", "missing or not an object"):
        for key in ("build", "implementation", "version", "library"):
            need(isinstance(mpi.get(key), str), f"mpi.{key}",
                 "missing" if key not in mpi else "not a string")
    warnings = doc.get("warnings")
    need(isinstance(warnings, list) and all(isinstance(w, str) for w in warnings), "warnings",
         "missing or not a list of strings")
    pending = doc.get("pending_counts")
    pending_ok = need(isinstance(pending, list) and pending
                      and all(isinstance(k, int) and not isinstance(k, bool) and k >= 1
                              for k in pending), "pending_counts",
                      "missing or not a list of positive integers")
    if pending_ok:
        need(all(a < b for a, b in zip(pending, pending[1:], strict=False)), "pending_counts",
             "not ascending")
    layers = doc.get("layers")
    if need(isinstance(layers, list), "layers", "missing or not a list"):
        for i, layer in enumerate(layers):
            _layer(layer, f"layers[{i}]", pending if pending_ok else None, need, number, value)
    local = doc.get("local")
    if need(isinstance(local, dict), "local", "missing or not an object"):
        sizes = local.get("sizes_bytes")
        if _sizes(sizes, "local.sizes_bytes", need):
            for key in ("copy_us", "reduce_us"):
                values = local.get(key)
                f = f"local.{key}"
                if need(isinstance(values, list), f, "missing or not a list") and need(
                        len(values) == len(sizes), f,
                        f"{len(values)} values for {len(sizes)} sizes"):
                    for j, v in enumerate(values):
                        value(v, f"{f}[{j}]")
    return errors


def _sizes(sizes, field, need) -> bool:
    if not need(isinstance(sizes, list), field, "missing or not a list"):
        return False
    ok = True
    for j, s in enumerate(sizes):
        ok &= need(isinstance(s, int) and not isinstance(s, bool) and s >= 1,
                   f"{field}[{j}]", "not a positive integer")
    if ok:
        for j in range(1, len(sizes)):
            if not need(sizes[j] > sizes[j - 1], f"{field}[{j}]",
                        f"not ascending ({sizes[j]} after {sizes[j - 1]})"):
                return False
    return ok


def _layer(layer, f, pending, need, number, value) -> None:
    if not need(isinstance(layer, dict), f, "not an object"):
        return
    need(isinstance(layer.get("layer"), int) and not isinstance(layer.get("layer"), bool)
         and layer["layer"] >= 0, f + ".layer",
         "missing" if "layer" not in layer else "not a non-negative integer")
    pair = layer.get("pair", "missing")
    need(pair is None or (isinstance(pair, list) and len(pair) == 2
                          and all(isinstance(c, int) and not isinstance(c, bool) and c >= 0
                                  for c in pair)), f + ".pair",
         "missing" if pair == "missing" else "not null or a [core, core] pair")
    number(layer, "latency_us", f + ".latency_us", null=True)
    # optional (older files lack them): absent means inside one host
    need(isinstance(layer.get("between_hosts", False), bool), f + ".between_hosts",
         "not a boolean")
    hosts = layer.get("hosts")
    need(hosts is None or (isinstance(hosts, list) and len(hosts) == 2
                           and all(isinstance(h, str) and h for h in hosts)),
         f + ".hosts", "not null or a [host, host] pair")
    # optional contention data (docs/P2P.md "Contention fields"): both or neither
    conc = layer.get("concurrent_pairs")
    if conc is not None and not need(
            isinstance(conc, list) and conc
            and all(isinstance(k, int) and not isinstance(k, bool) and k >= 1 for k in conc)
            and all(a < b for a, b in zip(conc, conc[1:], strict=False)),
            f + ".concurrent_pairs", "not a list of ascending integers >= 1"):
        conc = None
    points = layer.get("points")
    if need(isinstance(points, list), f + ".points", "missing or not a list"):
        previous = None
        for j, p in enumerate(points):
            pf = f"{f}.points[{j}]"
            if not need(isinstance(p, dict), pf, "not an object"):
                continue
            size = p.get("size_bytes")
            if need(isinstance(size, int) and not isinstance(size, bool) and size >= 1,
                    pf + ".size_bytes",
                    "missing" if "size_bytes" not in p else "not a positive integer"):
                if previous is not None:
                    need(size > previous, pf + ".size_bytes",
                         f"not ascending ({size} after {previous})")
                previous = size
            for key in POINT_NUMBERS:
                number(p, key, f"{pf}.{key}")
            need(p.get("mode") in MODES, pf + ".mode",
                 "missing" if "mode" not in p else
                 f"unknown mode {p.get('mode')!r} (one of {', '.join(MODES)})")
            for key in ("os_pending_us", "g_pending_us"):
                values = p.get(key)
                if not need(isinstance(values, list), f"{pf}.{key}", "missing or not a list"):
                    continue
                if pending is not None:
                    need(len(values) == len(pending), f"{pf}.{key}",
                         f"{len(values)} values for {len(pending)} pending_counts")
                for k, v in enumerate(values):
                    value(v, f"{pf}.{key}[{k}]")
            _concurrent(p, pf, layer, conc, need, value)
    if "stream" in layer:
        _stream(layer["stream"], f + ".stream", need, value)
    switches = layer.get("switches")
    if need(isinstance(switches, list), f + ".switches", "missing or not a list"):
        for j, s in enumerate(switches):
            sf = f"{f}.switches[{j}]"
            if not need(isinstance(s, dict), sf, "not an object"):
                continue
            need(isinstance(s.get("at_bytes"), int) and not isinstance(s.get("at_bytes"), bool)
                 and s["at_bytes"] >= 1, sf + ".at_bytes", "not a positive integer")
            for key in ("from", "to"):
                need(s.get(key) in MODES, f"{sf}.{key}",
                     f"unknown mode {s.get(key)!r} (one of {', '.join(MODES)})")


def _concurrent(p, pf, layer, conc, need, value) -> None:
    """A point's oneway_concurrent_us: one non-negative number per concurrent_pairs entry,
    present exactly when the layer has concurrent_pairs."""
    field = pf + ".oneway_concurrent_us"
    values = p.get("oneway_concurrent_us")
    if "concurrent_pairs" not in layer:
        need(values is None, field, "present without the layer's concurrent_pairs")
        return
    if not need(isinstance(values, list), field, "missing or not a list"):
        return
    if conc is not None:
        need(len(values) == len(conc), field,
             f"{len(values)} values for {len(conc)} concurrent_pairs")
    for k, v in enumerate(values):
        value(v, f"{field}[{k}]")


def _sized_rows(obj, f, need, value, keys) -> bool:
    """`obj`'s sizes_bytes (ascending positive integers) and, for each of `keys` (a key to
    whether it must be there) that is there, one positive value per size. True when the
    sizes are good."""
    sizes = obj.get("sizes_bytes")
    sizes_ok = need(isinstance(sizes, list) and sizes
                    and all(isinstance(m, int) and not isinstance(m, bool) and m >= 1
                            for m in sizes)
                    and all(a < b for a, b in zip(sizes, sizes[1:], strict=False)),
                    f + ".sizes_bytes", "not a list of ascending positive integers")
    for key, required in keys.items():
        if key in obj or required:
            _positive_row(obj.get(key), f"{f}.{key}", len(sizes) if sizes_ok else None,
                          need, value)
    return sizes_ok


def _positive_row(row, rf, count, need, value) -> None:
    """One positive value per size (count: how many; None: unknown)."""
    if not need(isinstance(row, list) and (count is None or len(row) == count), rf,
                "missing or not one value per size"):
        return
    for i, v in enumerate(row):
        if value(v, f"{rf}[{i}]"):
            need(v > 0, f"{rf}[{i}]", "not positive")


def _fanout(fo, f, need, value) -> None:
    """A stream's optional `fanout`: sizes_bytes ascending, first_us and second_us one
    positive time per size."""
    if need(isinstance(fo, dict), f, "not an object"):
        _sized_rows(fo, f, need, value, {"first_us": True, "second_us": True})


def _stream(st, f, need, value) -> None:
    """A layer's optional `stream` (host stacks, docs/MODEL.md): sizes_bytes ascending,
    pair_us (and optionally duplex_us) one positive gap per size, fanin_flows ascending
    integers >= 2 with fanin_us one such row per count."""
    if not need(isinstance(st, dict), f, "not an object"):
        return
    sizes_ok = _sized_rows(st, f, need, value, {"pair_us": True, "duplex_us": False})
    sizes = st.get("sizes_bytes")

    if "fanout" in st:
        _fanout(st["fanout"], f + ".fanout", need, value)
    flows = st.get("fanin_flows")
    if flows is None and "fanin_us" not in st:
        return
    if need(isinstance(flows, list) and flows
            and all(isinstance(k, int) and not isinstance(k, bool) and k >= 2 for k in flows)
            and all(a < b for a, b in zip(flows, flows[1:], strict=False)),
            f + ".fanin_flows", "not a list of ascending integers >= 2"):
        rows = st.get("fanin_us")
        if need(isinstance(rows, list) and len(rows) == len(flows), f + ".fanin_us",
                "not one row per fan-in count"):
            for j, row in enumerate(rows):
                _positive_row(row, f"{f}.fanin_us[{j}]", len(sizes) if sizes_ok else None,
                              need, value)


def switches(points: list[dict]) -> list[dict]:
    """Where the Isend mode changes along ascending sizes. A new mode counts only once it
    holds for 2 consecutive points: a single-point blip (noise on a shared machine) is
    ignored, and so is a change at the very last point."""
    out: list[dict] = []
    if not points:
        return out
    current = points[0]["mode"]
    for i in range(1, len(points) - 1):
        mode = points[i]["mode"]
        if mode != current and points[i + 1]["mode"] == mode:
            out.append({"at_bytes": points[i]["size_bytes"], "from": current, "to": mode})
            current = mode
    return out


def load(path: str | Path) -> dict:
    """Read and validate a p2p file; P2PFileError says what is wrong."""

    return read_validated(path, validate, P2PFileError)
