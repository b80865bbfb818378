module

public import Pldr.RopeTwirl
public import Pldr.Positivity

/-!
# The decay of the rotary twirl  (`[rope_twirl]`)

Paper (Lem. 5.9): the non-commuting frequency components of `M` are damped by the
geometric average `(1/S) Σ_{n<S} wⁿ` of a unit complex number `w = (c, s) ≠ 1`, which is
`O(1/S)`. From `rope_twirl_geom` (`(1 − w) Σ wⁿ = 1 − w^S`) by ordered-field algebra:

* `rope_twirl_decay_eq`: `(1 − c) · |Σ_{n<S} wⁿ|² = 1 − Re(w^S)` exactly (the analytic
  `|Σ e^{iωn}|² = sin²(Sω/2)/sin²(ω/2)` with `1 − cos ω = 2 sin²(ω/2)`);
* `rope_twirl_decay`: `|Σ_{n<S} wⁿ|² · (1 − c) ≤ 2`, and so `|Σ wⁿ|² ≤ 2/(1 − c)` for
  `c ≠ 1` (`rope_twirl_decay_bound`): the sum stays bounded, independently of `S`;
* `rope_twirl_decay_avg`: the average `(1/S) Σ_{n<S} wⁿ` has
  `|(1/S) Σ wⁿ|² · (1 − c) ≤ 2/S²`, the `O(1/S)` decay of the twirl's damped components.

Abstracted: angles are unit pairs `c² + s² = 1` over any ordered field (with `Real.cos`,
`Real.sin` this is the real statement; `(3/5, 4/5)` is a rational model). There are no
unproved assumptions.
-/

public noncomputable section

set_option linter.unusedSectionVars false

namespace Pldr

open Lean.Grind

universe u

variable {α : Type u} [Field α] [LE α] [LT α] [Std.LawfulOrderLT α] [Std.IsLinearOrder α]
  [OrderedRing α]

attribute [local instance] Lean.Grind.Semiring.natCast

/-- The squared modulus `|Σ_{n<S} wⁿ|²` of the geometric sum. -/
@[expose] def geomNormSq (w : UnitPair α) (S : Nat) : α :=
  geomRe w S * geomRe w S + geomIm w S * geomIm w S

/-- A unit pair has `c ≥ −1`. -/
theorem UnitPair.neg_one_le_c (u : UnitPair α) : -1 ≤ u.c := by
  have h := mul_self_nonneg' (1 + u.c)
  have h2 := mul_self_nonneg' u.s
  have hn := u.norm
  grind

/-- A unit pair has `c ≤ 1`. -/
theorem UnitPair.c_le_one (u : UnitPair α) : u.c ≤ 1 := by
  have h := mul_self_nonneg' (1 - u.c)
  have h2 := mul_self_nonneg' u.s
  have hn := u.norm
  grind

