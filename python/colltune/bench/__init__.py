"""Collective benchmarks: the `algorithms`, `preload` and `bench` verbs and the benchmark loop
the other stages reuse."""
