"""Division by a fixed divisor as a multiply and a shift, for kernels that walk shapes."""

from __future__ import annotations

__all__ = ["fast_divider"]


def fast_divider(d: int) -> tuple[int, int]:
    """(magic, shift) with n // d == (umulhi(n, magic) + n) >> shift for 0 <= n < 2**31."""
    shift = (d - 1).bit_length()
    magic = ((1 << 32) * ((1 << shift) - d)) // d + 1
    return magic, shift
