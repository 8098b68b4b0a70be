"""setuptools glue for pyproject.toml: the kiln._kiln extension is built by
the project's CMake (target kiln_python), not by setuptools.

Environment:
  KILN_CMAKE_BUILD_DIR  an existing or new CMake build directory to use
                        (e.g. build: reuses what `make` already compiled);
                        default: build/pip/temp.*/cmake (a Release build
                        of the module alone, no tests).
  KILN_CMAKE_ARGS       extra configure arguments (e.g. -DKILN_HOST_ONLY=ON).
  CMAKE_BUILD_PARALLEL_LEVEL  build jobs (default: the CPU count).
"""
import os
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build_dir = os.environ.get("KILN_CMAKE_BUILD_DIR") or os.path.join(os.path.abspath(self.build_temp), "cmake")
        build_dir = os.path.abspath(os.path.join(ROOT, build_dir))
        os.makedirs(build_dir, exist_ok=True)
        configure = ["cmake", "-S", ROOT, "-B", build_dir, f"-DPython_EXECUTABLE={sys.executable}",
                     "-DKILN_PYTHON=ON"]
        if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
            # A fresh directory: the module only (no tests), optimized.
            configure += ["-DCMAKE_BUILD_TYPE=Release", "-DKILN_BUILD_TESTS=OFF"]
        configure += shlex.split(os.environ.get("KILN_CMAKE_ARGS", ""))
        subprocess.run(configure, check=True)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
        subprocess.run(["cmake", "--build", build_dir, "--target", "kiln_python", "-j", jobs], check=True)
        built = os.path.join(build_dir, "python", "kiln")
        name = next(f for f in os.listdir(built) if f.startswith("_kiln") and f.endswith(".so"))
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(os.path.join(built, name), target)


# setuptools' own build tree in build/pip (build/ is CMake's).
setup(ext_modules=[Extension("kiln._kiln", sources=[])], cmdclass={"build_ext": CMakeBuild},
      options={"build": {"build_base": os.path.join("build", "pip")}, "egg_info": {"egg_base": os.path.join("build", "pip")}})
