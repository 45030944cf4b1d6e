"""`cmake --install` (issue 23): a user's Release build (no -Werror) of this source tree with
the MPICH build's compilers, installed into a temporary prefix, then a small MPI program built
against it twice, once with the installed colltune.pc (pkg-config, mpicc) and once with
find_package(colltune) (CMake), and run on 2 ranks. Also: every installed program finds its
libraries. Skipped when cmake or the MPICH build (build/mpich, `make`) is missing."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / "build" / "mpich" / "CMakeCache.txt"

PROGRAM = r"""#include <colltune.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, v;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    v = rank == 0 ? 42 : 0;
    ct_options o;
    ct_options_init(&o);
    int rc = ct_bcast(&v, 1, MPI_INT, 0, MPI_COMM_WORLD, &o);
    printf("rank %d: %d\n", rank, v);
    MPI_Finalize();
    return rc != MPI_SUCCESS || v != 42;
}
"""

CONSUMER = """cmake_minimum_required(VERSION 3.18)
project(consumer C)
find_package(colltune 0.1 REQUIRED)
add_executable(consumer consumer.c)
target_link_libraries(consumer PRIVATE colltune::colltune)
"""


def _cache() -> dict[str, str]:
    out = {}
    for line in CACHE.read_text().splitlines():
        if ":" in line and "=" in line and not line.startswith(("//", "#")):
            key, _, value = line.partition("=")
            out[key.split(":")[0]] = value
    return out


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kw)
    said = f"{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    assert out.returncode == 0, f"{' '.join(map(str, cmd))} -> {out.returncode}\n{said}"
    return out


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    if shutil.which("cmake") is None:
        pytest.skip("cmake not found")
    if not CACHE.is_file():
        pytest.skip(f"no MPICH build ({CACHE} missing): run make")
    cache = _cache()
    mpicc, mpiexec = cache.get("MPI_C_COMPILER"), cache.get("MPIEXEC_EXECUTABLE")
    if not (mpicc and Path(mpicc).is_file() and mpiexec and Path(mpiexec).is_file()):
        pytest.skip(f"the MPICH build's mpicc/mpiexec ({mpicc}, {mpiexec}) are gone: run make")
    tmp = tmp_path_factory.mktemp("install")
    build, prefix = tmp / "build", tmp / "prefix"
    gen = ["-G", "Ninja"] if shutil.which("ninja") else []
    # Configured for another prefix: the install must be relocatable with --prefix.
    _run(["cmake", "-S", ROOT, "-B", build, *gen, "-DCMAKE_BUILD_TYPE=Release",
          "-DCOLLTUNE_TESTS=OFF", f"-DCMAKE_C_COMPILER={cache['CMAKE_C_COMPILER']}",
          f"-DMPI_C_COMPILER={mpicc}", f"-DMPIEXEC_EXECUTABLE={mpiexec}",
          f"-DCMAKE_INSTALL_PREFIX={tmp / 'elsewhere'}"])
    _run(["cmake", "--build", build, "-j", "2"])
    _run(["cmake", "--install", build, "--prefix", prefix])
    (tmp / "consumer.c").write_text(PROGRAM)
    return {"tmp": tmp, "prefix": prefix, "mpicc": mpicc, "mpiexec": mpiexec,
            "cc": cache["CMAKE_C_COMPILER"]}


def _runs_on_two_ranks(inst, program: Path):
    out = _run([inst["mpiexec"], "-n", "2", str(program)])
    assert sorted(out.stdout.split("\n")[:2]) == ["rank 0: 42", "rank 1: 42"], out.stdout


def test_installs_the_libraries_header_programs_and_package_files(installed):
    p = installed["prefix"]
    for f in ["lib/libcolltune.so", "lib/libcolltune_pmpi.so", "bin/ct_bench",
              "include/colltune.h", "lib/pkgconfig/colltune.pc",
              "lib/cmake/colltune/colltuneConfig.cmake",
              "lib/cmake/colltune/colltuneConfigVersion.cmake",
              "lib/cmake/colltune/colltuneTargets.cmake"]:
        assert (p / f).is_file(), f
    for prog in [*(p / "bin").iterdir(), p / "lib/libcolltune_pmpi.so"]:
        ldd = _run(["ldd", str(prog)])
        assert "not found" not in ldd.stdout, (prog, ldd.stdout)


def test_a_program_builds_with_pkg_config(installed):
    if shutil.which("pkg-config") is None:
        pytest.skip("pkg-config not found")
    tmp, prefix = installed["tmp"], installed["prefix"]
    env = {**os.environ, "PKG_CONFIG_PATH": str(prefix / "lib" / "pkgconfig")}
    flags = _run(["pkg-config", "--cflags", "--libs", "colltune"], env=env).stdout.split()
    assert _run(["pkg-config", "--modversion", "colltune"], env=env).stdout.strip() == "0.1.0"
    exe = tmp / "with_pc"
    _run([installed["mpicc"], "-Wall", "-Werror", str(tmp / "consumer.c"), "-o", str(exe),
          *flags, f"-Wl,-rpath,{prefix / 'lib'}"])
    _runs_on_two_ranks(installed, exe)


def test_a_program_builds_with_find_package(installed):
    tmp, prefix = installed["tmp"], installed["prefix"]
    src, build = tmp / "cmake_consumer", tmp / "cmake_consumer_build"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(CONSUMER)
    shutil.copy(tmp / "consumer.c", src / "consumer.c")
    _run(["cmake", "-S", src, "-B", build, f"-DCMAKE_PREFIX_PATH={prefix}",
          f"-DCMAKE_C_COMPILER={installed['cc']}", f"-DMPI_C_COMPILER={installed['mpicc']}",
          f"-DMPIEXEC_EXECUTABLE={installed['mpiexec']}"])
    _run(["cmake", "--build", build])
    _runs_on_two_ranks(installed, build / "consumer")
