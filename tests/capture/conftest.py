"""The capture tests need torch (the capture extra, pinned in the test extra)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # tiny_models


def pytest_configure() -> None:
    import torch

    torch.set_num_threads(1)  # fixed reduction order, and no fight over the 2 cores
