module

public import Pldr.Collapse
public import Pldr.Prefix
public import Pldr.LayerNorm

/-!
# Prefix consistency fails on the paper's full metric pipeline  (`[prefix_consistency]`)

`Pldr.Prefix` shows that the PLGA head `G = Φ(Qᵀ Q)` is not prefix-consistent, with the
metric map `Φ = id`. Here `Φ` is the paper's whole pipeline, with its row LayerNorm and
its residual SwiGLU learner written out:

`D ↦ A0 = LN_rows(D) ↦ A = LN_rows(A0 + f(A0)) ↦ A_LM = iSwiGLU(W A + b) + ε ↦
A_P = A_LM ^ P ↦ G = a A_P + b_a`,

`f(x) = (silu(x W1 + b1) ⊙ (x W2 + b2)) W3 + b3`, with concrete rational parameters
(`cexPipeParams`, `dk = 2`, hidden width `2`).

* `prefix_consistency_fails_of_metric` (any ordered field): for the counterexample inputs
  of `Pldr.Prefix`, *every* metric map `Φ` with `Φ(D_full)₁₁ ≠ Φ(D_prefix)₁₁` makes the
  head non-prefix-consistent, for every scale `τ ≠ 0` and every injective exponential.
* `prefix_consistency_pipeline_rat` (`decide +kernel`, exact rationals): the full pipeline
  separates the two Grams at entry `(1, 1)` (by hand: `G₁₁ = 1 + 25/512 + 10⁻⁹` on
  the full call, `1 + 1/128 + 10⁻⁹` on the prefix; the kernel checks that they differ).

What this means, honestly: degenerate lawful models are used inside the pipeline: the
sigmoid's `exp` is the constant `1` (`σ ≡ 1/2`, so `silu x = x/2`, `iSwiGLU x = x²/2`;
over `Rat` no other `ExpMap` exists, `ExpMap.eq_one_of_rat`), the power is the identity
(`PowMap.base`, `A_P = A_LM`), and `1/√(var + ε)` is the constant `1` (`RSqrtMap.one`:
LayerNorm centres but does not rescale; the homogeneous `RSqrtMap.squareClass` has no
computed values off the squares, so it is not used here). Under these models the metric
the pipeline computes on a call differs from the one on its prefix, so a G-cache filled
from the prompt is not what recomputation gives. The output-level failure needs an
*injective* exponential in the softmax (with `exp ≡ 1` every softmax is uniform and
outputs are prefix-consistent), and `Rat` has none (`ExpMap.not_injective_rat`);
`prefix_consistency_fails_of_metric` supplies that step for any ordered field with an
injective `exp` (the reals). The two theorems are not combined into one statement with the
real exponential inside the pipeline: that would need the pipeline's values under the real
`exp`, `rpow` and `√`, which are not rational. The trained learner is checked numerically
by the Python property test of this ID. There are no unproved assumptions.
-/

public noncomputable section

set_option linter.unusedSectionVars false

namespace Pldr

open Lean.Grind

universe u

local infixl:75 " ⬝ " => Mat.mul
local postfix:max "ᵀ" => Mat.transpose

section Generic

variable {α : Type u} [Field α] [LE α] [LT α] [Std.LawfulOrderLT α] [Std.IsLinearOrder α]
  [OrderedRing α]

/-- The counterexample scores of row 1 for any metric `G`: `(τ G₁₁, 0)` on the visible
positions (full call). -/
theorem cex_scores_full_any (τ : α) (G : Mat α 2 2) :
    scores τ cexQ G cexK 1 0 = τ * G 1 1 ∧ scores τ cexQ G cexK 1 1 = 0 := by
  simp only [scores, Mat.smul_apply, Mat.mul_apply, Mat.transpose_apply, finSum_succ,
    finSum_zero_len]
  simp (config := { decide := true }) [cexQ, cexK]
  grind

/-- The counterexample scores of row 1 for any metric `G` (prefix call). -/
theorem cex_scores_prefix_any (τ : α) (G : Mat α 2 2) :
    scores τ (takeRows cexQ) G (takeRows cexK) 1 0 = τ * G 1 1 ∧
      scores τ (takeRows cexQ) G (takeRows cexK) 1 1 = 0 := by
  simp only [scores, takeRows, Mat.smul_apply, Mat.mul_apply, Mat.transpose_apply,
    finSum_succ, finSum_zero_len]
  simp (config := { decide := true }) [cexQ, cexK]
  grind

