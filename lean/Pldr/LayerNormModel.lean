module

public import Pldr.LayerNorm
public import Pldr.Positivity

/-!
# A homogeneous reciprocal square root on any ordered field  (`[layernorm_invariance]`)

`layernorm_invariance_scale` assumes a homogeneous `1/√·`: `r(s² v) · s = r(v)` for all
`s, v > 0`. The constant model `RSqrtMap.one` is not homogeneous, and core Lean has no
real square root, so this file builds a homogeneous model on every ordered field of the
library's class set, noncomputably and without unique factorisation, by choosing one
representative per *square class*:

* `SqClass v w :↔ ∃ q > 0, v = q² w` is an equivalence on the whole field
  (`sqClass_refl`, `sqClass_symm`, `sqClass_trans`, `sqClassSetoid`); on the positive
  elements its classes are the cosets of the positive squares. The non-positive elements
  form classes of their own (`{0}`, and classes of negatives); there the model's values
  are positive but carry no meaning (`RSqrtMap` asks nothing of them).
* `sqRep v`: one representative of `v`'s class, chosen once per class (`Quotient` and
  `Classical.choose`), so `sqRep (s² v) = sqRep v` (`sqRep_eq`); `sqScale v > 0` with
  `v = (sqScale v)² · sqRep v`, unique for `v ≠ 0` by `pos_sq_unique`.
* `RSqrtMap.squareClass`: `r(v) = (sqScale v)⁻¹ · c(sqRep v)`, with `c = rsqrtSq`
  (`1/p` on `p²`, `1` off the squares) normalising the class of the squares.
  `RSqrtMap.squareClass_homogeneous`: homogeneous on the whole field.
  `RSqrtMap.squareClass_sq`: `r(p²) = 1/p` for `p > 0` (so `1/√·` wherever `√·` is in
  the field).
* `layernorm_invariance_scale_rat`: the whole-field `layernorm_invariance_scale`
  instantiated over `Rat` on the row `(0, 4)`: for every `s > 0`,
  `LN(s·x) = LN(x) = (−1, 1)`, a genuinely rescaled row (the constant model gives
  `(−2, 2)`), kernel-checked values.
* `RSqrtMap.squareClass_rat_values`: off the squares too, `r(18) · 3 = r(2)` (as
  `1/√18 · 3 = 1/√2`), so `r(18) ≠ r(2)`; `r(4) = 1/2`, `r(9) = 1/3`.

What the model is not: off the squares its values are not `1/√v` (which is irrational
there); the representative `sqRep v` and hence `r(2)` are chosen, not computed, and no
theorem states a value of `r` on a non-square. There are no unproved assumptions.
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

/-! ### Square classes -/

/-- The square-class relation: `v ~ w` iff `v = q² w` for some `q > 0`. -/
@[expose] def SqClass (v w : α) : Prop := ∃ q, 0 < q ∧ v = q * q * w

/-- `v ~ v` (`q = 1`). -/
theorem sqClass_refl (v : α) : SqClass v v := ⟨1, OrderedRing.zero_lt_one, by grind⟩

/-- `v = q² w → w = (1/q)² v`. -/
theorem sqClass_symm {v w : α} (h : SqClass v w) : SqClass w v := by
  obtain ⟨q, hq, he⟩ := h
  have hq0 : q ≠ 0 := by grind
  have i := Field.mul_inv_cancel hq0
  refine ⟨q⁻¹, inv_pos_of_pos hq, ?_⟩
  rw [he]
  have : w = (q * q⁻¹) * (q * q⁻¹) * w := by rw [i]; grind
  grind

/-- `u = p² v`, `v = q² w → u = (pq)² w`. -/
theorem sqClass_trans {u v w : α} (h1 : SqClass u v) (h2 : SqClass v w) : SqClass u w := by
  obtain ⟨p, hp, e1⟩ := h1
  obtain ⟨q, hq, e2⟩ := h2
  exact ⟨p * q, OrderedRing.mul_pos hp hq, by rw [e1, e2]; grind⟩

