"""Load a ``pldr_model_v510.PLDR_Model`` state dict into the float64 reference decoder.

Supported key layout (from the author's public code,
``burcgokden/PLDR-LLM-with-KVG-cache``, ``src/pldr_model_v510``). ``L`` layers,
``H`` heads, ``dk = d_model / H``, ``V`` vocabulary; ``nn.Linear`` weights are
stored ``(out, in)`` and are transposed here to the row convention ``x @ W``::

    decoder.embedding.weight                                  (V, d_model)
    decoder.layernorm1.{weight,bias}                          (d_model,)
    decoder.dec_layers.{i}.mha1.{wq,wk,wv,dense}.weight       (d_model, d_model)
    decoder.dec_layers.{i}.mha1.{wq,wk,wv,dense}.bias         (d_model,)
    decoder.dec_layers.{i}.mha1.layernorm1.{weight,bias}      (dk,)   shared row LayerNorm of D
    decoder.dec_layers.{i}.mha1.reslayerAs.{j}.denseAs.{m}.gluw1.weight   (A_dff, dk)
    decoder.dec_layers.{i}.mha1.reslayerAs.{j}.denseAs.{m}.gluw1.bias     (A_dff,)
    decoder.dec_layers.{i}.mha1.reslayerAs.{j}.denseAs.{m}.gluw2.{...}    as gluw1
    decoder.dec_layers.{i}.mha1.reslayerAs.{j}.denseAs.{m}.gluw3.weight   (dk, A_dff)
    decoder.dec_layers.{i}.mha1.reslayerAs.{j}.denseAs.{m}.gluw3.bias     (dk,)
    decoder.dec_layers.{i}.mha1.reslayerAs.{j}.layernormA.{weight,bias}   (dk,)
    decoder.dec_layers.{i}.mha1.plgatt_layer.{Wlst,blst,pwlst,alst,balst} (H, dk, dk)
    decoder.dec_layers.{i}.layernorm1.{weight,bias}           (d_model,)  after attention
    decoder.dec_layers.{i}.ffn.gluw1.weight                   (dff, d_model)  (+ bias, gluw2)
    decoder.dec_layers.{i}.ffn.gluw3.weight                   (d_model, dff)  (+ bias)
    decoder.dec_layers.{i}.layernorm2.{weight,bias}           (d_model,)  after the FFN
    final_layer.weight                                        (V, d_model)
    final_layer.bias                                          (V,)

The metric learner (``mha1.layernorm1`` and ``mha1.reslayerAs``) is SHARED by the
heads of a layer; ``plgatt_layer.Wlst, blst, pwlst, alst, balst`` are the per-head
``W, b, P, a, b_a``. Sizes (L, H, dk, A_dff, residual units, dense blocks per
unit, dff, V) are inferred from the shapes. Accepted containers: the state dict
itself, or the author's checkpoint ``{"model_state_dict": ..., ...}``; a common
prefix ``module.`` (DDP) or ``_orig_mod.`` (``torch.compile``) is removed.
Non-persistent RoPE buffers (``mha1.rotary_embedding.{cache,theta}``) are
ignored if present. Anything else is an error naming the keys.
"""

from __future__ import annotations

import os
import pathlib
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from pyverify.errors import InputValueError
from pyverify.reference.model import Decoder, DecoderLayerParams, DecoderParams, MHAParams
from pyverify.reference.params import PLGAParams, ResUnit, SwiGLUBlock

__all__ = ["CheckpointError", "V510Sizes", "load_state_dict", "load_v510", "load_v510_params"]

_IGNORED = re.compile(r"^decoder\.dec_layers\.\d+\.mha1\.rotary_embedding\.(cache|theta)$")
_PREFIXES = ("module.", "_orig_mod.")


class CheckpointError(InputValueError):
    """A checkpoint cannot be read or does not have the ``pldr_model_v510`` layout."""


def _names(keys: list[str], limit: int = 8) -> str:
    shown = ", ".join(sorted(keys)[:limit])
    return shown + (f" (and {len(keys) - limit} more)" if len(keys) > limit else "")


