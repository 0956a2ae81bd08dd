"""Type stubs of the extension module (python/src): the engine's calls under the package."""

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

__version__: str

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

class Map:
    """A fitted map that new points can be placed into."""

    @property
    def n_features(self) -> int: ...
    def to_bytes(self) -> bytes: ...
    @staticmethod
    def from_bytes(bytes: bytes) -> Map: ...
    def transform(
        self, x: F32, params: dict[str, Any], threads: int | None = None
    ) -> tuple[F32, str]: ...

class Fitted:
    """An embedding, its report (JSON) and, when kept, its map."""

    @property
    def y(self) -> F32: ...
    @property
    def report(self) -> str: ...
    @property
    def map(self) -> Map | None: ...

def embed_points(
    params: dict[str, Any],
    x: F32 | None = None,
    sparse: tuple[int, int, I64, I64, F32] | None = None,
    neighbors: tuple[int, I64, I64, F64] | None = None,
    labels: tuple[npt.NDArray[np.uint32], list[str]] | None = None,
    init: F32 | None = None,
    name: str = "array",
    threads: int | None = None,
    say: Callable[[str], None] | None = None,
    warn: Callable[[str], None] | None = None,
    callbacks: Sequence[Callable[[int, float, F32], Any]] = (),
    callbacks_every: int = 50,
) -> Fitted: ...
def knn(x: F32, k: int, params: dict[str, Any], threads: int | None = None) -> tuple[I64, F64]: ...
def kl_divergence(
    x: F32,
    y: F32,
    perplexity: float = 30.0,
    exact: bool = False,
    dof: float = 1.0,
    pca: int | None = 50,
    threads: int | None = None,
) -> float: ...
def probe() -> tuple[int, str | None, str | None]: ...
def nccl_present() -> bool: ...
def compile_kernels(arch: str = "sm_90", threads: int = 2) -> int: ...
def register_cuda_library(name: str, files: list[str]) -> None: ...
def gmm_fit(
    x: F64,
    k: int,
    covariance_type: str,
    init: str,
    max_iter: int,
    tol: float,
    restarts: int,
    reg: float,
    seed: int,
    backend: str,
    threads: int | None = None,
) -> dict[str, Any]: ...
def gmm_score(
    covariance_type: str, weights: F64, means: F64, covariances: F64, x: F64, threads: int | None = None
) -> tuple[F64, F64, float, int]: ...
def view_html(y: F32, columns: list[tuple[str, Any]], title: str) -> str: ...
def view_write(path: str, y: F32, columns: list[tuple[str, Any]], title: str) -> None: ...
