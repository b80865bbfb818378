module

public import Pldr.LayerNorm
public import Pldr.Positivity

/-!
# A reciprocal square root that rescales, homogeneous on the squares  (`[layernorm_invariance]`)

`layernorm_invariance_scale` assumes a homogeneous `1/√·` (`r(s² v) · s = r(v)`), and the
library's only `RSqrtMap` model, the constant `1`, is not homogeneous, so the statement
had no instance. Its proof uses homogeneity at one point only, the row's variance, and
a positive rational square `v = q²` (`q > 0`) has the rational reciprocal root `1/q`.
So:

* `RSqrtMap.onSquares`: `r(q²) = 1/q` on the squares of positive elements, `1` elsewhere
  (any ordered field; over `Rat` this is `1/√·` wherever `√·` is rational).
* `RSqrtMap.onSquares_homogeneousOn`: it is homogeneous on the squares
  (`RSqrtMap.HomogeneousOn`, a set closed under `v ↦ s² v`).
* `layernorm_invariance_scale_on`: the scale invariance from homogeneity on any set that
  holds the row's variance (`layernorm_invariance_scale` is the case of the whole field).
* `layernorm_invariance_scale_rat`: instantiated over `Rat` on the row `(0, 4)`
  (variance `4 = 2²`): for every `s > 0`, `LN(s·x) = LN(x) = (−1, 1)`, a genuinely
  rescaled row (the constant model gives `(−2, 2)`), kernel-checked values.

Not built: a model homogeneous on all of `Rat` (it exists: `1/q` on the square class
`t·q²`, `t` square-free, but needs unique factorisation). There are no unproved
assumptions.
-/

public noncomputable section

set_option linter.unusedSectionVars false

namespace Pldr

open Lean.Grind

universe u

variable {α : Type u} [Field α] [LE α] [LT α] [Std.LawfulOrderLT α] [Std.IsLinearOrder α]
  [OrderedRing α]

attribute [local instance] Lean.Grind.Semiring.natCast

/-- `v` is the square of a positive element. -/
@[expose] def IsPosSquare (v : α) : Prop := ∃ q, 0 < q ∧ v = q * q

/-- Homogeneity of degree `-1/2` on a set `P`: `r(s² v) · s = r(v)` for `s > 0` and
positive `v` in `P`. -/
@[expose] def RSqrtMap.HomogeneousOn (r : RSqrtMap α) (P : α → Prop) : Prop :=
  ∀ s v : α, 0 < s → 0 < v → P v → r.rsqrt (s * s * v) * s = r.rsqrt v

/-- Positive square roots are unique. -/
theorem pos_sq_unique {p q : α} (hp : 0 < p) (hq : 0 < q) (h : p * p = q * q) : p = q := by
  have hpq : p + q ≠ 0 := by grind
  have i := Field.mul_inv_cancel hpq
  have hz : (p - q) * (p + q) = 0 := by grind
  have : p - q = (p - q) * (p + q) * (p + q)⁻¹ := by grind
  rw [hz] at this
  grind

open Classical in
/-- `1/√v` on the squares of positive elements (`1/q` for `v = q²`, `q > 0`), `1`
elsewhere. -/
@[expose] def rsqrtSq (v : α) : α := if h : IsPosSquare v then (Classical.choose h)⁻¹ else 1

/-- `r(q²) = 1/q` for `q > 0`. -/
theorem rsqrtSq_sq {q : α} (hq : 0 < q) : rsqrtSq (q * q) = q⁻¹ := by
  have h : IsPosSquare (q * q) := ⟨q, hq, rfl⟩
  unfold rsqrtSq
  rw [dif_pos h]
  obtain ⟨hc, he⟩ := Classical.choose_spec h
  rw [pos_sq_unique hc hq he.symm]

/-- `rsqrtSq` is positive everywhere. -/
theorem rsqrtSq_pos (v : α) : 0 < rsqrtSq v := by
  unfold rsqrtSq
  split
  · next h => exact inv_pos_of_pos (Classical.choose_spec h).1
  · exact OrderedRing.zero_lt_one

/-- The model: `1/√·` on the squares of positive elements, `1` elsewhere. -/
@[expose] def RSqrtMap.onSquares : RSqrtMap α where
  rsqrt := rsqrtSq
  rsqrt_pos := fun v _ => rsqrtSq_pos v

/-- `RSqrtMap.onSquares` is homogeneous on the squares of positive elements. -/
theorem RSqrtMap.onSquares_homogeneousOn :
    (RSqrtMap.onSquares (α := α)).HomogeneousOn IsPosSquare := by
  intro s v hs _ ⟨q, hq, hvq⟩
  subst hvq
  show rsqrtSq (s * s * (q * q)) * s = rsqrtSq (q * q)
  have e : s * s * (q * q) = (s * q) * (s * q) := by grind
  rw [e, rsqrtSq_sq (OrderedRing.mul_pos hs hq), rsqrtSq_sq hq]
  have hs0 : s ≠ 0 := by grind
  have hq0 : q ≠ 0 := by grind
  have hsq : s * q ≠ 0 := by
    have := OrderedRing.mul_pos hs hq; grind
  have i1 := Field.mul_inv_cancel hs0
  have i2 := Field.mul_inv_cancel hq0
  have i3 := Field.mul_inv_cancel hsq
  have : (s * q)⁻¹ = (s * q)⁻¹ * (s * s⁻¹) * (q * q⁻¹) := by grind
  grind