/-- [rope_twirl] Exact modulus of the geometric sum: `(1 − c) · |Σ_{n<S} wⁿ|² =
1 − Re(w^S)` for a unit `w = (c, s)`. -/
theorem rope_twirl_decay_eq (w : UnitPair α) (S : Nat) :
    (1 - w.c) * geomNormSq w S = 1 - (w.pow S).c := by
  obtain ⟨h1, h2⟩ := rope_twirl_geom w S
  have hw := w.norm
  have hv := (w.pow S).norm
  simp only [geomNormSq]
  generalize geomRe w S = X at h1 h2 ⊢
  generalize geomIm w S = Y at h1 h2 ⊢
  generalize (w.pow S).c = C at h1 h2 hv ⊢
  generalize (w.pow S).s = T at h1 h2 hv ⊢
  generalize w.c = c at h1 h2 hw ⊢
  generalize w.s = s at h1 h2 hw ⊢
  have e1 : ((1 - c) * X + s * Y) * ((1 - c) * X + s * Y) = (1 - C) * (1 - C) := by rw [h1]
  have e2 : ((1 - c) * Y - s * X) * ((1 - c) * Y - s * X) = (-T) * (-T) := by rw [h2]
  have key : ((1 - c) * X + s * Y) * ((1 - c) * X + s * Y) +
      ((1 - c) * Y - s * X) * ((1 - c) * Y - s * X) =
      ((1 - c) * (1 - c) + s * s) * (X * X + Y * Y) := by grind
  have hcs : (1 - c) * (1 - c) + s * s = 2 * (1 - c) := by grind
  have hCT : (1 - C) * (1 - C) + (-T) * (-T) = 2 * (1 - C) := by grind
  rw [e1, e2, hcs, hCT] at key
  have h2pos : (0 : α) < 2 := by
    have := OrderedRing.zero_lt_one (R := α); grind
  have hz : 2 * ((1 - c) * (X * X + Y * Y) - (1 - C)) = 0 := by grind
  have h2ne : (2 : α) ≠ 0 := by grind
  have hz' : (1 - c) * (X * X + Y * Y) - (1 - C) = 0 := by
    have i := Field.mul_inv_cancel h2ne
    have : (2 : α)⁻¹ * (2 * ((1 - c) * (X * X + Y * Y) - (1 - C))) =
        (1 - c) * (X * X + Y * Y) - (1 - C) := by grind
    rw [hz] at this; grind
  grind

/-- [rope_twirl] The decay bound: `|Σ_{n<S} wⁿ|² · (1 − c) ≤ 2` for every unit
`w = (c, s)` and every `S`. -/
theorem rope_twirl_decay (w : UnitPair α) (S : Nat) : geomNormSq w S * (1 - w.c) ≤ 2 := by
  have h := rope_twirl_decay_eq w S
  have := UnitPair.neg_one_le_c (w.pow S)
  grind

/-- [rope_twirl] For `c ≠ 1` the geometric sum is bounded independently of `S`:
`|Σ_{n<S} wⁿ|² ≤ 2 / (1 − c)`. -/
theorem rope_twirl_decay_bound (w : UnitPair α) (hc : w.c ≠ 1) (S : Nat) :
    geomNormSq w S ≤ 2 * (1 - w.c)⁻¹ := by
  have h := rope_twirl_decay w S
  have hle := UnitPair.c_le_one w
  have hpos : 0 < 1 - w.c := by grind
  have hi := inv_pos_of_pos hpos
  have k := OrderedRing.mul_le_mul_of_nonneg_right h (Std.le_of_lt hi)
  have hne : 1 - w.c ≠ 0 := by grind
  have i := Field.mul_inv_cancel hne
  have : geomNormSq w S * (1 - w.c) * (1 - w.c)⁻¹ = geomNormSq w S := by grind
  grind

/-- [rope_twirl] The averaged form, the `O(1/S)` decay of the twirl's damped components:
with `m = 1/S`, `|m Σ_{n<S} wⁿ|² · (1 − c) ≤ 2 m²` (for `S = 0`, `m = 0⁻¹ = 0`). -/
theorem rope_twirl_decay_avg (w : UnitPair α) (S : Nat) :
    ((geomRe w S * (S : α)⁻¹) * (geomRe w S * (S : α)⁻¹) +
        (geomIm w S * (S : α)⁻¹) * (geomIm w S * (S : α)⁻¹)) * (1 - w.c) ≤
      2 * ((S : α)⁻¹ * (S : α)⁻¹) := by
  have h := rope_twirl_decay w S
  have hm := mul_self_nonneg' ((S : α)⁻¹)
  have k := OrderedRing.mul_le_mul_of_nonneg_right h hm
  have e : ((geomRe w S * (S : α)⁻¹) * (geomRe w S * (S : α)⁻¹) +
        (geomIm w S * (S : α)⁻¹) * (geomIm w S * (S : α)⁻¹)) * (1 - w.c) =
      geomNormSq w S * (1 - w.c) * ((S : α)⁻¹ * (S : α)⁻¹) := by
    simp only [geomNormSq]; grind
  rw [e]; exact k

end Pldr

end