/-- [prefix_consistency] Any metric map that separates the counterexample Grams at entry
`(1, 1)` makes the PLGA head non-prefix-consistent, for every scale `τ ≠ 0` and every
injective abstract exponential. -/
theorem prefix_consistency_fails_of_metric (E : ExpMap α)
    (hinj : ∀ a b, E.exp a = E.exp b → a = b) (τ : α) (hτ : τ ≠ 0)
    (Φ : Mat α 2 2 → Mat α 2 2) (hΦ : Φ (gram cexQ) 1 1 ≠ Φ (gram (takeRows cexQ)) 1 1) :
    takeRows (plgaHeadWith (causalSoftmax E) τ Φ cexQ cexK cexV) ≠
      plgaHeadWith (causalSoftmax E) τ Φ (takeRows cexQ) (takeRows cexK) (takeRows cexV) := by
  intro h
  have h1 := congrFun (congrFun h 1) 0
  simp only [takeRows, plgaHeadWith, attend, weights, Mat.mul_apply] at h1
  have hf := cex_row_full E (scores τ cexQ (Φ (gram cexQ)) cexK 1)
  have hp := cex_row_prefix E
    (scores τ (takeRows cexQ) (Φ (gram (takeRows cexQ))) (takeRows cexK) 1)
  have e1 : Fin.castAdd 1 (1 : Fin 2) = (1 : Fin (2 + 1)) := rfl
  rw [e1, hf, hp] at h1
  obtain ⟨f0, f1⟩ := cex_scores_full_any τ (Φ (gram cexQ))
  obtain ⟨p0, p1⟩ := cex_scores_prefix_any τ (Φ (gram (takeRows cexQ)))
  rw [f0, f1, p0, p1] at h1
  generalize ha : τ * Φ (gram cexQ) 1 1 = a at h1
  generalize hb : τ * Φ (gram (takeRows cexQ)) 1 1 = b at h1
  have key := eq_of_div_add_eq_div_add (E.exp_pos a) (E.exp_pos b) (E.exp_pos 0) h1
  have hab := hinj _ _ key
  apply hΦ
  have : τ * (Φ (gram cexQ) 1 1 - Φ (gram (takeRows cexQ)) 1 1) = 0 := by grind
  have hinv := Field.mul_inv_cancel hτ
  have : τ⁻¹ * (τ * (Φ (gram cexQ) 1 1 - Φ (gram (takeRows cexQ)) 1 1)) = 0 := by
    rw [this]; grind
  grind

/-- `silu(x) = x σ(x)`. -/
@[expose] def silu (E : ExpMap α) (x : α) : α := x * sigmoid E x

/-- One SwiGLU block acting on rows of width `dk`, hidden width `dff`. -/
structure SwiGLUBlock (α : Type u) (dk dff : Nat) where
  /-- Gate weight. -/
  W1 : Mat α dk dff
  /-- Gate bias. -/
  b1 : Fin dff → α
  /-- Linear weight. -/
  W2 : Mat α dk dff
  /-- Linear bias. -/
  b2 : Fin dff → α
  /-- Output weight. -/
  W3 : Mat α dff dk
  /-- Output bias. -/
  b3 : Fin dk → α

/-- `f(x) = (silu(x W1 + b1) ⊙ (x W2 + b2)) W3 + b3` on one row. -/
@[expose] def swigluRow {dk dff : Nat} (E : ExpMap α) (B : SwiGLUBlock α dk dff)
    (x : Fin dk → α) : Fin dk → α :=
  fun j => finSum (fun h => silu E (finSum (fun i => x i * B.W1 i h) + B.b1 h) *
      (finSum (fun i => x i * B.W2 i h) + B.b2 h) * B.W3 h j) + B.b3 j

/-- One residual unit on one row: `LN(x + f_k(⋯ f_1(x)))`. -/
@[expose] def resUnitRow {dk dff : Nat} (E : ExpMap α) (r : RSqrtMap α) (eps : α)
    (blocks : List (SwiGLUBlock α dk dff)) (γ β : Fin dk → α) (x : Fin dk → α) :
    Fin dk → α :=
  let y := blocks.foldl (fun y B => swigluRow E B y) x
  layerNormRow r eps γ β (fun j => x j + y j)

end Generic

/-! ### The concrete pipeline over `Rat` -/

/-- The SwiGLU block of the counterexample (`dk = 2`, hidden width `2`). -/
@[expose] def cexBlock : SwiGLUBlock Rat 2 2 where
  W1 := Mat.of2 1 0 0 1
  b1 := fun _ => 0
  W2 := Mat.of2 1 1 0 1
  b2 := fun h => if h.val = 0 then 1 else 0
  W3 := Mat.of2 1 0 0 1
  b3 := fun _ => 0

/-- The pipeline parameters of the counterexample: row LayerNorm (`γ = 1`, `β = 0`,
`ε = 10⁻⁶`), one residual unit with `cexBlock`, `W = [[1,0],[1,1]]`, `b = 0`, `P = 1`,
`a = [[1,1],[0,1]]`, `b_a = [[0,0],[0,1]]`, metric `ε = 10⁻⁹`; LayerNorm's `1/√·` is
`RSqrtMap.one`. -/
@[expose] def cexPipeParams : PlgaParams Rat 2 where
  norm0 := fun D i => layerNormRow RSqrtMap.one (1 / 1000000) (fun _ => 1) (fun _ => 0) (D i)
  learner := fun A i => resUnitRow ExpMap.one RSqrtMap.one (1 / 1000000) [cexBlock]
    (fun _ => 1) (fun _ => 0) (A i)
  W := Mat.of2 1 0 1 1
  b := fun _ _ => 0
  P := fun _ _ => 1
  a := Mat.of2 1 1 0 1
  ba := Mat.of2 0 0 0 1
  eps := 1 / 1000000000

/-- [prefix_consistency] Exact rationals, checked by the kernel: the paper's full metric
pipeline (LayerNorm → residual SwiGLU → iSwiGLU → power → coupling) with the parameters
`cexPipeParams`, under the lawful degenerate models (`exp ≡ 1` in the sigmoid, identity
power, `1/√· ≡ 1`), gives different metrics `G₁₁` on the three counterexample queries and
on their first two: the metric of a call is not the metric of its prefix. -/
theorem prefix_consistency_pipeline_rat :
    metricOfGram ExpMap.one PowMap.base cexPipeParams (gram (cexQ (α := Rat))) 1 1 ≠
      metricOfGram ExpMap.one PowMap.base cexPipeParams (gram (takeRows (cexQ (α := Rat)))) 1 1 := by
  decide +kernel

end Pldr

end
