"""The KV cache as real memory: one host buffer holding every region of every group.

Region ``r`` of group ``g`` is a run of ``num_blocks`` blocks of ``block_len[r]``
bytes; the base addresses handed to the connector variants are real pointers
into the buffer, so an address a variant computes is where a get really writes.
A guard of one largest block follows the last region, so an address that is off
by less than a block still lands in memory kvsim owns.

Content is a per-block pattern: 8-byte word ``w`` of the block that chunk key
``k`` puts for group ``g``, region ``r`` holds ``tag(k, g, r) + w``. Checking the
first, middle and last word of a block after a get tells whether the right bytes
arrived at the right place (a shifted or misplaced block fails).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim.config.geometry import GeometryConfig

__all__ = ["POISON", "KVBuffers", "VerifyReport", "key_tags"]

POISON = np.uint64(0xDEAD_BEEF_DEAD_BEEF)
_MIX_R = np.uint64(0x9E37_79B9_7F4A_7C15)
_MIX_G = np.uint64(0xC2B2_AE3D_27D4_EB4F)


def key_tags(block_hashes: bytes, hash_len: int, ends: np.ndarray, granularity: int) -> np.ndarray:
    """64-bit tag of each chunk's store key: the first 8 bytes of the hash the key names."""
    words = np.frombuffer(block_hashes, dtype="<u8").reshape(-1, hash_len // 8)
    return words[ends // granularity - 1, 0].astype(np.uint64)


@dataclass(frozen=True)
class VerifyReport:
    checked: int
    bad: int
    #: (chunk, region, expected word, found word) of the first mismatch.
    first: tuple[int, int, int, int] | None


class KVBuffers:
    """Allocated by :meth:`allocate` (not the constructor); one numpy array, 64-byte aligned."""

    def __init__(self, geometry: GeometryConfig) -> None:
        self._geo = geometry
        blen = [geometry.region_block_len(r) for r in range(geometry.regions)]
        bad = [r for r, b in enumerate(blen) if b % 8]
        if bad:
            raise ValueError(
                f"model.block_len: region {bad[0]} has {blen[bad[0]]} bytes per block; the "
                "real store needs multiples of 8"
            )
        self._blen = np.asarray(blen, dtype=np.int64)
        region_bytes = self._blen * geometry.num_blocks
        group_bytes = int(region_bytes.sum())
        starts = np.concatenate([[0], np.cumsum(region_bytes)[:-1]])
        #: Byte offset of region r of group g: shape (groups, regions).
        self._offsets = (
            np.arange(geometry.kv_groups, dtype=np.int64)[:, None] * group_bytes + starts[None, :]
        )
        self.nbytes = group_bytes * geometry.kv_groups + int(self._blen.max())
        self._buf: np.ndarray | None = None

    @staticmethod
    def bytes_needed(geometry: GeometryConfig) -> int:
        per_group = sum(geometry.region_bytes(r) for r in range(geometry.regions))
        return per_group * geometry.kv_groups + max(geometry.block_len)

    def allocate(self) -> KVBuffers:
        raw = np.zeros(self.nbytes + 64, dtype=np.uint8)
        skip = (-raw.ctypes.data) % 64
        self._buf = raw[skip : skip + self.nbytes]
        return self

    @property
    def array(self) -> np.ndarray:
        if self._buf is None:
            raise RuntimeError("KV buffers are not allocated")
        return self._buf

    @property
    def ptr(self) -> int:
        return int(self.array.ctypes.data)

    def base_addrs(self, group: int) -> list[int]:
        return [self.ptr + int(o) for o in self._offsets[group]]

    def contains(self, lo: int, hi: int) -> bool:
        """Whether the byte range [lo, hi) lies inside the buffer (guard included)."""
        return self.ptr <= lo and hi <= self.ptr + self.nbytes

    def _words(self) -> np.ndarray:
        return self.array.view(np.uint64)

    def _block_word0(self, group: int, block_ids: np.ndarray) -> np.ndarray:
        """First word index of every (chunk, region) block: shape (chunks, regions)."""
        off = self._offsets[group][None, :] + block_ids[:, None] * self._blen[None, :]
        return off // 8

    def tags(self, group: int, ktags: np.ndarray) -> np.ndarray:
        """Pattern base of every (chunk, region): shape (chunks, regions), uint64."""
        r = np.arange(len(self._blen), dtype=np.uint64) + np.uint64(1)
        g = np.uint64(group + 1)
        return ktags[:, None] ^ (r[None, :] * _MIX_R) ^ (g * _MIX_G)

    def fill(self, group: int, block_ids: np.ndarray, ktags: np.ndarray) -> None:
        """Write the whole pattern of each chunk into its blocks (before a put)."""
        words = self._words()
        w0 = self._block_word0(group, block_ids)
        tags = self.tags(group, ktags)
        for r, n in enumerate((self._blen // 8).tolist()):
            ramp = np.arange(n, dtype=np.uint64)
            for c in range(len(block_ids)):
                start = int(w0[c, r])
                words[start : start + n] = tags[c, r] + ramp

    def _probe_words(self, group: int, block_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Word indexes probed (chunks, regions, 3) and their offsets in the block."""
        n = (self._blen // 8)[None, :, None]
        rel = np.concatenate([np.zeros_like(n), n // 2, n - 1], axis=2)
        return self._block_word0(group, block_ids)[:, :, None] + rel, rel

    def poison(self, group: int, block_ids: np.ndarray) -> None:
        """Overwrite the probed words, so a get that misses a block leaves them visibly wrong."""
        idx, _ = self._probe_words(group, block_ids)
        self._words()[idx.ravel()] = POISON

    def verify(self, group: int, block_ids: np.ndarray, ktags: np.ndarray) -> VerifyReport:
        """Compare the probed words of every block with the pattern of its chunk's key."""
        idx, rel = self._probe_words(group, block_ids)
        found = self._words()[idx]
        expected = self.tags(group, ktags)[:, :, None] + rel.astype(np.uint64)
        bad_blocks = (found != expected).any(axis=2)
        nbad = int(bad_blocks.sum())
        first = None
        if nbad:
            c, r = (int(x) for x in np.argwhere(bad_blocks)[0])
            k = int(np.flatnonzero(found[c, r] != expected[c, r])[0])
            first = (c, r, int(expected[c, r, k]), int(found[c, r, k]))
        return VerifyReport(bad_blocks.size, nbad, first)
