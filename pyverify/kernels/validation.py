"""Shape, dtype and device checks for the torch kernels.

Every check raises ``TypeError`` (not a tensor, wrong dtype) or ``ValueError``
(wrong shape, mismatched devices) with the argument's name and the expected
shape/dtype in the message. Non-finite intermediate results (the power law
``A_LM ** P`` overflowing the working precision) raise
:class:`PowerLawOverflowError`, a ``ValueError`` subclass, mirroring the float64
reference (``pyverify.reference.validation.PowerLawOverflowError``): nothing
returns inf/NaN silently.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields

import torch

from pyverify.errors import (
    InputTypeError,
    InputValueError,
    NonFiniteStageError,
    PowerLawOverflowError,
)

__all__ = [
    "FLOAT_DTYPES",
    "NonFiniteStageError",
    "PowerLawOverflowError",
    "check_bool",
    "check_device_dtype",
    "check_finite",
    "check_g",
    "check_inputs_finite",
    "check_qkv",
    "check_score_range",
    "check_tensor",
    "check_type",
    "compute_dtype",
    "explain_nonfinite",
    "row_norm_max",
    "validate_reference_decoder",
    "validate_reference_head",
]

#: Floating dtypes the kernels accept.
FLOAT_DTYPES: tuple[torch.dtype, ...] = (
    torch.float64,
    torch.float32,
    torch.bfloat16,
    torch.float16,
)


def _shape_str(shape: Sequence[object]) -> str:
    return "(" + ", ".join(str(s) for s in shape) + (",)" if len(shape) == 1 else ")")


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """Return the dtype used for statistics and the metric learner.

    float64 stays float64; float32, bfloat16 and float16 all compute in float32
    (as torch's fused SDPA kernels do for softmax statistics).

    Parameters
    ----------
    dtype : torch.dtype
        The input dtype.

    Returns
    -------
    torch.dtype
        ``torch.float64`` or ``torch.float32``.
    """
    return torch.float64 if dtype == torch.float64 else torch.float32


def check_tensor(
    x: object,
    name: str,
    *,
    shape: Sequence[int | str | None] | None = None,
    dtype: torch.dtype | None = None,
    device: torch.device | None = None,
) -> torch.Tensor:
    """Check that ``x`` is a floating tensor of the expected shape/dtype/device.

    Parameters
    ----------
    x : object
        The value to check.
    name : str
        Argument name used in error messages.
    shape : sequence of int, str or None, optional
        Expected shape; ``int`` entries must match, ``str``/``None`` are free
        (a string is the symbol shown in messages).
    dtype : torch.dtype, optional
        Required dtype (default: any of :data:`FLOAT_DTYPES`).
    device : torch.device, optional
        Required device.

    Returns
    -------
    torch.Tensor
        ``x`` unchanged.

    Raises
    ------
    TypeError
        If ``x`` is not a tensor or has the wrong dtype.
    ValueError
        If the shape or device is wrong.
    """
    if not isinstance(x, torch.Tensor):
        raise InputTypeError(f"{name} must be a torch.Tensor; got {type(x).__name__}")
    if dtype is not None and x.dtype != dtype:
        raise InputTypeError(f"{name} must have dtype {dtype}; got {x.dtype}")
    if x.dtype not in FLOAT_DTYPES:
        allowed = ", ".join(str(d) for d in FLOAT_DTYPES)
        raise InputTypeError(f"{name} must have a floating dtype ({allowed}); got {x.dtype}")
    if shape is not None:
        shown = _shape_str([s if s is not None else "?" for s in shape])
        if x.dim() != len(shape):
            raise InputValueError(f"{name} must have shape {shown}; got shape {tuple(x.shape)}")
        for axis, (want, got) in enumerate(zip(shape, x.shape, strict=True)):
            if isinstance(want, int) and want != got:
                raise InputValueError(
                    f"{name} must have shape {shown}; got shape {tuple(x.shape)} "
                    f"(axis {axis} is {got}, expected {want})"
                )
    if device is not None and x.device != device:
        raise InputValueError(f"{name} must be on device {device}; got {x.device}")
    return x


def check_qkv(
    q: object, k: object, v: object, *, causal: bool = True
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Check (B, H, S, dk) queries/keys and (B, H, S_k, dv) values.

    Parameters
    ----------
    q, k, v : torch.Tensor
        ``q`` (B, H, S_q, dk), ``k`` (B, H, S_k, dk), ``v`` (B, H, S_k, dv),
        one floating dtype and one device.
    causal : bool, default True
        With a causal mask ``S_q <= S_k`` is required (queries are the last
        ``S_q`` positions of the key sequence). Must be a ``bool``.

    Returns
    -------
    tuple of torch.Tensor
        ``(q, k, v)`` unchanged.

    Raises
    ------
    TypeError
        If an argument is not a floating tensor or the dtypes differ.
    ValueError
        If shapes or devices are inconsistent.
    """
    check_bool(causal, "causal")
    q = check_tensor(q, "q", shape=("B", "H", "S_q", "dk"))
    B, H, S_q, dk = q.shape
    k = check_tensor(k, "k", shape=(B, H, "S_k", dk), dtype=q.dtype, device=q.device)
    S_k = k.shape[2]
    v = check_tensor(v, "v", shape=(B, H, S_k, "dv"), dtype=q.dtype, device=q.device)
    if S_q == 0 or S_k == 0 or dk == 0:
        raise InputValueError(
            f"q and k must be non-empty; got q {tuple(q.shape)}, k {tuple(k.shape)}"
        )
    if causal and S_q > S_k:
        raise InputValueError(
            f"with causal=True, q (S_q={S_q}) must not have more rows than k (S_k={S_k})"
        )
    return q, k, v


def check_g(G: object, name: str, *, B: int, H: int, dk: int, like: torch.Tensor) -> torch.Tensor:
    """Check an energy-curvature operator of shape (dk, dk), (H, dk, dk) or (B, H, dk, dk).

    Parameters
    ----------
    G : torch.Tensor
        The operator.
    name : str
        Argument name used in error messages.
    B, H, dk : int
        Batch size, number of heads and head dimension.
    like : torch.Tensor
        A tensor whose device ``G`` must share.

    Returns
    -------
    torch.Tensor
        ``G`` reshaped (as a view) to 4 dimensions broadcastable to (B, H, dk, dk).

    Raises
    ------
    TypeError
        If ``G`` is not a floating tensor.
    ValueError
        If the shape or device is wrong.
    """
    G = check_tensor(G, name, device=like.device)
    want = f"(dk, dk), (H, dk, dk) or (B, H, dk, dk) = ({dk}, {dk}), ({H}, {dk}, {dk}) or "
    want += f"({B}, {H}, {dk}, {dk})"
    ok = (
        (G.dim() == 2 and tuple(G.shape) == (dk, dk))
        or (G.dim() == 3 and tuple(G.shape) == (H, dk, dk))
        or (G.dim() == 4 and tuple(G.shape) in ((B, H, dk, dk), (1, H, dk, dk)))
    )
    if not ok:
        raise InputValueError(f"{name} must have shape {want}; got shape {tuple(G.shape)}")
    while G.dim() < 4:
        G = G.unsqueeze(0)
    return G


def check_finite(x: torch.Tensor, stage: str, *, power_law: bool = True) -> torch.Tensor:
    """Return the stage result ``x``, or raise :class:`NonFiniteStageError` naming ``stage``.

    Raises the subclass :class:`PowerLawOverflowError` when ``power_law`` (the
    power law or a later stage). Costs one device synchronisation on GPU (a
    reduction read back to the host).
    """
    finite = torch.isfinite(x)
    if not bool(finite.all()):
        bad = int((~finite).sum())
        cls = PowerLawOverflowError if power_law else NonFiniteStageError
        raise cls(stage, f"{bad} non-finite entries ({x.dtype} overflow); inputs too large")
    return x


def row_norm_max(x: torch.Tensor) -> torch.Tensor:
    """``max_i |x_i|`` over the rows of (..., S, d), in ``compute_dtype`` (0 for no rows)."""
    cdt = compute_dtype(x.dtype)
    if x.shape[-2] == 0:
        return x.new_zeros(x.shape[:-2], dtype=cdt)
    return torch.linalg.vector_norm(x, dim=-1, dtype=cdt).amax(dim=-1)


def check_score_range(
    q: torch.Tensor, k: torch.Tensor, *, k_norm: torch.Tensor | None = None
) -> None:
    """Raise :class:`NonFiniteStageError` ``[scores]`` if a score ``q_i . k_j`` can overflow.

    What torch's CPU SDPA makes of an overflowed (inf, then NaN) score row depends on
    its dispatch (CPU capability, shape, dtype): a NaN row on one machine, a row of
    zeros on another. So the range is checked before SDPA, not read off its output.
    Bound (Cauchy-Schwarz): ``|q_i . k_j| <= max_i |q_i| max_j |k_j|`` per (batch,
    head), in SDPA's accumulation dtype (``compute_dtype``), one host
    synchronisation; a bound above a quarter of that dtype's range (the margin keeps
    the scaled scores and their differences inside it), or an overflowed norm, has
    the products formed in float64 and their largest magnitude compared instead.

    Parameters
    ----------
    q, k : torch.Tensor
        (..., S_q, d) and (..., S_k, d), exactly as SDPA receives them.
    k_norm : torch.Tensor, optional
        An upper bound of ``max_j |k_j|`` per leading index (shape ``k.shape[:-2]``),
        e.g. kept up to date by a decoding cache, so that the keys need not be read.
    """
    cdt = compute_dtype(q.dtype)
    limit = torch.finfo(cdt).max / 4
    qn = row_norm_max(q)
    kn = row_norm_max(k) if k_norm is None else k_norm.to(cdt)
    if bool((qn * kn <= limit).all()):  # an inf or NaN bound fails here
        return
    q64, k64 = q.double(), k.double()
    biggest = float(torch.matmul(q64, k64.transpose(-2, -1)).abs().amax())
    if not biggest <= limit:
        raise NonFiniteStageError(
            "scores",
            f"a score reaches {biggest:.3g}, beyond the {cdt} range "
            f"SDPA accumulates in (limit {limit:.3g}); inputs too large",
        )


# --------------------------------------------------------------------------- bad input
def check_bool(value: object, name: str) -> bool:
    """Return ``value`` if it is a bool; a string such as ``"False"`` is a ``TypeError``.

    Raises
    ------
    TypeError
        If ``value`` is not a ``bool``.
    """
    if not isinstance(value, bool):
        raise InputTypeError(f"{name} must be a bool; got {type(value).__name__} {value!r}")
    return value


def check_type(value: object, cls: type, name: str, what: str) -> None:
    """Raise ``TypeError`` naming ``name`` unless ``value`` is a ``cls``."""
    if not isinstance(value, cls):
        raise InputTypeError(f"{name} must be {what}; got {type(value).__name__}")


def check_inputs_finite(*named: tuple[str, torch.Tensor | None]) -> None:
    """Raise ``ValueError`` naming the first argument with an inf/NaN entry.

    One sum per tensor and ONE host synchronisation for all of them (on GPU): a sum is
    finite only if every entry is (an inf or NaN entry makes it inf or NaN); only when a
    sum is not finite (a bad entry, or a sum beyond the range) are the entries counted.
    ``None`` entries are skipped. This is the default check of the attention entry points
    (``check_finite=False`` skips it).

    Raises
    ------
    ValueError
        ``"<name> must be finite; it has N inf/NaN entries (non-finite input)"``.
    """
    given = [(n, t) for n, t in named if t is not None]
    if not given:
        return
    sums = torch.stack([t.sum(dtype=compute_dtype(t.dtype)).double() for _, t in given])
    flags = torch.isfinite(sums).tolist()
    for (name, t), ok in zip(given, flags, strict=True):
        if not ok and not bool(torch.isfinite(t).all()):
            bad = int((~torch.isfinite(t)).sum())
            raise InputValueError(
                f"{name} must be finite; it has {bad} inf/NaN entries (non-finite input)"
            )


def _param_tensors(params: object) -> list[tuple[str, torch.Tensor]]:
    """``(field path, tensor)`` of every tensor of a ``HeadParams`` (duck-typed)."""
    out = [
        (f"params.{n}", getattr(params, n))
        for n in ("ln0_gamma", "ln0_beta", "W", "b", "P", "a", "b_a")
    ]
    for i, unit in enumerate(getattr(params, "reslayers", [])):
        out += [
            (f"params.reslayers[{i}].ln_gamma", unit.ln_gamma),
            (f"params.reslayers[{i}].ln_beta", unit.ln_beta),
        ]
        for j, blk in enumerate(unit.dense):
            out += [
                (f"params.reslayers[{i}].dense[{j}].{f.name}", getattr(blk, f.name))
                for f in fields(blk)
            ]
    return out


def explain_nonfinite(inputs: Sequence[tuple[str, torch.Tensor | None]], params: object) -> None:
    """After a stage came out non-finite, name a non-finite input or parameter.

    Raises ``ValueError`` (from :func:`check_inputs_finite`) if the cause is a non-finite
    input or parameter, so that it is not reported as an overflow; returns otherwise (the
    caller re-raises the overflow). Runs only after a stage failed: no cost otherwise.
    """
    check_inputs_finite(*inputs, *_param_tensors(params))


def _arr(x: object, name: str, shape: Sequence[int | str | None]) -> tuple[int, ...]:
    """Check one reference array (numeric, shape, finite); return its shape."""
    from pyverify.reference.validation import as_float_array

    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().double().numpy()
    return as_float_array(x, name, shape=shape).shape


def _attr(obj: object, field: str, name: str) -> object:
    if not hasattr(obj, field):
        got = type(obj).__name__
        raise InputTypeError(
            f"{name} must have a field {field!r} (reference parameters); got {got}"
        )
    return getattr(obj, field)


def validate_reference_head(hp: object, name: str, dk: int | None = None) -> tuple[int, int]:
    """Check one reference head's parameters (``PLGAParams`` fields) before stacking.

    Returns
    -------
    tuple of int
        ``(dk, a_dff)`` (``a_dff`` 0 when the learner has no SwiGLU block).

    Raises
    ------
    TypeError, ValueError
        Naming the field, e.g. ``p[1].P must have shape (4, 4); got shape (3, 3)``.
    """
    W = _attr(hp, "W", name)
    if dk is None:
        shape = _arr(W, f"{name}.W", ("dk", "dk"))
        dk = shape[0]
    for f in ("W", "b", "P", "a", "b_a"):
        _arr(_attr(hp, f, name), f"{name}.{f}", (dk, dk))
    for f in ("ln0_gamma", "ln0_beta"):
        _arr(_attr(hp, f, name), f"{name}.{f}", (dk,))
    units = _attr(hp, "reslayers", name)
    if not isinstance(units, list | tuple):
        raise InputTypeError(f"{name}.reslayers must be a list; got {type(units).__name__}")
    a_dff = 0
    for i, unit in enumerate(units):
        un = f"{name}.reslayers[{i}]"
        dense = _attr(unit, "dense", un)
        if not isinstance(dense, list | tuple):
            raise InputTypeError(
                f"{un}.dense must be a list of SwiGLU blocks; got {type(dense).__name__}"
            )
        for f in ("ln_gamma", "ln_beta"):
            _arr(_attr(unit, f, un), f"{un}.{f}", (dk,))
        for j, blk in enumerate(dense):
            bn = f"{un}.dense[{j}]"
            a_dff = _arr(_attr(blk, "W1", bn), f"{bn}.W1", (dk, "a_dff"))[1]
            _validate_swiglu(blk, bn, dk, a_dff, dk)
    return dk, a_dff


def _validate_swiglu(blk: object, name: str, d_in: int, hidden: int, d_out: int) -> None:
    shapes = {"W1": (d_in, hidden), "b1": (hidden,), "W2": (d_in, hidden), "b2": (hidden,),
              "W3": (hidden, d_out), "b3": (d_out,)}  # fmt: skip
    for f, shape in shapes.items():
        _arr(_attr(blk, f, name), f"{name}.{f}", shape)


def validate_reference_decoder(rp: object, name: str = "ref") -> None:
    """Check a reference decoder's parameters (``DecoderParams`` fields) field by field.

    Raises
    ------
    TypeError, ValueError
        Naming the field, e.g. ``ref.layers[0].ffn.W1 must have shape (8, dff); ...``.
    """
    if isinstance(rp, dict) or not hasattr(rp, "layers"):
        raise InputTypeError(
            f"{name} must be a pyverify.reference Decoder or DecoderParams; got {type(rp).__name__}"
        )
    d_vocab = _arr(_attr(rp, "embedding", name), f"{name}.embedding", ("vocab", "d_model"))
    vocab, d = d_vocab
    for f in ("ln_gamma", "ln_beta"):
        _arr(_attr(rp, f, name), f"{name}.{f}", (d,))
    _arr(_attr(rp, "W_out", name), f"{name}.W_out", (d, vocab))
    _arr(_attr(rp, "b_out", name), f"{name}.b_out", (vocab,))
    layers = _attr(rp, "layers", name)
    if not isinstance(layers, list | tuple) or not layers:
        raise InputValueError(f"{name}.layers must be a non-empty list of decoder layers")
    for i, layer in enumerate(layers):
        ln = f"{name}.layers[{i}]"
        mha = _attr(layer, "mha", ln)
        for f in ("Wq", "Wk", "Wv", "Wo"):
            _arr(_attr(mha, f, f"{ln}.mha"), f"{ln}.mha.{f}", (d, d))
        for f in ("bq", "bk", "bv", "bo"):
            _arr(_attr(mha, f, f"{ln}.mha"), f"{ln}.mha.{f}", (d,))
        heads = _attr(mha, "heads", f"{ln}.mha")
        if not isinstance(heads, list | tuple) or not heads or d % len(heads):
            raise InputValueError(
                f"{ln}.mha.heads must be a non-empty list of H heads with H dividing {d}"
            )
        for h, hp in enumerate(heads):
            validate_reference_head(hp, f"{ln}.mha.heads[{h}]", d // len(heads))
        for f in ("ln1_gamma", "ln1_beta", "ln2_gamma", "ln2_beta"):
            _arr(_attr(layer, f, ln), f"{ln}.{f}", (d,))
        ffn = _attr(layer, "ffn", ln)
        dff = _arr(_attr(ffn, "W1", f"{ln}.ffn"), f"{ln}.ffn.W1", (d, "dff"))[1]
        _validate_swiglu(ffn, f"{ln}.ffn", d, dff, d)


def check_device_dtype(device: object, dtype: object) -> None:
    """Check a target ``device`` (parseable and available) and floating ``dtype``.

    Raises
    ------
    TypeError
        If ``dtype`` is not one of :data:`FLOAT_DTYPES`.
    ValueError
        If ``device`` is not a device name, or names a CUDA device torch cannot use.
    """
    if dtype not in FLOAT_DTYPES:
        allowed = ", ".join(str(d) for d in FLOAT_DTYPES)
        raise InputTypeError(f"dtype must be one of {allowed}; got {dtype!r}")
    if device is None:
        return
    try:
        dev = torch.device(device)  # type: ignore[arg-type]
    except (RuntimeError, TypeError) as exc:
        raise InputValueError(
            f"device must be a torch device such as 'cpu' or 'cuda'; got {device!r}"
        ) from exc
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise InputValueError(
            f"device {device!r} is not available (torch.cuda.is_available() is False)"
        )
    if dev.type not in ("cpu", "cuda"):
        raise InputValueError(
            f"device must be 'cpu' or 'cuda' (the kernels' devices); got {device!r}"
        )
