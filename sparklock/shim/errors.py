"""The shim's one error: its jar can be neither found nor built."""

from __future__ import annotations

from ..errors import SparkLockError


class ShimBuildError(SparkLockError):
    """The shim jar cannot be built or found."""

    code = "SHIM_BUILD_FAILED"

    def __init__(self, detail: str) -> None:
        super().__init__(f"{self.code}: {detail}")
