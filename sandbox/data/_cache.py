"""Samples kept in memory after their first read or generation.

One home for the datasets' ``cache=True`` (the folder sets, which decode files, and the
synthetic sets, which draw their shapes again for every epoch otherwise): a sample is
stored once and every read hands out copies, so a transform that works in place on
what it was given cannot change what the next epoch sees.
"""

from __future__ import annotations


class CachedSamples:
    """Mixin of the datasets that hold a :class:`SampleCache` as ``_cache``: their
    ``cache`` flag is the cache's own (turning it off drops what it holds)."""

    @property
    def cache(self) -> bool:
        return self._cache.enabled

    @cache.setter
    def cache(self, enabled) -> None:
        self._cache.enabled = bool(enabled)
        if not enabled:
            self._cache.clear()


class SampleCache:
    """``(image, mask)`` pairs by index; empty and inert unless ``enabled``."""

    def __init__(self, enabled: bool):
        self.enabled = bool(enabled)
        self._pairs = {}

    def get(self, index, make):
        """The pair ``index``, from ``make()`` the first time (and every time if disabled)."""
        if not self.enabled:
            return make()
        pair = self._pairs.get(index)
        if pair is None:
            pair = self._pairs[index] = make()
        image, mask = pair
        return image.copy(), mask.copy()

    def clear(self) -> None:
        """Drop every held sample."""
        self._pairs.clear()

    def nbytes(self) -> int:
        """Bytes of the samples held."""
        return sum(image.nbytes + mask.nbytes for image, mask in self._pairs.values())

    def __len__(self):
        return len(self._pairs)