def load_state_dict(source: str | os.PathLike[str] | Mapping[str, Any]) -> dict[str, Any]:
    """Read a state dict (path to a ``torch.save`` file, or a mapping) and normalise its keys.

    Parameters
    ----------
    source : str, path or mapping
        A file written by ``torch.save`` holding the state dict or the author's
        checkpoint dict (``model_state_dict`` inside), or such a mapping.

    Returns
    -------
    dict
        Key -> tensor/array, with a ``model_state_dict`` unwrapped and a common
        ``module.``/``_orig_mod.`` prefix removed.

    Raises
    ------
    CheckpointError
        If the file is missing or unreadable, or the content is not a mapping.
    """
    where = "source"
    if isinstance(source, str | os.PathLike):
        path = pathlib.Path(source)
        where = str(path)
        if not path.is_file():
            raise CheckpointError(f"checkpoint {path}: no such file")
        import torch

        try:
            obj = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as exc:
            msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise CheckpointError(f"checkpoint {path}: not a readable torch file ({msg})") from exc
    else:
        obj = source
    if isinstance(obj, Mapping) and "model_state_dict" in obj:
        obj = obj["model_state_dict"]
    if not isinstance(obj, Mapping) or not obj:
        raise CheckpointError(f"{where}: expected a non-empty state dict (key -> tensor)")
    sd = {str(k): v for k, v in obj.items()}
    for pre in _PREFIXES:
        if all(k.startswith(pre) for k in sd):
            sd = {k[len(pre) :]: v for k, v in sd.items()}
    return sd


def _np(x: Any, key: str) -> np.ndarray:
    if hasattr(x, "detach"):  # a torch tensor (any float dtype, incl. bfloat16)
        if not x.is_floating_point():
            raise CheckpointError(f"{key}: expected a floating tensor; got {x.dtype}")
        x = x.detach().to("cpu").double().numpy()
    a = np.asarray(x)
    if a.dtype.kind != "f":
        raise CheckpointError(f"{key}: expected a floating array; got {a.dtype}")
    a = a.astype(np.float64)
    if not np.all(np.isfinite(a)):
        raise CheckpointError(f"{key}: holds inf or NaN")
    return a


class V510Sizes(dict):
    """Sizes inferred from a state dict (a dict with the author's argument names)."""


def _count(sd: Mapping[str, Any], pattern: str) -> int:
    rx = re.compile(pattern)
    idx = {int(m.group(1)) for k in sd if (m := rx.match(k))}
    n = len(idx)
    if idx and idx != set(range(n)):
        raise CheckpointError(f"indices of {pattern} are not 0..{n - 1}: {sorted(idx)}")
    return n


def infer_sizes(sd: Mapping[str, Any]) -> V510Sizes:
    """Infer the model sizes from the tensor shapes of a normalised state dict.

    Returns
    -------
    V510Sizes
        ``num_layers, d_model, num_heads, dk, dff, A_dff, num_reslayerA,
        num_denseA, input_vocab_size``.
    """
    need = ["decoder.embedding.weight", "decoder.dec_layers.0.mha1.plgatt_layer.Wlst"]
    absent = [k for k in need if k not in sd]
    if absent:
        raise CheckpointError(
            f"not a pldr_model_v510 state dict: missing {_names(absent)} "
            f"(its keys start with {_names(list(sd), 3)})"
        )
    vocab, d_model = (int(n) for n in np.shape(sd["decoder.embedding.weight"]))
    w = np.shape(sd["decoder.dec_layers.0.mha1.plgatt_layer.Wlst"])
    if len(w) != 3 or w[1] != w[2]:
        raise CheckpointError(f"decoder.dec_layers.0.mha1.plgatt_layer.Wlst: shape {w}")
    H, dk = int(w[0]), int(w[1])
    if H * dk != d_model:
        raise CheckpointError(f"heads x dk = {H} x {dk} != d_model = {d_model}")
    L = _count(sd, r"^decoder\.dec_layers\.(\d+)\.")
    n_res = _count(sd, r"^decoder\.dec_layers\.0\.mha1\.reslayerAs\.(\d+)\.")
    n_dense = _count(sd, r"^decoder\.dec_layers\.0\.mha1\.reslayerAs\.0\.denseAs\.(\d+)\.")
    a_key = "decoder.dec_layers.0.mha1.reslayerAs.0.denseAs.0.gluw1.weight"
    a_dff = int(np.shape(sd[a_key])[0]) if a_key in sd else 1
    f_key = "decoder.dec_layers.0.ffn.gluw1.weight"
    if f_key not in sd:
        raise CheckpointError(f"missing {f_key}")
    return V510Sizes(
        num_layers=L, d_model=d_model, num_heads=H, dk=dk, dff=int(np.shape(sd[f_key])[0]),
        A_dff=a_dff, num_reslayerA=n_res, num_denseA=n_dense, input_vocab_size=vocab,
    )  # fmt: skip


