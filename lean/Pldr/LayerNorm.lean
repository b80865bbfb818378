module

public import Pldr.Algebra.Sum

/-!
# LayerNorm invariances  (`[layernorm_invariance]`)

Paper (Lem. 5.11) and reference: the row LayerNorm
`LN(x)_i = γ_i (x_i - μ(x)) / √(var(x) + ε) + β_i` (mean `μ`, biased variance `var` over
the `d` entries of the row) is unchanged when one constant is added to the row, and,
with `ε = 0`, when the row is multiplied by a positive scalar (on rows of positive
variance).

Abstraction: core Lean has no square root. `1/√·` is an `RSqrtMap`, an arbitrary
positive function on positive arguments; shift invariance holds for *any* such map.
Scale invariance needs its homogeneity `r(s² v) · s = r(v)` (`s, v > 0`), which
`v ↦ 1/√v` has; it is a hypothesis of `layernorm_invariance_scale`, not a field of the
interface. Lawful models in the library: `RSqrtMap.one` (the constant `1`, LayerNorm
without rescaling; not homogeneous) and `RSqrtMap.squareClass` (`Pldr.LayerNormModel`:
homogeneous on every ordered field, `1/p` on the squares `p²`; it instantiates
`layernorm_invariance_scale` over `Rat` in `layernorm_invariance_scale_rat`). Under
Mathlib, `v ↦ (Real.sqrt v)⁻¹` instantiates the interface and satisfies the homogeneity
law. There are no unproved assumptions.
-/

public noncomputable section

set_option linter.unusedSectionVars false

namespace Pldr

open Lean.Grind

universe u

variable {α : Type u} [Field α] [LE α] [LT α] [Std.LawfulOrderLT α] [Std.IsLinearOrder α]
  [OrderedRing α]

attribute [local instance] Lean.Grind.Semiring.natCast

/-- An abstract reciprocal square root `v ↦ 1/√v`: positive on positive arguments. -/
structure RSqrtMap (α : Type u) [Field α] [LT α] where
  /-- The function `v ↦ 1/√v`. -/
  rsqrt : α → α
  /-- `v > 0 → 1/√v > 0`. -/
  rsqrt_pos : ∀ v, 0 < v → 0 < rsqrt v

/-- Homogeneity of degree `-1/2`: `r(s² v) · s = r(v)` for `s, v > 0` (true of `1/√·`). -/
@[expose] def RSqrtMap.Homogeneous (r : RSqrtMap α) : Prop :=
  ∀ s v : α, 0 < s → 0 < v → r.rsqrt (s * s * v) * s = r.rsqrt v

/-- The constant `1`: a lawful (degenerate) model of `RSqrtMap` on any ordered field. -/
@[expose] def RSqrtMap.one : RSqrtMap α where
  rsqrt := fun _ => 1
  rsqrt_pos := fun _ _ => OrderedRing.zero_lt_one

/-- The mean of a row: `μ(x) = (Σ_i x_i) / d`. -/
@[expose] def rowMean {d : Nat} (x : Fin d → α) : α := finSum x * (d : α)⁻¹

/-- The (biased) variance of a row: `var(x) = (Σ_i (x_i - μ)²) / d`. -/
@[expose] def rowVar {d : Nat} (x : Fin d → α) : α :=
  finSum (fun i => (x i - rowMean x) * (x i - rowMean x)) * (d : α)⁻¹

/-- LayerNorm of one row: `γ_i (x_i - μ) r(var + ε) + β_i`, with `r = 1/√·`. -/
@[expose] def layerNormRow {d : Nat} (r : RSqrtMap α) (eps : α) (γ β : Fin d → α)
    (x : Fin d → α) : Fin d → α :=
  fun i => γ i * ((x i - rowMean x) * r.rsqrt (rowVar x + eps)) + β i

/-- In an ordered field a positive natural number is a nonzero element. -/
theorem natCast_ne_zero_of_pos {d : Nat} (hd : 0 < d) : (d : α) ≠ 0 := by
  obtain ⟨d', rfl⟩ : ∃ d', d = d' + 1 := ⟨d - 1, by omega⟩
  have h0 := OrderedRing.natCast_nonneg (R := α) (a := d')
  have hc : ((d' + 1 : Nat) : α) = (d' : α) + 1 := by grind
  have h1 := OrderedRing.zero_lt_one (R := α)
  rw [hc]; grind

/-- Shifting a row shifts its mean. -/
theorem rowMean_add_const {d : Nat} (hd : 0 < d) (x : Fin d → α) (c : α) :
    rowMean (fun i => x i + c) = rowMean x + c := by
  have hn := natCast_ne_zero_of_pos (α := α) hd
  simp only [rowMean]
  rw [finSum_add, finSum_const]
  have := Field.mul_inv_cancel hn
  grind

/-- [layernorm_invariance] Lem. 5.11 (shift): LayerNorm of a row (any `ε`, any `γ, β`,
any reciprocal square root) is unchanged by adding one constant to the row. -/
theorem layernorm_invariance {d : Nat} (hd : 0 < d) (r : RSqrtMap α) (eps : α)
    (γ β x : Fin d → α) (c : α) :
    layerNormRow r eps γ β (fun i => x i + c) = layerNormRow r eps γ β x := by
  have hμ := rowMean_add_const hd x c
  have hv : rowVar (fun i => x i + c) = rowVar x := by
    simp only [rowVar]
    rw [hμ]
    congr 1; congr 1; funext i; grind
  funext i
  simp only [layerNormRow]
  rw [hv, hμ]; grind

/-- [layernorm_invariance] Lem. 5.11 (scale, `ε = 0`): for a homogeneous reciprocal square
root (as `1/√·` is), LayerNorm of a row of positive variance is unchanged by multiplying
the row by any `s > 0`. -/
theorem layernorm_invariance_scale {d : Nat} (r : RSqrtMap α) (hr : r.Homogeneous)
    (γ β x : Fin d → α) (hvar : 0 < rowVar x) (s : α) (hs : 0 < s) :
    layerNormRow r 0 γ β (fun i => s * x i) = layerNormRow r 0 γ β x := by
  have hμ : rowMean (fun i => s * x i) = s * rowMean x := by
    simp only [rowMean]; rw [← mul_finSum]; grind
  have hv : rowVar (fun i => s * x i) = s * s * rowVar x := by
    simp only [rowVar]; rw [hμ]
    have : finSum (fun i => (s * x i - s * rowMean x) * (s * x i - s * rowMean x)) =
        s * s * finSum (fun i => (x i - rowMean x) * (x i - rowMean x)) := by
      rw [mul_finSum]; congr 1; funext i; grind
    rw [this]; grind
  have hlaw := hr s (rowVar x) hs hvar
  funext i
  simp only [layerNormRow]
  have e1 : s * s * rowVar x + 0 = s * s * rowVar x := by grind
  have e2 : rowVar x + 0 = rowVar x := by grind
  rw [hv, hμ, e1, e2, ← hlaw]; grind

end Pldr

end
