"""`pip install .`: builds npumem's Python module (npumem, and npumem.torch where
PyTorch's C++ headers are found) with CMake, from Debian's packages alone: cmake,
g++, pybind11-dev, python3-setuptools (see scripts/install-deps.sh). Nothing is
downloaded. Debian's pip wants a target outside the system's packages, e.g.

    /usr/bin/python3 -m pip install --no-build-isolation --target DIR .

(docs/PYTHON.md has the venv way)."""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CompileError

ROOT = os.path.dirname(os.path.abspath(__file__))


def project_version() -> str:
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as cmake_lists:
        found = re.search(r"project\(npumem VERSION ([0-9.]+)", cmake_lists.read())
    if found is None:
        raise RuntimeError("CMakeLists.txt names no project version")
    return found.group(1)


class CMakeExtension(Extension):
    """An extension module built by a target of the CMake tree."""

    def __init__(self, name: str, target: str, optional: bool = False):
        super().__init__(name, sources=[], optional=optional)
        self.target = target


class CMakeBuild(build_ext):
    """Configures the CMake tree once, builds each extension's target, and copies the
    module where setuptools packs it."""

    def build_extensions(self) -> None:
        self.cmake_dir = os.path.abspath(os.path.join(self.build_temp, "cmake"))
        self.package_dir = os.path.join(self.cmake_dir, "python")
        configure = [
            "cmake", "-S", ROOT, "-B", self.cmake_dir,
            "-DNPUMEM_BUILD_TESTS=OFF",
            "-DNPUMEM_BUILD_BENCH=OFF",
            "-DNPUMEM_BUILD_PYTHON=ON",
            f"-DNPUMEM_PYTHON={sys.executable}",
            f"-DNPUMEM_PYTHON_PACKAGE_DIR={self.package_dir}",
        ]
        if shutil.which("ninja") and not os.path.exists(os.path.join(self.cmake_dir, "Makefile")):
            configure += ["-G", "Ninja"]
        subprocess.run(configure, check=True)
        super().build_extensions()

    def build_extension(self, ext: Extension) -> None:
        assert isinstance(ext, CMakeExtension), "every npumem extension is built by CMake"
        build = ["cmake", "--build", self.cmake_dir, "--target", ext.target,
                 "-j", str(os.cpu_count() or 1)]
        if subprocess.run(build, check=False).returncode != 0:
            raise CompileError(f"building {ext.name} (CMake target {ext.target}) failed")
        stem = ext.name.split(".")[-1]
        built = glob.glob(os.path.join(self.package_dir, "npumem", f"{stem}.*.so"))
        if len(built) != 1:
            raise CompileError(f"expected one {stem} module in {self.package_dir}, found {built}")
        destination = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(destination), exist_ok=True)
        shutil.copyfile(built[0], destination)
        if ext.target == "npumem_python_core":
            self.copy_shared_library(os.path.dirname(destination))

    def copy_shared_library(self, package: str) -> None:
        """npumem._core uses libnpumem.so (the process's one npumem, shared with C code
        calling npumem_malloc) and finds it beside itself ($ORIGIN), under its soname."""
        libraries = [path for path in glob.glob(os.path.join(self.cmake_dir, "lib", "libnpumem.so.*"))
                     if os.path.islink(path)]
        if len(libraries) != 1:
            raise CompileError(f"expected one libnpumem.so.<version> link, found {libraries}")
        shutil.copyfile(os.path.realpath(libraries[0]),
                        os.path.join(package, os.path.basename(libraries[0])))


setup(
    name="npumem",
    version=project_version(),
    description="Tiered caching memory manager for AI accelerators, with PyTorch integration",
    python_requires=">=3.9",
    package_dir={"": "python"},
    packages=["npumem", "npumem.torch"],
    ext_modules=[
        CMakeExtension("npumem._core", "npumem_python_core"),
        # Only where PyTorch (python3-torch, libtorch-dev) is installed.
        CMakeExtension("npumem._torch", "npumem_python_torch", optional=True),
    ],
    cmdclass={"build_ext": CMakeBuild},
    # Not build/: that is the CMake tree of scripts/test.sh.
    options={"build": {"build_base": "build-pip"}},
    zip_safe=False,
)
