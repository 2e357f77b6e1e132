"""The old import path of `irscope.goldens.pytest_plugin` (`pytest -p irscope.pytest_plugin` keeps working)."""
import sys

from .goldens import pytest_plugin as _plugin

sys.modules[__name__] = _plugin
