"""The wheel carries the built-in methods, datasets and configs, which in a checkout live beside
the code: they are copied into `bench/shipped/`, where `odecore.shipped` looks for them once installed."""
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

sys.path.insert(0, str(Path(__file__).resolve().parent))
from odecore.shipped import copy_into  # noqa: E402 - the checkout's own module, found through the line above


class BuildWithShippedFolders(build_py):
    def run(self):
        super().run()
        if not getattr(self, "editable_mode", False):  # an editable install reads the checkout's own folders
            copy_into(Path(self.build_lib))


setup(cmdclass={"build_py": BuildWithShippedFolders})
