"""User errors: bad arguments, files or options, reported in one line (CLI exit status 2).

Both implementations raise these (they share no numerical code, only these
classes). Each class is also a ``TypeError`` or ``ValueError``, so existing
``except ValueError`` code keeps working; anything that is *not* a
:class:`UserError` is a bug and the CLI shows its traceback.
"""

from __future__ import annotations

__all__ = [
    "InputTypeError",
    "InputValueError",
    "MissingInputError",
    "NonFiniteStageError",
    "OutputPathError",
    "PowerLawOverflowError",
    "ProjectError",
    "ToolchainError",
    "UserError",
]


class UserError(Exception):
    """Base of every error caused by the user's input rather than by pyverify."""


class InputTypeError(UserError, TypeError):
    """An argument of the wrong kind or dtype."""


class InputValueError(UserError, ValueError):
    """An argument, option or file of the right kind with a bad value or shape."""


class MissingInputError(UserError, FileNotFoundError):
    """A file or folder the user named, or that pyverify needs, does not exist."""


class ProjectError(InputValueError):
    """The Lean package is malformed (missing root, import cycle, unreadable source, ...)."""


class ToolchainError(UserError, RuntimeError):
    """A Lean toolchain problem (missing, damaged, refusing a path), with what to do."""


class OutputPathError(InputValueError):
    """An output path that cannot be written (a folder where a file goes, and so on)."""


class NonFiniteStageError(InputValueError):
    """A non-finite value (inf or NaN) appeared inside the computation.

    Parameters
    ----------
    stage : str
        Name of the stage whose result was not finite.
    message : str
        Human-readable description.
    """

    def __init__(self, stage: str, message: str) -> None:
        super().__init__(f"[{stage}] {message}")
        self.stage = stage


class PowerLawOverflowError(NonFiniteStageError):
    """Overflow in the power law ``A_LM ** P`` or a later stage.

    ``A_LM >= metric_eps = 1e-9``, so a strongly negative power ``P`` (below
    about ``-34`` in float64), or a large ``A_LM`` with a large positive ``P``,
    exceeds the range of the working precision. Raised instead of returning
    inf/NaN. The mpmath oracle has an unbounded exponent range and does not
    overflow.
    """
