"""The token-to-request index of one engine step, and what its variants share.

Each engine step knows ``query_start_loc``: the cumulative query lengths of its
``num_reqs`` requests (length ``num_reqs + 1``, starting at 0). Attention
components need, per token, the request it belongs to:
``repeat(arange(num_reqs), diff(query_start_loc))`` copied into a persistent
device buffer at ``[:num_mapped]``, with ``[num_mapped:num_tokens]`` zeroed
because the step may run padded to a CUDA-graph size (docs/design.md §1.2, vLLM PR
#47474). The variants (``connectors/index_*.py``) differ only in who builds it
and where; this module holds the step's metadata object, the persistent
buffers, and the NumPy reference the tests compare against.

torch is imported inside functions so that listing variants stays fast; on a
machine with CUDA the buffers live on the GPU, fed from pinned host staging with
non-blocking copies, otherwise everything lives on the CPU.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

__all__ = [
    "IndexVariant",
    "MetadataFactory",
    "StagedBuffer",
    "StepMetadata",
    "reference_index",
    "resolve_device",
]


def resolve_device(want: str = "auto") -> str:
    """``"cuda"`` or ``"cpu"``: ``auto`` takes CUDA when torch sees a device."""
    import torch  # heavy: torch loads only for the device index variants

    if want == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if want == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' requested but torch.cuda.is_available() is False")
    if want not in ("cpu", "cuda"):
        raise ValueError(f"device must be one of auto, cpu, cuda (got {want!r})")
    return want


def reference_index(query_start_loc: Sequence[int] | np.ndarray, num_tokens: int) -> np.ndarray:
    """The index as plain NumPy, written for clarity: the oracle of the tests."""
    qsl = np.asarray(query_start_loc, dtype=np.int64)
    out = np.zeros(num_tokens, dtype=np.int32)
    for req in range(len(qsl) - 1):
        out[qsl[req] : qsl[req + 1]] = req
    return out


class StepMetadata:
    """One step's common metadata: ``query_start_loc`` on the host and on the device.

    A fresh object per step, as upstream's ``CommonAttentionMetadata``; index
    variants that build once per step keep their result in it (keyed by the
    variant, so two variants never share an entry). ``index_builds`` counts the
    builds made for this object, which is what tells the variants apart.
    """

    __slots__ = (
        "_cache",
        "index_builds",
        "num_mapped",
        "num_reqs",
        "num_tokens",
        "query_start_loc",
        "query_start_loc_cpu",
    )

    def __init__(
        self, query_start_loc_cpu: Any, query_start_loc: Any, num_mapped: int, num_tokens: int
    ) -> None:
        self.query_start_loc_cpu = query_start_loc_cpu
        self.query_start_loc = query_start_loc
        self.num_reqs = int(query_start_loc_cpu.shape[0]) - 1
        self.num_mapped = num_mapped
        self.num_tokens = num_tokens
        self.index_builds = 0
        self._cache: dict[object, Any] = {}

    def cached(self, owner: object) -> Any:
        """What ``owner`` stored for this step, or None."""
        return self._cache.get(owner)

    def store(self, owner: object, value: Any) -> Any:
        self._cache[owner] = value
        return value


class StagedBuffer:
    """A persistent device buffer, fed through pinned host staging on CUDA.

    On CUDA a copy from pinned memory is asynchronous, so the staging area must
    not be rewritten before the previous copy has read it: an event recorded
    after each copy is waited on before the next write (free when it is done).
    On the CPU the "device" buffer is host memory and the copy is a plain one.
    """

    def __init__(self, capacity: int, device: str) -> None:
        import torch  # heavy: torch loads only for the device index variants

        self.device = device
        self.tensor = torch.zeros(capacity, dtype=torch.int32, device=device)
        self._cuda = device == "cuda"
        if self._cuda:
            self._staging = torch.zeros(capacity, dtype=torch.int32, pin_memory=True)
            self._staging_np = self._staging.numpy()
            self._event = torch.cuda.Event()
            self._recorded = False
        self._from_numpy = torch.from_numpy

    @property
    def capacity(self) -> int:
        return int(self.tensor.shape[0])

    def staged(self, count: int) -> Any:
        """The pinned host copy of ``tensor[:count]`` as last uploaded (CUDA only)."""
        return self._staging[:count]

    def upload(self, values: np.ndarray, count: int) -> None:
        """``tensor[:count] = values`` (int32), non-blocking on CUDA."""
        if not self._cuda:
            self.tensor[:count].copy_(self._from_numpy(values))
            return
        if self._recorded:
            self._event.synchronize()
        self._staging_np[:count] = values
        self.tensor[:count].copy_(self._staging[:count], non_blocking=True)
        self._event.record()
        self._recorded = True


class MetadataFactory:
    """Makes each step's :class:`StepMetadata` from its query lengths.

    ``query_start_loc`` lives in persistent buffers as in the model runner; its
    device copy is common to every variant. ``pad_multiple`` rounds the token
    count up (CUDA-graph capture sizes), which is where index padding comes from.
    """

    def __init__(self, max_reqs: int, max_tokens: int, device: str, pad_multiple: int = 1) -> None:
        self.max_reqs = max_reqs
        self.max_tokens = max_tokens
        self.pad_multiple = pad_multiple
        self._qsl = StagedBuffer(max_reqs + 1, device)
        self._host = np.zeros(max_reqs + 1, dtype=np.int32)
        self._cuda = device == "cuda"
        import torch  # heavy: torch loads only for the device index variants

        self._host_t = torch.from_numpy(self._host)

    def padded(self, num_mapped: int) -> int:
        m = self.pad_multiple
        return -(-num_mapped // m) * m

    def make(self, query_lens: Sequence[int] | np.ndarray, num_tokens: int | None = None) -> Any:
        lens = np.asarray(query_lens, dtype=np.int64)
        n = int(lens.shape[0])
        if n > self.max_reqs:
            raise ValueError(f"{n} requests exceed max_reqs={self.max_reqs}")
        if n and int(lens.min()) < 0:
            raise ValueError("query lengths must be >= 0")
        qsl = self._host[: n + 1]
        qsl[0] = 0
        np.cumsum(lens, out=qsl[1:])
        num_mapped = int(qsl[-1])
        tokens = self.padded(num_mapped) if num_tokens is None else num_tokens
        if not num_mapped <= tokens <= self.max_tokens:
            raise ValueError(
                f"num_tokens={tokens} must be >= num_mapped={num_mapped} and "
                f"<= max_tokens={self.max_tokens}"
            )
        if self._cuda:
            self._qsl.upload(qsl, n + 1)
            host = self._qsl.staged(n + 1)
            return StepMetadata(host, self._qsl.tensor[: n + 1], num_mapped, tokens)
        cpu = self._host_t[: n + 1]
        return StepMetadata(cpu, cpu, num_mapped, tokens)


class IndexVariant:
    """Base of index variants; subclasses register with ``@register_index``.

    ``components`` is K, the attention components (sparse MLA, sliding window,
    compressor, ...) that each need the index in a step. Construction is cheap
    and has no side effects; :meth:`warm_up` imports torch, allocates the
    persistent buffers and runs the code paths once, before anything is timed.
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    #: Import names of the packages it needs (see connectors.base.AddressVariant.requires).
    requires: ClassVar[tuple[str, ...]] = ("torch",)

    def __init__(self, components: int = 3, max_tokens: int = 8192, device: str = "auto") -> None:
        if components < 1:
            raise ValueError(f"components must be >= 1 (got {components})")
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1 (got {max_tokens})")
        self.components = components
        self.max_tokens = max_tokens
        self.want_device = device
        self.device = ""

    def warm_up(self) -> None:
        self.device = resolve_device(self.want_device)
        self._setup()
        factory = MetadataFactory(4, self.max_tokens, self.device, pad_multiple=8)
        for lens in ([1, 1, 1], [3, 0, 2, 1], [min(5, self.max_tokens)]):
            if sum(lens) <= self.max_tokens:
                self.step(factory.make(lens, min(self.max_tokens, factory.padded(sum(lens)))))
        self.synchronize()

    def _setup(self) -> None:
        """Allocate persistent buffers on ``self.device``."""
        raise NotImplementedError

    def component_index(self, meta: StepMetadata, component: int) -> Any:
        """What component ``component`` does to obtain the step's index tensor."""
        raise NotImplementedError

    def step(self, meta: StepMetadata) -> list[Any]:
        """Every component's index for one step, in component order."""
        if meta.num_tokens > self.max_tokens:
            raise ValueError(f"num_tokens={meta.num_tokens} exceeds max_tokens={self.max_tokens}")
        return [self.component_index(meta, k) for k in range(self.components)]

    def synchronize(self) -> None:
        """Wait for queued device work (a no-op on the CPU)."""
        if self.device == "cuda":
            import torch  # heavy: torch loads only for the device index variants

            torch.cuda.synchronize()

    @staticmethod
    def host_index(meta: StepMetadata) -> np.ndarray:
        """The index built on the host with NumPy, as the upstream builders did."""
        qsl = meta.query_start_loc_cpu.numpy()
        return np.repeat(np.arange(meta.num_reqs, dtype=np.int32), np.diff(qsl))

    @staticmethod
    def fill(buf: StagedBuffer, meta: StepMetadata) -> Any:
        """Host build into ``buf``: ``[:num_mapped]`` the index, ``[num_mapped:num_tokens]`` 0."""
        m, n = meta.num_mapped, meta.num_tokens
        buf.upload(IndexVariant.host_index(meta), m)
        if n > m:
            buf.tensor[m:n].zero_()
        meta.index_builds += 1
        return buf.tensor[:n]