/-- The square classes as a setoid. -/
@[expose] def sqClassSetoid : Setoid α :=
  ⟨SqClass, ⟨sqClass_refl, sqClass_symm, sqClass_trans⟩⟩

/-- One element of each square class, chosen once per class (noncomputably). -/
@[expose] def sqClassOut (c : Quotient (sqClassSetoid (α := α))) : α :=
  Classical.choose (Quotient.exists_rep c)

/-- The chosen representative of the square class of `v`. -/
@[expose] def sqRep (v : α) : α := sqClassOut (Quotient.mk sqClassSetoid v)

/-- Elements of one square class have the same representative. -/
theorem sqRep_eq {v w : α} (h : SqClass v w) : sqRep v = sqRep w := by
  unfold sqRep
  rw [Quotient.sound (s := sqClassSetoid) h]

/-- `v = q² · sqRep v` for some `q > 0`. -/
theorem sqRep_spec (v : α) : ∃ q, 0 < q ∧ v = q * q * sqRep v := by
  have h : Quotient.mk sqClassSetoid (sqRep v) = Quotient.mk sqClassSetoid v :=
    Classical.choose_spec (Quotient.exists_rep (Quotient.mk sqClassSetoid v))
  have h' : SqClass (sqRep v) v := Quotient.exact h
  exact sqClass_symm h'

/-- The scale `q > 0` with `v = q² · sqRep v` (unique for `v ≠ 0`, `pos_sq_unique`). -/
@[expose] def sqScale (v : α) : α := Classical.choose (sqRep_spec v)

/-- `sqScale v > 0`. -/
theorem sqScale_pos (v : α) : 0 < sqScale v := (Classical.choose_spec (sqRep_spec v)).1

/-- `v = (sqScale v)² · sqRep v`. -/
theorem sqScale_spec (v : α) : v = sqScale v * sqScale v * sqRep v :=
  (Classical.choose_spec (sqRep_spec v)).2

/-- `1/√v` from the square class: `v = q² t` with `t` the class's representative gives
`1/q · c(t)`, with `c = rsqrtSq` (`1/p` on a representative `t = p²`, `1` otherwise). -/
@[expose] def rsqrtClass (v : α) : α := (sqScale v)⁻¹ * rsqrtSq (sqRep v)

/-- `rsqrtClass` is positive everywhere. -/
theorem rsqrtClass_pos (v : α) : 0 < rsqrtClass v :=
  OrderedRing.mul_pos (inv_pos_of_pos (sqScale_pos v)) (rsqrtSq_pos _)

/-- The model: `1/√·` chosen per square class; homogeneous on the whole field
(`RSqrtMap.squareClass_homogeneous`) and `1/p` on every square `p²`
(`RSqrtMap.squareClass_sq`). -/
@[expose] def RSqrtMap.squareClass : RSqrtMap α where
  rsqrt := rsqrtClass
  rsqrt_pos := fun v _ => rsqrtClass_pos v

