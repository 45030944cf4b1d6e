"""colltune's PEP 517 build backend (pyproject.toml: build-backend, backend-path).

Two backends behind one pyproject.toml:
  - the editable install of development (`pip install -e .[test]`, scripts/setup.sh) is
    setuptools', exactly as before: the Python package only, no C compiled through pip
    (scripts/setup.sh builds the C parts per MPI into build/<name>/, where the CLI finds
    them);
  - a wheel or an sdist (`pip install colltune`, `pip wheel .`, `python -m build`) is
    scikit-build-core's: CMake builds libcolltune, the drop-in libcolltune_pmpi.so and the
    programs the CLI runs into colltune/_build/ of the package (CMakeLists.txt, SKBUILD).

The MPI of a wheel: the compiler wrapper $MPICC when set (a system MPI: `MPICC=mpicc pip
install colltune`); otherwise the mpich wheel from PyPI, a build requirement (its mpicc)
and a run-time one (its libmpi.so.12 and mpiexec), at the version scripts/setup.sh uses.
That run-time requirement is the wheel's only: [project] dependencies stay those of the
editable install, and the wheel's METADATA (and the metadata pip asks for first) gets one
Requires-Dist line more (scikit-build-core's own way, a metadata plugin, is experimental).
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

from setuptools import build_meta as _setuptools

MPICH = "mpich==5.0.2"  # scripts/setup.sh: MPICH_VERSION
# Not in pyproject.toml's build requirements, which the editable install gets too: asked for
# by the wheel's and the sdist's hooks only.
SCIKIT_BUILD_CORE = "scikit-build-core>=0.10"

# Development: setuptools, as before.
get_requires_for_build_editable = _setuptools.get_requires_for_build_editable
prepare_metadata_for_build_editable = _setuptools.prepare_metadata_for_build_editable
build_editable = _setuptools.build_editable


def _mpicc() -> str | None:
    return os.environ.get("MPICC") or None


def _settings(config_settings: dict | None) -> dict:
    """scikit-build-core's settings with the MPI's wrapper and name for CMake (found here,
    where the build requirements are installed)."""
    settings = dict(config_settings or {})
    mpicc = _mpicc()
    if mpicc is None:
        from importlib.metadata import distribution

        dist = distribution("mpich")
        found = [f for f in dist.files or () if f.as_posix().endswith("bin/mpicc")]
        if not found:
            raise RuntimeError(f"{MPICH}: no bin/mpicc among its files")
        mpicc = str(Path(dist.locate_file(found[0])).resolve())
    settings["cmake.define.MPI_C_COMPILER"] = mpicc
    settings["cmake.define.MPIEXEC_EXECUTABLE"] = str(Path(mpicc).parent / "mpiexec")
    settings["cmake.define.COLLTUNE_WHEEL_MPI"] = "system" if _mpicc() else "mpich"
    return settings


def _cmake_requirements() -> list[str]:
    """CMake (>= 3.18, CMakeLists.txt) and a build tool from PyPI where this machine has none:
    what scikit-build-core's own get_requires hook would add (it cannot be asked here: it is
    not installed before this hook's answer)."""
    found = []
    try:
        out = subprocess.run(["cmake", "--version"], capture_output=True, text=True).stdout
        found = [int(x) for x in re.findall(r"(\d+)\.(\d+)", out)[0]]
    except (OSError, IndexError):
        pass
    reqs = [] if found >= [3, 18] else ["cmake>=3.18"]
    return reqs if shutil.which("ninja") or shutil.which("make") else [*reqs, "ninja"]


def get_requires_for_build_wheel(config_settings=None):
    return [SCIKIT_BUILD_CORE, *_cmake_requirements(), *([] if _mpicc() else [MPICH])]


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    from scikit_build_core import build as skb

    name = skb.prepare_metadata_for_build_wheel(metadata_directory, config_settings)
    metadata = Path(metadata_directory) / name / "METADATA"
    metadata.write_bytes(_with_mpi(metadata.read_bytes()))
    return name


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    from scikit_build_core import build as skb

    # Not handed pip's metadata_directory: scikit-build-core checks its METADATA against
    # its own (without the line _with_mpi adds); the patched wheel matches it again.
    name = skb.build_wheel(wheel_directory, _settings(config_settings))
    _patch_wheel(Path(wheel_directory) / name)
    return name


def _with_mpi(metadata: bytes) -> bytes:
    """METADATA with the mpich wheel required when it is the MPI (no $MPICC): the line goes
    at the end of the headers (before the blank line that starts the description). Once."""
    line = f"Requires-Dist: {MPICH}".encode()
    if _mpicc() or line in metadata.splitlines():
        return metadata
    head, sep, body = metadata.partition(b"\n\n")
    return head.rstrip(b"\n") + b"\n" + line + b"\n" + (b"\n" + body if sep else b"")


def _patch_wheel(wheel: Path) -> None:
    """The wheel with _with_mpi's METADATA and its RECORD line (hash, size) to match; every
    other member as it was (permissions included: ZipInfo carries them)."""
    tmp = wheel.with_suffix(".tmp")
    with zipfile.ZipFile(wheel) as zin, zipfile.ZipFile(tmp, "w") as zout:
        meta = next(n for n in zin.namelist() if n.endswith(".dist-info/METADATA"))
        record = meta[: -len("METADATA")] + "RECORD"
        new = _with_mpi(zin.read(meta))
        digest = base64.urlsafe_b64encode(hashlib.sha256(new).digest()).rstrip(b"=").decode()
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename == meta:
                data = new
            elif info.filename == record:
                lines = [f"{meta},sha256={digest},{len(new)}" if ln.startswith(meta + ",")
                         else ln for ln in data.decode().splitlines()]
                data = ("\n".join(lines) + "\n").encode()
            zout.writestr(info, data)
    os.replace(tmp, wheel)


def get_requires_for_build_sdist(config_settings=None):
    return [SCIKIT_BUILD_CORE]


def build_sdist(sdist_directory, config_settings=None):
    from scikit_build_core import build as skb

    return skb.build_sdist(sdist_directory, config_settings)
