"""convt-serve's HTTP service: the Open Inference Protocol (KServe v2) over FastAPI.

``create_app(settings)`` builds the app; ``python -m service`` / ``convt-serve``
serve it with uvicorn.
"""

from .app import create_app
from .settings import Settings

__all__ = ["Settings", "create_app"]
