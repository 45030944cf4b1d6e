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
`dynamic_metadata` is the scikit-build-core metadata provider that adds that run-time
requirement to the package's own (python/requirements.txt, which setuptools reads too).
"""

from __future__ import annotations

import os
from pathlib import Path

from setuptools import build_meta as _setuptools

MPICH = "mpich==5.0.2"  # scripts/setup.sh: MPICH_VERSION

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


def get_requires_for_build_wheel(config_settings=None):
    from scikit_build_core import build as skb

    extra = [] if _mpicc() else [MPICH]
    return [*skb.get_requires_for_build_wheel(config_settings), *extra]


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    from scikit_build_core import build as skb

    return skb.prepare_metadata_for_build_wheel(metadata_directory, config_settings)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    from scikit_build_core import build as skb

    return skb.build_wheel(wheel_directory, _settings(config_settings), metadata_directory)


def get_requires_for_build_sdist(config_settings=None):
    from scikit_build_core import build as skb

    return skb.get_requires_for_build_sdist(config_settings)


def build_sdist(sdist_directory, config_settings=None):
    from scikit_build_core import build as skb

    return skb.build_sdist(sdist_directory, config_settings)


def dynamic_metadata(field: str, settings: dict | None = None) -> list[str]:
    """[project] dependencies of a wheel: python/requirements.txt, and the mpich wheel when
    it is the MPI (no $MPICC)."""
    assert field == "dependencies", field
    lines = Path("python/requirements.txt").read_text().splitlines()
    deps = [ln.strip() for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
    return deps if _mpicc() else [*deps, MPICH]
