"""IEEE 754 binary formats over exact rationals: ``Pldr.Float.Ieee`` and ``.Ftz`` written out.

An oracle independent of NumPy and torch: every function works on
:class:`fractions.Fraction` and follows the Lean definitions step by step, so that the
property tests can compare a library's rounding with the one the theorems are about.

* :class:`Format`: precision ``p`` (significand bits, the hidden bit included), minimum
  normal exponent ``emin``, maximum exponent ``emax``; :attr:`Format.u` ``= 2^-p``,
  :attr:`Format.eta` ``= 2^(emin - p)`` (half the subnormal spacing),
  :attr:`Format.eta_ftz` ``= 2^emin`` (the smallest normal number, flush-to-zero's
  absolute term), :attr:`Format.max_finite` ``= (2^p - 1) 2^(emax - p + 1)``.
* :func:`rint` (``Pldr.rint``): the nearest integer, ties to even, from the floor;
  :func:`ilog2` (``Pldr.ilog2``): ``E`` with ``2^E <= x < 2^(E+1)``, from the bit lengths
  of numerator and denominator; :func:`rne` (``Pldr.Format.rne``): ``rint(x / 2^k) 2^k``
  with ``k = expo(x) - p + 1``, ``expo(x) = emin`` below the normal range; the exponent is
  not capped above (:func:`convert` adds IEEE overflow to infinity);
  :func:`ftz` (``Pldr.Format.ftz``) and :func:`daz` (``Pldr.Format.daz``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

__all__ = [
    "BFLOAT16",
    "BINARY16",
    "BINARY32",
    "BINARY64",
    "FORMATS",
    "Format",
    "convert",
    "daz",
    "expo",
    "ftz",
    "ilog2",
    "is_grid",
    "is_lattice",
    "pow2",
    "rint",
    "rne",
    "ulp",
]


def pow2(e: int) -> Fraction:
    """``2^e`` for an integer ``e``, exactly."""
    return Fraction(2**e) if e >= 0 else Fraction(1, 2 ** (-e))


@dataclass(frozen=True)
class Format:
    """A binary floating-point format (``Pldr.Format``)."""

    name: str
    p: int
    emin: int
    emax: int

    @property
    def u(self) -> Fraction:
        """The unit round-off ``2^-p`` (``Pldr.Format.u``)."""
        return pow2(-self.p)

    @property
    def eta(self) -> Fraction:
        """Half the subnormal spacing ``2^(emin - p)`` (``Pldr.Format.eta``)."""
        return pow2(self.emin - self.p)

    @property
    def eta_ftz(self) -> Fraction:
        """The smallest normal number ``2^emin`` (``Pldr.Format.minNormal``)."""
        return pow2(self.emin)

    @property
    def qexp(self) -> int:
        """The exponent of the smallest subnormal, ``emin - p + 1``."""
        return self.emin - self.p + 1

    @property
    def max_finite(self) -> Fraction:
        """The largest finite number ``(2^p - 1) 2^(emax - p + 1)``."""
        return (2**self.p - 1) * pow2(self.emax - self.p + 1)


#: IEEE binary64 (double).
BINARY64 = Format("float64", 53, -1022, 1023)
#: IEEE binary32 (single).
BINARY32 = Format("float32", 24, -126, 127)
#: IEEE binary16 (half).
BINARY16 = Format("float16", 11, -14, 15)
#: bfloat16: binary32's exponent range, 8 significand bits.
BFLOAT16 = Format("bfloat16", 8, -126, 127)

#: The formats by the suite's dtype names.
FORMATS: dict[str, Format] = {f.name: f for f in (BINARY64, BINARY32, BFLOAT16, BINARY16)}


def rint(y: Fraction) -> int:
    """The nearest integer to ``y``, ties to the even one (``Pldr.rint``)."""
    f = math.floor(y)
    r = y - f
    half = Fraction(1, 2)
    if r < half:
        return f
    if r > half:
        return f + 1
    return f if f % 2 == 0 else f + 1


def ilog2(x: Fraction) -> int:
    """The binary exponent of ``x > 0``: ``2^E <= x < 2^(E+1)`` (``Pldr.ilog2``)."""
    x = Fraction(x)
    if x <= 0:
        raise ValueError("ilog2 needs x > 0")
    e = (x.numerator.bit_length() - 1) - (x.denominator.bit_length() - 1)
    return e if pow2(e) <= x else e - 1


def expo(fmt: Format, x: Fraction) -> int:
    """The exponent that sets the spacing at ``x``: ``emin`` below the normal range."""
    ax = abs(Fraction(x))
    return fmt.emin if ax < fmt.eta_ftz else ilog2(ax)


def ulp(fmt: Format, x: Fraction) -> Fraction:
    """The spacing ``2^(expo(x) - p + 1)`` at ``x`` (``Pldr.Format.ulp``)."""
    return pow2(expo(fmt, x) - fmt.p + 1)


def rne(fmt: Format, x: Fraction) -> Fraction:
    """Round to nearest, ties to even, gradual underflow, no cap above (``Pldr.Format.rne``)."""
    x = Fraction(x)
    s = ulp(fmt, x)
    return rint(x / s) * s


def convert(fmt: Format, x: Fraction) -> Fraction | float:
    """IEEE conversion: :func:`rne`, or a signed infinity where it exceeds the largest finite."""
    r = rne(fmt, x)
    if abs(r) > fmt.max_finite:
        return math.copysign(math.inf, r)
    return r


def ftz(fmt: Format, x: Fraction) -> Fraction:
    """Flush to zero: ``0`` where ``|x| < 2^emin``, else :func:`rne` (``Pldr.Format.ftz``)."""
    x = Fraction(x)
    return Fraction(0) if abs(x) < fmt.eta_ftz else rne(fmt, x)


def daz(fmt: Format, x: Fraction) -> Fraction:
    """Denormals are zero: ``0`` where ``|x| < 2^emin``, else ``x`` (``Pldr.Format.daz``)."""
    x = Fraction(x)
    return Fraction(0) if abs(x) < fmt.eta_ftz else x


def is_lattice(fmt: Format, x: Fraction) -> bool:
    """Whether ``x`` is an integer multiple of the smallest subnormal (``IsLattice``)."""
    return (Fraction(x) / pow2(fmt.qexp)).denominator == 1


def is_grid(fmt: Format, x: Fraction) -> bool:
    """Whether ``x = m 2^e`` with ``|m| < 2^p``, ``e >= emin - p + 1`` (``IsGrid``)."""
    x = Fraction(x)
    if x == 0:
        return True
    if not is_lattice(fmt, x):
        return False
    m = abs(x / pow2(fmt.qexp)).numerator
    while m % 2 == 0 and m >= 2**fmt.p:
        m //= 2
    return m < 2**fmt.p