/-- [layernorm_invariance] Lem. 5.11 (scale, `ε = 0`) from homogeneity on a set that
holds the row's variance: LayerNorm of a row of positive variance is unchanged by
multiplying the row by any `s > 0`. -/
theorem layernorm_invariance_scale_on {d : Nat} (r : RSqrtMap α) (P : α → Prop)
    (hr : r.HomogeneousOn P) (γ β x : Fin d → α) (hvar : 0 < rowVar x) (hP : P (rowVar x))
    (s : α) (hs : 0 < s) :
    layerNormRow r 0 γ β (fun i => s * x i) = layerNormRow r 0 γ β x := by
  have hμ : rowMean (fun i => s * x i) = s * rowMean x := by
    simp only [rowMean]; rw [← mul_finSum]; grind
  have hv : rowVar (fun i => s * x i) = s * s * rowVar x := by
    simp only [rowVar]; rw [hμ]
    have : finSum (fun i => (s * x i - s * rowMean x) * (s * x i - s * rowMean x)) =
        s * s * finSum (fun i => (x i - rowMean x) * (x i - rowMean x)) := by
      rw [mul_finSum]; congr 1; funext i; grind
    rw [this]; grind
  have hlaw := hr s (rowVar x) hs hvar hP
  funext i
  simp only [layerNormRow]
  have e1 : s * s * rowVar x + 0 = s * s * rowVar x := by grind
  have e2 : rowVar x + 0 = rowVar x := by grind
  rw [hv, hμ, e1, e2, ← hlaw]; grind

/-- The row `(0, 4)` of the instance below. -/
@[expose] def lnRow04 : Fin 2 → Rat := fun i => if i.val = 0 then 0 else 4

/-- Mean `2` and variance `4 = 2²` of the row `(0, 4)`. -/
theorem lnRow04_stats : rowMean lnRow04 = 2 ∧ rowVar lnRow04 = 2 * 2 := by
  have hμ : rowMean lnRow04 = 2 := by
    simp only [rowMean, lnRow04, finSum_succ, finSum_zero_len]; decide +kernel
  refine ⟨hμ, ?_⟩
  simp only [rowVar, hμ]
  simp only [lnRow04, finSum_succ, finSum_zero_len]
  decide +kernel

/-- [layernorm_invariance] Lem. 5.11 (scale) on a genuinely rescaling model over `Rat`:
with `r = RSqrtMap.onSquares`, `γ = 1`, `β = 0`, `ε = 0`, the row `x = (0, 4)` has
`LN(s·x) = LN(x)` for every `s > 0`, and `LN(x) = (−1, 1)` (the constant model
`RSqrtMap.one` leaves it at `(−2, 2)`), kernel-checked. -/
theorem layernorm_invariance_scale_rat :
    (∀ s : Rat, 0 < s →
      layerNormRow RSqrtMap.onSquares 0 (fun _ => 1) (fun _ => 0) (fun i => s * lnRow04 i) =
        layerNormRow RSqrtMap.onSquares 0 (fun _ => 1) (fun _ => 0) lnRow04) ∧
      layerNormRow RSqrtMap.onSquares 0 (fun _ => 1) (fun _ => 0) lnRow04 0 = -1 ∧
      layerNormRow RSqrtMap.onSquares 0 (fun _ => 1) (fun _ => 0) lnRow04 1 = 1 ∧
      layerNormRow RSqrtMap.one 0 (fun _ => 1) (fun _ => 0) lnRow04 1 = 2 := by
  obtain ⟨hμ, hv⟩ := lnRow04_stats
  have hr : rsqrtSq (rowVar lnRow04 + 0) = 2⁻¹ := by
    have e : rowVar lnRow04 + 0 = (2 : Rat) * 2 := by rw [hv]; decide +kernel
    rw [e, rsqrtSq_sq (by decide +kernel)]
  refine ⟨fun s hs => ?_, ?_, ?_, ?_⟩
  · refine layernorm_invariance_scale_on RSqrtMap.onSquares IsPosSquare
      RSqrtMap.onSquares_homogeneousOn _ _ _ ?_ ⟨2, by decide +kernel, hv⟩ s hs
    rw [hv]; decide +kernel
  · show 1 * ((lnRow04 0 - rowMean lnRow04) * rsqrtSq (rowVar lnRow04 + 0)) + 0 = -1
    rw [hμ, hr]; simp only [lnRow04]; decide +kernel
  · show 1 * ((lnRow04 1 - rowMean lnRow04) * rsqrtSq (rowVar lnRow04 + 0)) + 0 = 1
    rw [hμ, hr]; simp only [lnRow04]; decide +kernel
  · show 1 * ((lnRow04 1 - rowMean lnRow04) * 1) + 0 = 2
    rw [hμ]; simp only [lnRow04]; decide +kernel

end Pldr

end
