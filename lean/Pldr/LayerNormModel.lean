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
* What it normalises: `layerNormRow_rowVar`: with `γ = 1`, `β = 0` the output variance is
  `var · r(var + ε)²` (any model); `RSqrtMap.isPosSquare_of_mul_sq_eq_one`: whatever the
  model, `v · r(v)² = 1` forces `v` to be a square; `RSqrtMap.squareClass_mul_sq_eq_one_iff`
  and `layernorm_invariance_normalises_iff`: LayerNorm (`ε = 0`) with this model
  normalises a row (output variance `1`) iff the row's variance is a square of the field.
* `layernorm_invariance_scale_rat_nonsquare`: the row `(0, 0, 3)` of variance `2` (not a
  rational square, `two_not_isPosSquare_rat`): `LN(s·x) = LN(x)` for every `s > 0`, which
  uses homogeneity off the squares, and no model of `1/√·` over `Rat` normalises it.

What the model is not: it is a reciprocal square root only on the squares (`1/p` on
`p²`); off them its values are not `1/√v` (which is irrational there), the
representative `sqRep v` and hence `r(2)` are chosen, not computed, no theorem states a
value of `r` on a non-square, and LayerNorm with it does not normalise those rows (nor can
any model over `Rat`). It is a genuine model of the *homogeneity* that scale invariance
needs, not of `1/√·`. The `d = 2` instance `layernorm_invariance_scale_rat` only meets
square variances (`((x₀ − x₁)/2)²`). There are no unproved assumptions.
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

/-! ### What the model normalises -/

/-- With `γ = 1`, `β = 0` the LayerNorm of a row is centred (any `1/√·`, any `ε`). -/
theorem layerNormRow_rowMean {d : Nat} (hd : 0 < d) (r : RSqrtMap α) (eps : α)
    (x : Fin d → α) : rowMean (layerNormRow r eps (fun _ => 1) (fun _ => 0) x) = 0 := by
  have hn := natCast_ne_zero_of_pos (α := α) hd
  have hi := Field.mul_inv_cancel hn
  have hf : layerNormRow r eps (fun _ => 1) (fun _ => 0) x =
      fun i => r.rsqrt (rowVar x + eps) * (x i + -rowMean x) := funext fun i => by
    simp only [layerNormRow]; grind
  rw [hf]
  simp only [rowMean]
  rw [← mul_finSum, finSum_add, finSum_const]
  grind

/-- With `γ = 1`, `β = 0` the variance of the LayerNorm of a row is
`var · r(var + ε)²` (any `1/√·`): the row is normalised (variance `1`) exactly when
`var · r(var + ε)² = 1`. -/
theorem layerNormRow_rowVar {d : Nat} (hd : 0 < d) (r : RSqrtMap α) (eps : α)
    (x : Fin d → α) :
    rowVar (layerNormRow r eps (fun _ => 1) (fun _ => 0) x) =
      rowVar x * (r.rsqrt (rowVar x + eps) * r.rsqrt (rowVar x + eps)) := by
  have hμ := layerNormRow_rowMean hd r eps x
  simp only [rowVar] at hμ ⊢
  rw [hμ]
  have hf : (fun i => (layerNormRow r eps (fun _ => 1) (fun _ => 0) x i - 0) *
      (layerNormRow r eps (fun _ => 1) (fun _ => 0) x i - 0)) = fun i =>
      (r.rsqrt (rowVar x + eps) * r.rsqrt (rowVar x + eps)) *
        ((x i - rowMean x) * (x i - rowMean x)) := funext fun i => by
    simp only [layerNormRow]; grind
  rw [hf, ← mul_finSum]
  simp only [rowVar]
  grind

/-- [layernorm_invariance] Whatever the model of `1/√·`: if `v · r(v)² = 1` for `v > 0`,
then `v` is the square of `1/r(v)`. So no `RSqrtMap` normalises (`ε = 0`) a row whose
variance is not a square of the field. -/
theorem RSqrtMap.isPosSquare_of_mul_sq_eq_one (r : RSqrtMap α) {v : α} (hv : 0 < v)
    (h : v * (r.rsqrt v * r.rsqrt v) = 1) : IsPosSquare v := by
  have hp := r.rsqrt_pos v hv
  have h0 : r.rsqrt v ≠ 0 := by grind
  have hi := Field.mul_inv_cancel h0
  refine ⟨(r.rsqrt v)⁻¹, inv_pos_of_pos hp, ?_⟩
  have : v = v * (r.rsqrt v * r.rsqrt v) * ((r.rsqrt v)⁻¹ * (r.rsqrt v)⁻¹) := by grind
  rw [h] at this; grind