def expected_shapes(z: Mapping[str, int]) -> dict[str, tuple[int, ...]]:
    """Every key of the supported layout with its shape, for sizes ``z`` (:func:`infer_sizes`)."""
    d, H, dk, V = z["d_model"], z["num_heads"], z["dk"], z["input_vocab_size"]
    out: dict[str, tuple[int, ...]] = {
        "decoder.embedding.weight": (V, d),
        "decoder.layernorm1.weight": (d,),
        "decoder.layernorm1.bias": (d,),
        "final_layer.weight": (V, d),
        "final_layer.bias": (V,),
    }

    def lin(pre: str, d_in: int, d_out: int) -> None:
        out[f"{pre}.weight"], out[f"{pre}.bias"] = (d_out, d_in), (d_out,)

    def glu(pre: str, d_io: int, hidden: int) -> None:
        lin(f"{pre}.gluw1", d_io, hidden)
        lin(f"{pre}.gluw2", d_io, hidden)
        lin(f"{pre}.gluw3", hidden, d_io)

    for i in range(z["num_layers"]):
        m = f"decoder.dec_layers.{i}.mha1"
        for n in ("wq", "wk", "wv", "dense"):
            lin(f"{m}.{n}", d, d)
        out[f"{m}.layernorm1.weight"] = out[f"{m}.layernorm1.bias"] = (dk,)
        for j in range(z["num_reslayerA"]):
            r = f"{m}.reslayerAs.{j}"
            for k in range(z["num_denseA"]):
                glu(f"{r}.denseAs.{k}", dk, z["A_dff"])
            out[f"{r}.layernormA.weight"] = out[f"{r}.layernormA.bias"] = (dk,)
        for n in ("Wlst", "blst", "pwlst", "alst", "balst"):
            out[f"{m}.plgatt_layer.{n}"] = (H, dk, dk)
        glu(f"decoder.dec_layers.{i}.ffn", d, z["dff"])
        for n in ("layernorm1", "layernorm2"):
            out[f"decoder.dec_layers.{i}.{n}.weight"] = (d,)
            out[f"decoder.dec_layers.{i}.{n}.bias"] = (d,)
    return out


def check_layout(sd: Mapping[str, Any], where: str = "checkpoint") -> V510Sizes:
    """Infer sizes and check every key and shape; raise one clear error otherwise.

    Raises
    ------
    CheckpointError
        Naming missing keys, unexpected keys, or keys with a wrong shape.
    """
    z = infer_sizes(sd)
    want = expected_shapes(z)
    missing = [k for k in want if k not in sd]
    unexpected = [k for k in sd if k not in want and not _IGNORED.match(k)]
    wrong = [
        f"{k} {tuple(np.shape(sd[k]))} (expected {want[k]})"
        for k in want
        if k in sd and tuple(np.shape(sd[k])) != want[k]
    ]
    sizes = ", ".join(f"{k}={v}" for k, v in z.items())
    if missing:
        raise CheckpointError(f"{where}: missing keys {_names(missing)} (sizes inferred: {sizes})")
    if unexpected:
        raise CheckpointError(f"{where}: unexpected keys {_names(unexpected)}")
    if wrong:
        raise CheckpointError(f"{where}: wrong shapes: {_names(wrong, 4)}")
    return z