/-- [layernorm_invariance] The model of Lem. 5.11 (scale): `RSqrtMap.squareClass` is
homogeneous on the whole field, `r(s² v) · s = r(v)` for all `s, v > 0`. -/
theorem RSqrtMap.squareClass_homogeneous : (RSqrtMap.squareClass (α := α)).Homogeneous := by
  intro s v hs hv
  show rsqrtClass (s * s * v) * s = rsqrtClass v
  have hrep : sqRep (s * s * v) = sqRep v := sqRep_eq ⟨s, hs, rfl⟩
  have hQ := sqScale_spec (s * s * v)
  have hq := sqScale_spec v
  rw [hrep] at hQ
  have hQp := sqScale_pos (s * s * v)
  have hqp := sqScale_pos v
  have ht : sqRep v ≠ 0 := fun h0 => by rw [h0] at hq; grind
  have it := Field.mul_inv_cancel ht
  -- `Q² t = s² q² t` with `t ≠ 0`, so `Q = s q`
  have hsq : sqScale (s * s * v) * sqScale (s * s * v) =
      (s * sqScale v) * (s * sqScale v) := by
    have e1 : sqScale (s * s * v) * sqScale (s * s * v) =
        sqScale (s * s * v) * sqScale (s * s * v) * sqRep v * (sqRep v)⁻¹ := by grind
    have e2 : (s * sqScale v) * (s * sqScale v) =
        (s * sqScale v) * (s * sqScale v) * sqRep v * (sqRep v)⁻¹ := by grind
    rw [e1, e2, ← hQ]
    grind
  have hQe := pos_sq_unique hQp (OrderedRing.mul_pos hs hqp) hsq
  unfold rsqrtClass
  rw [hrep, hQe]
  have hs0 : s ≠ 0 := by grind
  have hq0 : sqScale v ≠ 0 := by grind
  have hsq0 : s * sqScale v ≠ 0 := by
    have := OrderedRing.mul_pos hs hqp; grind
  have i1 := Field.mul_inv_cancel hs0
  have i2 := Field.mul_inv_cancel hq0
  have i3 := Field.mul_inv_cancel hsq0
  have : (s * sqScale v)⁻¹ = (s * sqScale v)⁻¹ * (s * s⁻¹) * (sqScale v * (sqScale v)⁻¹) := by
    grind
  grind

/-- `RSqrtMap.squareClass` is `1/p` on every square `p²`, `p > 0` (so `1/√·` wherever `√·`
is in the field). -/
theorem RSqrtMap.squareClass_sq {p : α} (hp : 0 < p) :
    (RSqrtMap.squareClass (α := α)).rsqrt (p * p) = p⁻¹ := by
  show rsqrtClass (p * p) = p⁻¹
  have hq := sqScale_spec (p * p)
  have hqp := sqScale_pos (p * p)
  have hq0 : sqScale (p * p) ≠ 0 := by grind
  have hp0 : p ≠ 0 := by grind
  have iq := Field.mul_inv_cancel hq0
  have ip := Field.mul_inv_cancel hp0
  -- the representative is the square of `u = p / q > 0`
  have hu : 0 < p * (sqScale (p * p))⁻¹ := OrderedRing.mul_pos hp (inv_pos_of_pos hqp)
  have ht : sqRep (p * p) = (p * (sqScale (p * p))⁻¹) * (p * (sqScale (p * p))⁻¹) := by
    have : sqRep (p * p) = sqScale (p * p) * (sqScale (p * p))⁻¹ *
        (sqScale (p * p) * (sqScale (p * p))⁻¹) * sqRep (p * p) := by rw [iq]; grind
    rw [this]
    have e : sqScale (p * p) * (sqScale (p * p))⁻¹ * (sqScale (p * p) * (sqScale (p * p))⁻¹) *
        sqRep (p * p) = (sqScale (p * p))⁻¹ * (sqScale (p * p))⁻¹ *
        (sqScale (p * p) * sqScale (p * p) * sqRep (p * p)) := by grind
    rw [e, ← hq]; grind
  unfold rsqrtClass
  rw [ht, rsqrtSq_sq hu]
  have hu0 : p * (sqScale (p * p))⁻¹ ≠ 0 := by grind
  have iu := Field.mul_inv_cancel hu0
  -- `q⁻¹ · (p q⁻¹)⁻¹ = p⁻¹`
  have e : (p * (sqScale (p * p))⁻¹)⁻¹ =
      (p * (sqScale (p * p))⁻¹)⁻¹ * (p * p⁻¹) * (sqScale (p * p) * (sqScale (p * p))⁻¹) := by
    rw [ip, iq]; grind
  rw [e]
  grind

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
`layernorm_invariance_scale` (the whole-field statement) with `r = RSqrtMap.squareClass`,
`γ = 1`, `β = 0`, `ε = 0`: the row `x = (0, 4)` has `LN(s·x) = LN(x)` for every `s > 0`,
and `LN(x) = (−1, 1)` (the constant model `RSqrtMap.one` leaves it at `(−2, 2)`),
kernel-checked. -/
theorem layernorm_invariance_scale_rat :
    (∀ s : Rat, 0 < s →
      layerNormRow RSqrtMap.squareClass 0 (fun _ => 1) (fun _ => 0) (fun i => s * lnRow04 i) =
        layerNormRow RSqrtMap.squareClass 0 (fun _ => 1) (fun _ => 0) lnRow04) ∧
      layerNormRow RSqrtMap.squareClass 0 (fun _ => 1) (fun _ => 0) lnRow04 0 = -1 ∧
      layerNormRow RSqrtMap.squareClass 0 (fun _ => 1) (fun _ => 0) lnRow04 1 = 1 ∧
      layerNormRow RSqrtMap.one 0 (fun _ => 1) (fun _ => 0) lnRow04 1 = 2 := by
  obtain ⟨hμ, hv⟩ := lnRow04_stats
  have hr : rsqrtClass (rowVar lnRow04 + 0) = 2⁻¹ := by
    have e : rowVar lnRow04 + 0 = (2 : Rat) * 2 := by rw [hv]; decide +kernel
    rw [e]
    exact RSqrtMap.squareClass_sq (by decide +kernel)
  refine ⟨fun s hs => ?_, ?_, ?_, ?_⟩
  · refine layernorm_invariance_scale RSqrtMap.squareClass RSqrtMap.squareClass_homogeneous
      _ _ _ ?_ s hs
    rw [hv]; decide +kernel
  · show 1 * ((lnRow04 0 - rowMean lnRow04) * rsqrtClass (rowVar lnRow04 + 0)) + 0 = -1
    rw [hμ, hr]; simp only [lnRow04]; decide +kernel
  · show 1 * ((lnRow04 1 - rowMean lnRow04) * rsqrtClass (rowVar lnRow04 + 0)) + 0 = 1
    rw [hμ, hr]; simp only [lnRow04]; decide +kernel
  · show 1 * ((lnRow04 1 - rowMean lnRow04) * 1) + 0 = 2
    rw [hμ]; simp only [lnRow04]; decide +kernel

