"""Grouping of pair measurements (Servet, sections 2.2 to 2.4): pure functions.

- `cluster_values`: one-dimensional clustering of positive values (latencies, bandwidths)
  into groups of similar values: sorted, then cut wherever a value exceeds the previous one
  by more than `tolerance` (relative). The paper's "similar to some L[i]" loop depends on
  the order the pairs are visited in; cutting sorted values at gaps does not.
- `comm_layers`: the communication layers of a latency matrix.
- `bandwidth_groups`: memory-contention groups of pair bandwidths.
- `sharing_groups`: the groups of cores sharing a cache, from the pairs found to share it.
"""

from __future__ import annotations

import math
import statistics

Pair = tuple[int, int]


def cluster_values(values: list[float], tolerance: float = 0.2) -> list[int]:
    """A cluster label per value (0 = the smallest values), cutting the sorted values where
    one exceeds the previous by more than `tolerance` (0.2: 20 %)."""
    if not values:
        return []
    order = sorted(range(len(values)), key=lambda i: values[i])
    labels = [0] * len(values)
    label = 0
    for prev, cur in zip(order, order[1:], strict=False):
        lo, hi = values[prev], values[cur]
        if lo <= 0 or hi / lo > 1 + tolerance:
            label += 1
        labels[cur] = label
    return labels


def _groups(items: list, values: list[float], tolerance: float) -> list[list[int]]:
    labels = cluster_values(values, tolerance)
    out: dict[int, list[int]] = {}
    for i, lab in enumerate(labels):
        out.setdefault(lab, []).append(i)
    return [out[k] for k in sorted(out)]


def comm_layers(latency: dict[Pair, float], tolerance: float = 0.2) -> list[dict]:
    """Layers of similar latency, fastest first: latency_us (median of the layer), min and
    max, its pairs, and a representative pair (the one closest to the median)."""
    pairs = sorted(latency)
    values = [latency[p] for p in pairs]
    layers = []
    for members in _groups(pairs, values, tolerance):
        lat = [values[i] for i in members]
        med = statistics.median(lat)
        rep = min(members, key=lambda i: (abs(values[i] - med), pairs[i]))
        layers.append({"latency_us": round(med, 4), "min_us": round(min(lat), 4),
                       "max_us": round(max(lat), 4),
                       "pairs": [list(pairs[i]) for i in members],
                       "representative": list(pairs[rep])})
    for i, layer in enumerate(layers):
        layer["layer"] = i
    return layers


def host_layers(latency: dict[Pair, float], host: dict[int, str],
                tolerance: float = 0.2) -> list[dict]:
    """Layers of a job spread over several hosts (pairs of ranks): the pairs inside a host
    and the pairs between hosts are clustered apart, so that no layer mixes the two, then
    numbered fastest first; each layer says `between_hosts` and the hosts of its
    representative pair."""
    inside = {p: v for p, v in latency.items() if host[p[0]] == host[p[1]]}
    between = {p: v for p, v in latency.items() if host[p[0]] != host[p[1]]}
    layers = ([{**la, "between_hosts": False} for la in comm_layers(inside, tolerance)]
              + [{**la, "between_hosts": True} for la in comm_layers(between, tolerance)])
    layers.sort(key=lambda la: (la["latency_us"], la["between_hosts"]))
    for i, layer in enumerate(layers):
        layer["layer"] = i
        layer["hosts"] = [host[r] for r in layer["representative"]]
    return layers


def bandwidth_groups(pair_gbps: dict[Pair, float], reference_gbps: float,
                     tolerance: float = 0.15, no_contention: float = 0.9) -> list[dict]:
    """Pairs grouped by similar bandwidth per core when both copy at once, highest first.
    A group whose bandwidth is at least `no_contention` x the single-core reference is
    marked contention: false (the pairs do not slow each other down)."""
    pairs = sorted(pair_gbps)
    values = [pair_gbps[p] for p in pairs]
    groups = []
    for members in reversed(_groups(pairs, values, tolerance)):
        bw = statistics.median(values[i] for i in members)
        cores = sorted({c for i in members for c in pairs[i]})
        groups.append({"gbps_per_core": round(bw, 4),
                       "ratio": round(bw / reference_gbps, 4) if reference_gbps > 0 else None,
                       "contention": bool(reference_gbps > 0
                                          and bw < no_contention * reference_gbps),
                       "pairs": [list(pairs[i]) for i in members], "cores": cores})
    return groups


def sharing_groups(cores: list[int], shared_pairs: list[Pair]) -> list[list[int]]:
    """Connected groups of cores joined by the pairs that share (a core alone is a group)."""
    parent = {c: c for c in cores}

    def find(c):
        while parent[c] != c:
            parent[c] = parent[parent[c]]
            c = parent[c]
        return c

    for a, b in shared_pairs:
        if a in parent and b in parent:
            parent[find(a)] = find(b)
    groups: dict[int, list[int]] = {}
    for c in cores:
        groups.setdefault(find(c), []).append(c)
    return sorted((sorted(g) for g in groups.values()), key=lambda g: g[0])


def parse_cpu_list(text: str | None) -> list[int]:
    """'0-3,8' -> [0, 1, 2, 3, 8] (Linux's cpu list format)."""
    out: list[int] = []
    for part in (text or "").split(","):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def geometric_mean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else math.nan