def _glu(sd: Mapping[str, Any], pre: str) -> SwiGLUBlock:
    def w(n: str) -> np.ndarray:
        return _np(sd[f"{pre}.{n}.weight"], f"{pre}.{n}.weight").T.copy()

    def b(n: str) -> np.ndarray:
        return _np(sd[f"{pre}.{n}.bias"], f"{pre}.{n}.bias")

    return SwiGLUBlock(
        W1=w("gluw1"), b1=b("gluw1"), W2=w("gluw2"), b2=b("gluw2"), W3=w("gluw3"), b3=b("gluw3")
    )


def load_v510_params(
    source: str | os.PathLike[str] | Mapping[str, Any], *, name: str | None = None
) -> tuple[DecoderParams, V510Sizes]:
    """Read a ``pldr_model_v510`` state dict into reference :class:`DecoderParams`.

    Parameters
    ----------
    source : str, path or mapping
        See :func:`load_state_dict`.
    name : str, optional
        How errors name the source (default: the path, or "state dict").

    Returns
    -------
    params : DecoderParams
        float64 parameters; every head of a layer carries the layer's shared learner.
    sizes : V510Sizes
        The inferred sizes.

    Raises
    ------
    CheckpointError
        On an unreadable file or a layout mismatch (keys named).
    """
    where = name or (str(source) if isinstance(source, str | os.PathLike) else "state dict")
    sd = load_state_dict(source)
    z = check_layout(sd, where)

    def a(k: str) -> np.ndarray:
        return _np(sd[k], k)

    def lin(pre: str) -> tuple[np.ndarray, np.ndarray]:
        return a(f"{pre}.weight").T.copy(), a(f"{pre}.bias")

    layers = []
    for i in range(z["num_layers"]):
        m = f"decoder.dec_layers.{i}.mha1"
        units = [
            ResUnit(
                dense=[_glu(sd, f"{m}.reslayerAs.{j}.denseAs.{k}") for k in range(z["num_denseA"])],
                ln_gamma=a(f"{m}.reslayerAs.{j}.layernormA.weight"),
                ln_beta=a(f"{m}.reslayerAs.{j}.layernormA.bias"),
            )
            for j in range(z["num_reslayerA"])
        ]
        g0, b0 = a(f"{m}.layernorm1.weight"), a(f"{m}.layernorm1.bias")
        per = {n: a(f"{m}.plgatt_layer.{n}") for n in ("Wlst", "blst", "pwlst", "alst", "balst")}
        heads = [
            PLGAParams(g0, b0, units, per["Wlst"][h], per["blst"][h], per["pwlst"][h],
                       per["alst"][h], per["balst"][h])
            for h in range(z["num_heads"])
        ]  # fmt: skip
        (Wq, bq), (Wk, bk), (Wv, bv), (Wo, bo) = (
            lin(f"{m}.{n}") for n in ("wq", "wk", "wv", "dense")
        )
        mha = MHAParams(Wq=Wq, bq=bq, Wk=Wk, bk=bk, Wv=Wv, bv=bv, Wo=Wo, bo=bo, heads=heads)
        li = f"decoder.dec_layers.{i}"
        layers.append(
            DecoderLayerParams(
                mha=mha,
                ln1_gamma=a(f"{li}.layernorm1.weight"),
                ln1_beta=a(f"{li}.layernorm1.bias"),
                ffn=_glu(sd, f"{li}.ffn"),
                ln2_gamma=a(f"{li}.layernorm2.weight"),
                ln2_beta=a(f"{li}.layernorm2.bias"),
            )
        )
    W_out, b_out = lin("final_layer")
    params = DecoderParams(
        embedding=a("decoder.embedding.weight"),
        ln_gamma=a("decoder.layernorm1.weight"),
        ln_beta=a("decoder.layernorm1.bias"),
        layers=layers,
        W_out=W_out,
        b_out=b_out,
    )
    return params, z


def load_v510(source: str | os.PathLike[str] | Mapping[str, Any]) -> Decoder:
    """Load a ``pldr_model_v510`` state dict as the float64 reference :class:`Decoder`.

    Parameters
    ----------
    source : str, path or mapping
        Path to a ``torch.save``d state dict (or the author's checkpoint dict), or
        the mapping itself.

    Returns
    -------
    Decoder
        The reference decoder (shared metric learner per layer).
    """
    return Decoder(load_v510_params(source)[0])
