"""The measurement package against definitions written out independently.

Oracles: the author's audit formulas evaluated in NumPy (complex RoPE eigenbasis for the
commutant, ``delta_stats`` for the online contract, the dynamics study's ``row`` field
and ``paired_metrics`` quantities), and per-sequence forwards for the grouped ones.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from pyverify.errors import InputValueError
from pyverify.measure import (
    FinalInputs,
    MeasureInputs,
    as_float64,
    deductive_stack,
    load_model,
    read_inputs,
    token_set,
)
from pyverify.measure.contracts import cache_contract, online_contract
from pyverify.measure.order import sample_continuations
from pyverify.measure.structure import identical_rows_residual, row_energy
from pyverify.measure.twirl import commutant_residual, density_twirl
from pyverify.reference.v510 import CheckpointError
from pyverify.trainable.decoder import ModelConfig, PLDRDecoder

CFG = ModelConfig(vocab=32, d_model=16, num_heads=2, num_layers=2, dff=24, a_dff=12,
                  num_reslayer=1, num_dense=2)  # fmt: skip


@pytest.fixture(scope="module")
def model64():
    return as_float64(PLDRDecoder(CFG, seed=2, p_init="spread"))


def _rope_basis(dk: int) -> tuple[np.ndarray, np.ndarray]:
    """The author's ``audit_lib.rope_basis``: column 2a is the e^{+i theta_a} eigenvector of
    plane (2a, 2a+1), column 2a+1 the e^{-i theta_a} one."""
    theta = [10000.0 ** (-2 * a / dk) for a in range(dk // 2)]
    U = np.zeros((dk, dk), dtype=complex)
    omega = np.zeros(dk)
    for a in range(dk // 2):
        e0, e1 = np.eye(dk)[2 * a], np.eye(dk)[2 * a + 1]
        U[:, 2 * a], omega[2 * a] = (e0 - 1j * e1) / np.sqrt(2), theta[a]
        U[:, 2 * a + 1], omega[2 * a + 1] = (e0 + 1j * e1) / np.sqrt(2), -theta[a]
    return U, omega


def _energies(M: np.ndarray, U: np.ndarray, omega: np.ndarray) -> tuple[float, float]:
    """Energy on and off the commutant: entries of U^* M U with equal / unequal frequency."""
    Mc = U.conj().T @ M @ U
    same = np.abs(omega[:, None] - omega[None, :]) < 1e-12
    E = np.abs(Mc) ** 2
    return float(E[same].sum()), float(E[~same].sum())


def test_twirl_figures_equal_the_audits_eigenbasis_form():
    """The projection in the real basis and the author's entry mask in the complex basis
    give the same energies (a unitary change of basis); float64, dk 8: 1e-12."""
    rng = np.random.default_rng(0)
    dk = 8
    U, omega = _rope_basis(dk)
    rho = rng.normal(size=(5, 2, 3, dk, dk))
    rho0 = rng.normal(size=(5, 2, 3, dk, dk))
    got = density_twirl(torch.as_tensor(rho), torch.as_tensor(rho0))
    res = commutant_residual(torch.as_tensor(rho)).numpy()
    for layer, head in np.ndindex(2, 3):
        comm = off = comm0 = off0 = 0.0
        for i in range(5):
            c, o = _energies(rho[i, layer, head], U, omega)
            c0, o0 = _energies(rho0[i, layer, head], U, omega)
            comm, off, comm0, off0 = comm + c, off + o, comm0 + c0, off0 + o0
            assert res[i, layer, head] == pytest.approx(math.sqrt(o / (c + o)), rel=1e-12)
        assert got["commutant_fraction"][layer][head] == pytest.approx(
            comm / (comm + off), rel=1e-12
        )
        assert got["commutant_fraction_unrotated"][layer][head] == pytest.approx(
            comm0 / (comm0 + off0), rel=1e-12
        )
        assert got["offcommutant_suppression"][layer][head] == pytest.approx(
            1 - off / off0, rel=1e-12
        )


def test_rotation_moves_the_density_operator_toward_the_commutant(model64):
    """The twirl itself: summing R_n q q^T R_n^T over positions averages the off-commutant
    frequencies, so the rotated density operator of a long window has more of its energy
    in the commutant than the unrotated one (a property of RoPE, any weights)."""
    toks = torch.randint(0, CFG.vocab, (4, 64), generator=torch.Generator().manual_seed(3))
    X = deductive_stack(model64, token_set(toks), ("rho", "rho0"))
    tw = density_twirl(X["rho"], X["rho0"])
    assert np.all(np.array(tw["offcommutant_suppression"]) > 0)
    assert np.all(np.array(tw["commutant_fraction"]) > np.array(tw["commutant_fraction_unrotated"]))


def test_row_energy_is_the_authors_row_field():
    """``model_rg/criticality.py``: centred = a - a.mean(-2); row = mean(centred^2) / mean(a^2);
    for one probe it is the square of the identical-rows residual."""
    rng = np.random.default_rng(1)
    A = rng.normal(size=(3, 2, 2, 6, 6)) + rng.normal(size=(1, 2, 2, 1, 6))
    want = np.mean(
        [((a - a.mean(-2, keepdims=True)) ** 2).mean((-2, -1)) / (a**2).mean((-2, -1)) for a in A],
        axis=0,
    )
    np.testing.assert_allclose(row_energy(torch.as_tensor(A)).numpy(), want, rtol=1e-12)
    one = torch.as_tensor(A[:1])
    np.testing.assert_allclose(row_energy(one), identical_rows_residual(one) ** 2, rtol=1e-12)
    same_rows = torch.ones(1, 1, 1, 4, 4) * torch.arange(4.0)
    assert float(row_energy(same_rows.double())) == 0.0


def test_online_contract_is_the_audits_delta_stats(model64):
    """Pairs sharing a prefix, every later token moved by a nonzero offset; ``delta_stats``
    of the prefix logits, written out: max |a - b|, l2, count of nonzero entries."""
    seqs = torch.randint(0, CFG.vocab, (3, 10), generator=torch.Generator().manual_seed(4))
    got = online_contract(model64, token_set(seqs), 4, seed=7)
    rng = np.random.default_rng(7)
    off = rng.integers(1, CFG.vocab, size=(3, 6), dtype=np.int64)
    b = seqs.clone()
    b[:, 4:] = (seqs[:, 4:] + torch.from_numpy(off)) % CFG.vocab
    assert torch.all(b[:, 4:] != seqs[:, 4:]) and torch.equal(b[:, :4], seqs[:, :4])
    d = (model64(seqs)[0][:, :4] - model64(b)[0][:, :4]).detach().numpy()
    assert got["entries"] == d.size == 3 * 4 * CFG.vocab
    assert got["changed"] == np.count_nonzero(d) > 0  # G from the whole sequence leaks
    assert got["max_abs_change"] == float(np.abs(d).max())
    assert got["l2"] == pytest.approx(float(np.linalg.norm(d.ravel())), rel=1e-12)
    assert got["fraction_changed"] == got["changed"] / got["entries"]


def test_cache_contract_quantities_written_out(model64):
    """N1 with NumPy: the mean operator, KL(p || q) of the final position, NLL of the
    external target, root-probability amplitudes and their variance over contexts."""
    cal = torch.randint(0, CFG.vocab, (4, 12), generator=torch.Generator().manual_seed(5))
    win = torch.randint(0, CFG.vocab, (6, 13), generator=torch.Generator().manual_seed(6))
    init64 = as_float64(PLDRDecoder(CFG, seed=9))
    got = cache_contract(model64, token_set(cal), token_set(win), init64)
    G = deductive_stack(model64, token_set(cal), ("G",))["G"].mean(0)  # (L, H, dk, dk)
    native = model64(win[:, :-1])[0][:, -1].detach().numpy()
    cached = model64(win[:, :-1], [g[None] for g in G])[0][:, -1].detach().numpy()

    def logsoftmax(z):
        z = z - z.max(-1, keepdims=True)
        return z - np.log(np.exp(z).sum(-1, keepdims=True))

    lp, lq = logsoftmax(native), logsoftmax(cached)
    kl = (np.exp(lp) * (lp - lq)).sum(-1)
    x, y = 2 * np.exp(lp / 2), 2 * np.exp(lq / 2)
    e = x - y
    own = got["own"]
    t = win[:, -1].numpy()
    assert own["mean_kl"] == pytest.approx(kl.mean(), rel=1e-10) and own["mean_kl"] > 0
    assert own["max_kl"] == pytest.approx(kl.max(), rel=1e-10)
    assert own["native_nll"] == pytest.approx(-lp[np.arange(6), t].mean(), rel=1e-12)
    assert own["cached_nll"] == pytest.approx(-lq[np.arange(6), t].mean(), rel=1e-12)
    assert own["uncentred_energy"] == pytest.approx((e**2).sum(-1).mean(), rel=1e-10)
    vx, ve = x.var(0, ddof=1).sum(), e.var(0, ddof=1).sum()
    assert own["relative_rms_context_centred"] == pytest.approx(math.sqrt(ve / vx), rel=1e-10)
    assert got["initial"]["mean_kl"] > 0 and got["initial"] != own
    same = cache_contract(model64, token_set(cal), token_set(win), model64)
    assert same["initial"] == same["own"]  # the stale cache of the same model is its own


def test_prompt_loss_is_kv_cache_decoding_after_the_prompt(model64):
    """A from the first p tokens, scored from position p - 1 on: the author's KV-cache
    decoding (prefill the prompt, keep its A, feed the rest) gives the same logits. Two
    code paths of one float64 function: 1e-12 relative."""
    from torch.nn.functional import cross_entropy

    from pyverify.measure.loss import prompt_val_loss

    win = torch.randint(0, CFG.vocab, (3, 11), generator=torch.Generator().manual_seed(8))
    x, y, p = win[:, :-1], win[:, 1:], 4
    logits, deds, kv = model64(x[:, :p])
    rest, _, _ = model64(x[:, p:], None, kv, [d["A"] for d in deds])
    pred = torch.cat((logits[:, -1:], rest), dim=1)
    want = float(cross_entropy(pred.flatten(0, 1), y[:, p - 1 :].flatten()))
    assert prompt_val_loss(model64, token_set(win), p) == pytest.approx(want, rel=1e-12)
    assert prompt_val_loss(model64, token_set(win), None) == pytest.approx(
        prompt_val_loss(model64, token_set(win), 5), rel=0
    )  # None: half of the 10 inputs


def test_grouped_sequences_equal_one_forward_each(model64):
    seqs = [[1, 2, 3, 4], [5, 6, 7], [8, 9, 10, 11], [1, 1, 1]]
    ts = token_set(seqs)
    assert [g.shape for g in ts] == [(2, 4), (2, 3)]  # by length, in order of first appearance
    X = deductive_stack(model64, ts, ("A", "G"))
    order = [0, 2, 1, 3]
    for row, i in enumerate(order):
        _, deds, _ = model64(torch.tensor([seqs[i]]))
        for t in ("A", "G"):
            want = torch.stack([d[t][0] for d in deds])
            # a batch and a single row take different GEMM paths: summation order only, a few
            # ulps of the largest entry (O(1) here)
            torch.testing.assert_close(
                X[t][row], want, rtol=1e-12, atol=1e-13 * float(want.abs().max())
            )
    a = sample_continuations(model64, ts, 3, seed=0, branch=0)
    b = sample_continuations(model64, ts, 3, seed=0, branch=1)
    assert [g.shape for g in a] == [(2, 7), (2, 6)]
    assert all(torch.equal(x, y) for x, y in zip(a, sample_continuations(model64, ts, 3, 0, 0),
                                                 strict=True))  # fmt: skip
    assert not all(torch.equal(x, y) for x, y in zip(a, b, strict=True))


def test_inputs_round_trip_through_json(tmp_path):
    rec = MeasureInputs(
        probes={"8": token_set(torch.arange(16).reshape(2, 8)), "all": token_set([[1, 2], [3]])},
        pair_prompts=token_set([[1, 2, 3]]), n_cont=2, seed=1, jac_probes=1, rank_rtol=1e-6,
    )  # fmt: skip
    ts = token_set(torch.arange(12).reshape(2, 6))
    fin = FinalInputs(val=ts, prompts=ts, n_new=2, online=ts, online_prefix=2, calibration=ts,
                      assessment=ts, seed=3, a_prefix=2)  # fmt: skip
    path = tmp_path / "in.json"
    path.write_text(json.dumps({"record": rec.to_json(), "final": fin.to_json()}))
    r2, f2 = read_inputs(path)
    assert r2.to_json() == rec.to_json() and list(r2.probes) == ["8", "all"]
    assert f2 is not None and f2.to_json() == fin.to_json()
    path.write_text("[1]")
    with pytest.raises(InputValueError, match=r"in\.json: expected a JSON object"):
        read_inputs(path)
    with pytest.raises(InputValueError, match="needs >= 2 sequences"):
        MeasureInputs(probes={"x": token_set([[1, 2]])}, pair_prompts=ts, n_cont=1, seed=0,
                      jac_probes=1, rank_rtol=1e-6)  # fmt: skip


def test_load_model_refuses_what_it_cannot_measure():
    sd = PLDRDecoder(CFG, seed=0).state_dict()
    m = load_model({**sd, "decoder.dec_layers.0.mha1.rotary_embedding.cache": torch.ones(3)})
    assert m.final_layer.weight.dtype == torch.float64 and not m.training
    bad = dict(sd)
    bad["decoder.embedding.weight"] = bad["decoder.embedding.weight"].to(torch.int64)
    with pytest.raises(
        CheckpointError, match=r"decoder\.embedding\.weight is not a floating tensor"
    ):
        load_model(bad)
    bad = dict(sd)
    bad["final_layer.weight"] = bad["final_layer.weight"].clone()
    bad["final_layer.weight"][0, 0] = float("inf")
    with pytest.raises(CheckpointError, match=r"final_layer\.weight holds inf or NaN"):
        load_model(bad)
    bf16 = {k: v.to(torch.bfloat16) for k, v in sd.items()}
    exact = load_model(bf16).final_layer.weight  # bfloat16 widens to float64 exactly
    assert torch.equal(exact, bf16["final_layer.weight"].double())


def _fidelity_oracle(model64, prompts, n_new):
    """Per prompt: (step certificate holds, some step's gap >= its margin) for the prompt's
    G-cache, written out without the KV-cache path: the uncached reference is a full pass
    per step (greedy), and with G held at the prompt's the cached decoder's logits at step
    i are a full pass over the prompt and the first i reference tokens with that G (causal
    scores, fixed G: no KV-cache needed)."""
    out = []
    for p in prompts:
        _, deds, _ = model64(p)
        G = [d["G"] for d in deds]
        seq, cov, exc = (
            p,
            torch.ones(p.shape[0], dtype=torch.bool),
            torch.zeros(p.shape[0], dtype=torch.bool),
        )
        for _ in range(n_new):
            ref = model64(seq)[0][:, -1]
            cached = model64(seq, G)[0][:, -1]
            top2 = ref.topk(2, dim=-1).values
            margin, gap = top2[:, 0] - top2[:, 1], (cached - ref).abs().amax(-1)
            cov &= margin > 2 * gap
            exc |= gap >= margin
            seq = torch.cat((seq, ref.argmax(-1, keepdim=True)), dim=1)
        out.append((cov, exc))
    return int(torch.cat([c for c, _ in out]).sum()), int(torch.cat([e for _, e in out]).sum())


def test_fidelity_step_counts_equal_their_definition(model64):
    """``step_margin_covers_gap`` and ``gap_exceeds_margin`` against the oracle above; and the
    certificate's consequences across the independent free-running tokens: a prompt
    certified at every step keeps its greedy tokens (score_perturbation), the conservative
    (min margin vs max gap) certificate implies the step one, and a certified prompt has no
    gap as large as its margin."""
    from pyverify.measure.contracts import mean_operator
    from pyverify.measure.decoding import fidelity

    g = torch.Generator().manual_seed(5)
    prompts = token_set(torch.randint(0, CFG.vocab, (6, 7), generator=g))
    fid = fidelity(model64, prompts, 4, mean_operator(model64, prompts))
    covered, exceeded = _fidelity_oracle(model64, prompts, 4)
    assert (fid["prompt_G"]["step_margin_covers_gap"], fid["prompt_G"]["gap_exceeds_margin"]) == (
        covered,
        exceeded,
    )
    assert exceeded > 0  # a live metric with random weights: the check is not vacuous
    for mode in ("prompt_G", "mean_G", "kv_A"):
        f = fid[mode]
        assert f["margin_covers_gap"] <= f["step_margin_covers_gap"] <= f["tokens_identical"]
        assert f["step_margin_covers_gap"] + f["gap_exceeds_margin"] <= fid["n_prompts"]


def test_time_per_token_keeps_every_interleaved_repeat(model64):
    """Each repeat's ratios are the ratios of that repeat's times (so the best-time ratio
    lies within their range only by chance; the rule reads the repeats)."""
    from pyverify.measure.decoding import TIMING_REPEATS, time_per_token

    assert TIMING_REPEATS >= 5  # E5's premise
    toks = torch.randint(0, CFG.vocab, (2, 6), generator=torch.Generator().manual_seed(1))
    t = time_per_token(model64, toks, 2, repeats=5)
    assert t["repeats"] == 5
    assert len(t["speedup_g_over_kv_a_per_repeat"]) == len(t["speedup_per_repeat"]) == 5
    assert all(x > 0 and math.isfinite(x) for x in t["speedup_g_over_kv_a_per_repeat"])
    assert t["speedup"] == pytest.approx(t["uncached_s_per_token"] / t["g_cached_s_per_token"])
    with pytest.raises(ValueError, match="repeats"):
        time_per_token(model64, toks, 2, repeats=0)
