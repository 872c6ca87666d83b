import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
SHARED_MODELS = ROOT.parent / "shared" / "models"
sys.path.insert(0, str(TESTS))


@pytest.fixture(scope="session")
def shared_models() -> Path:
    if not SHARED_MODELS.is_dir():
        pytest.fail(f"the shared models are missing: expected {SHARED_MODELS} (a checkout of ../shared)")
    return SHARED_MODELS