/-- [layernorm_invariance] Off the squares `RSqrtMap.squareClass` over `Rat` rescales too,
as `1/√·` does (`1/√18 · 3 = 1/√2`): `r(18) · 3 = r(2)`, by homogeneity, so
`r(18) ≠ r(2)`; and `r(4) = 1/2`, `r(9) = 1/3`. -/
theorem RSqrtMap.squareClass_rat_values :
    (RSqrtMap.squareClass (α := Rat)).rsqrt 18 * 3 = (RSqrtMap.squareClass (α := Rat)).rsqrt 2 ∧
      (RSqrtMap.squareClass (α := Rat)).rsqrt 18 ≠ (RSqrtMap.squareClass (α := Rat)).rsqrt 2 ∧
      (RSqrtMap.squareClass (α := Rat)).rsqrt 4 = 1 / 2 ∧
      (RSqrtMap.squareClass (α := Rat)).rsqrt 9 = 1 / 3 := by
  have h18 : (RSqrtMap.squareClass (α := Rat)).rsqrt 18 * 3 =
      (RSqrtMap.squareClass (α := Rat)).rsqrt 2 := by
    have e : (18 : Rat) = 3 * 3 * 2 := by decide +kernel
    rw [e]
    exact RSqrtMap.squareClass_homogeneous 3 2 (by decide +kernel) (by decide +kernel)
  have h2 := (RSqrtMap.squareClass (α := Rat)).rsqrt_pos 2 (by decide +kernel)
  refine ⟨h18, fun h => ?_, ?_, ?_⟩
  · rw [h] at h18; grind
  · have e : (4 : Rat) = 2 * 2 := by decide +kernel
    rw [e, RSqrtMap.squareClass_sq (by decide +kernel)]; decide +kernel
  · have e : (9 : Rat) = 3 * 3 := by decide +kernel
    rw [e, RSqrtMap.squareClass_sq (by decide +kernel)]; decide +kernel

end Pldr

end