/-- [layernorm_invariance] `RSqrtMap.squareClass` normalises exactly the squares: for
`v > 0`, `v · r(v)² = 1` iff `v = p²` for some `p > 0`. Off the squares
`v · r(v)² = sqRep v · c(sqRep v)²` is the chosen representative's value, `≠ 1`. -/
theorem RSqrtMap.squareClass_mul_sq_eq_one_iff {v : α} (hv : 0 < v) :
    v * ((RSqrtMap.squareClass (α := α)).rsqrt v * (RSqrtMap.squareClass (α := α)).rsqrt v) =
        1 ↔ IsPosSquare v := by
  refine ⟨RSqrtMap.isPosSquare_of_mul_sq_eq_one _ hv, fun ⟨p, hp, he⟩ => ?_⟩
  subst he
  rw [RSqrtMap.squareClass_sq hp]
  have h0 : p ≠ 0 := by grind
  have hi := Field.mul_inv_cancel h0
  grind

/-- [layernorm_invariance] Exactly what LayerNorm with `RSqrtMap.squareClass` normalises
(`γ = 1`, `β = 0`, `ε = 0`, Lem. 5.11's setting): a row of positive variance is mapped to
a row of variance `1` iff its variance is a square of the field. Over `Rat` the rows of
`layernorm_invariance_scale_rat` (`d = 2`, variance `((x₀ − x₁)/2)²`, always a square)
are normalised; `lnRow003` (variance `2`) is not. -/
theorem layernorm_invariance_normalises_iff {d : Nat} (hd : 0 < d) (x : Fin d → α)
    (hvar : 0 < rowVar x) :
    rowVar (layerNormRow RSqrtMap.squareClass 0 (fun _ => 1) (fun _ => 0) x) = 1 ↔
      IsPosSquare (rowVar x) := by
  rw [layerNormRow_rowVar hd]
  have e : rowVar x + 0 = rowVar x := by grind
  rw [e]
  exact RSqrtMap.squareClass_mul_sq_eq_one_iff hvar

/-- `2` is not the square of a rational (its numerator would be a square). -/
theorem two_not_isPosSquare_rat : ¬ IsPosSquare (2 : Rat) := by
  rintro ⟨q, _, he⟩
  have hn : ((2 : Rat)).num = q.num ^ 2 := by
    rw [he, ← Rat.num_pow]; congr 1; grind
  have h2 : ((2 : Rat)).num = 2 := by decide
  rw [h2] at hn
  have ha : (2 : Nat) = q.num.natAbs ^ 2 := by
    rw [← Int.natAbs_pow, ← hn]; rfl
  rw [Nat.pow_two] at ha
  rcases Nat.lt_or_ge q.num.natAbs 2 with h | h
  · rcases (by omega : q.num.natAbs = 0 ∨ q.num.natAbs = 1) with h0 | h0 <;> rw [h0] at ha <;>
      omega
  · have := Nat.mul_le_mul h h; omega

/-- The row `(0, 0, 3)`: mean `1`, variance `2`. -/
@[expose] def lnRow003 : Fin 3 → Rat := fun i => if i.val = 2 then 3 else 0

/-- The variance of `(0, 0, 3)` is `2`, not a rational square. -/
theorem lnRow003_rowVar : rowVar lnRow003 = 2 := by
  have hμ : rowMean lnRow003 = 1 := by
    simp only [rowMean, lnRow003, finSum_succ, finSum_zero_len]; decide +kernel
  simp only [rowVar, hμ]
  simp only [lnRow003, finSum_succ, finSum_zero_len]
  decide +kernel

/-- [layernorm_invariance] Lem. 5.11 (scale) on a row whose variance is not a square: the
whole-field `layernorm_invariance_scale` with `RSqrtMap.squareClass` gives
`LN(s·x) = LN(x)` for every `s > 0` on `x = (0, 0, 3)` (variance `2`, so the homogeneity
off the squares is what is used), while no model of `1/√·` over `Rat` normalises that
row: `var(LN x) ≠ 1` for every `r : RSqrtMap Rat`. -/
theorem layernorm_invariance_scale_rat_nonsquare :
    (∀ s : Rat, 0 < s →
      layerNormRow RSqrtMap.squareClass 0 (fun _ => 1) (fun _ => 0) (fun i => s * lnRow003 i) =
        layerNormRow RSqrtMap.squareClass 0 (fun _ => 1) (fun _ => 0) lnRow003) ∧
      rowVar lnRow003 = 2 ∧ ¬ IsPosSquare (2 : Rat) ∧
      ∀ r : RSqrtMap Rat, rowVar (layerNormRow r 0 (fun _ => 1) (fun _ => 0) lnRow003) ≠ 1 := by
  refine ⟨fun s hs => ?_, lnRow003_rowVar, two_not_isPosSquare_rat, fun r h => ?_⟩
  · refine layernorm_invariance_scale RSqrtMap.squareClass RSqrtMap.squareClass_homogeneous
      _ _ _ ?_ s hs
    rw [lnRow003_rowVar]; decide +kernel
  · rw [layerNormRow_rowVar (by decide), lnRow003_rowVar] at h
    have e : (2 : Rat) + 0 = 2 := by decide +kernel
    rw [e] at h
    exact two_not_isPosSquare_rat (r.isPosSquare_of_mul_sq_eq_one (by decide +kernel) h)

end Pldr

end
