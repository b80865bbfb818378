module

public import Pldr.SoftmaxSimplex

/-!
# The quasi-invariance budget  (`[score_perturbation]`)

Paper (the bound-form invariance budget): trained models show `G` invariant only up to
a small error, so caching `G*` perturbs every score `q G kᵀ` a little. This file bounds
the perturbation and its effect.

* `score_perturbation`: if `|G_ab - G*_ab| ≤ δ` for all `a, b`, then
  `|q G kᵀ - q G* kᵀ| ≤ (Σ_a |q_a|)(Σ_b |k_b|) δ` (for every query row `i` of `Q` and key
  row `j` of `K`).
* `score_perturbation_argmax`: if every score of a row moves by at most `η` and the top
  entry beats every other by more than `2η`, the perturbed row has the same argmax.
* `score_perturbation_softmax`: for a monotone exponential, every masked softmax weight
  changes by a factor within `[exp(-2η), exp(2η)]`.

Abstracted: `exp` is an `ExpMap`; the softmax factor bound also needs monotonicity
(`MonoExpMap`, an extension of `ExpMap` used only here; the real exponential is
monotone; the constant `1` is a lawful degenerate model, `MonoExpMap.one`). `|·|` is
defined here by cases. There are no unproved assumptions.
-/

public noncomputable section

set_option linter.unusedSectionVars false

namespace Pldr

open Lean.Grind

universe u

local infixl:75 " ⬝ " => Mat.mul
local postfix:max "ᵀ" => Mat.transpose

variable {α : Type u} [Field α] [LE α] [LT α] [Std.LawfulOrderLT α] [Std.IsLinearOrder α]
  [OrderedRing α]

/-! ### Absolute value -/

open Classical in
/-- The absolute value `|x|` on an ordered field (the order need not be decidable, so the
case split is classical). -/
@[expose] def absv (x : α) : α := if 0 ≤ x then x else -x

theorem absv_nonneg (x : α) : 0 ≤ absv x := by unfold absv; split <;> grind

theorem le_absv (x : α) : x ≤ absv x := by unfold absv; split <;> grind

theorem neg_absv_le (x : α) : -absv x ≤ x := by unfold absv; split <;> grind

/-- `|x| ≤ η ↔ -η ≤ x ≤ η`. -/
theorem absv_le_iff {x η : α} : absv x ≤ η ↔ -η ≤ x ∧ x ≤ η := by
  unfold absv; split <;> grind

/-- The triangle inequality. -/
theorem absv_add_le (x y : α) : absv (x + y) ≤ absv x + absv y := by
  have := le_absv x; have := le_absv y; have := neg_absv_le x; have := neg_absv_le y
  exact absv_le_iff.mpr ⟨by grind, by grind⟩

/-- `|x y| = |x| |y|`. -/
theorem absv_mul (x y : α) : absv (x * y) = absv x * absv y := by
  have p1 : 0 ≤ x → 0 ≤ y → 0 ≤ x * y := fun a b => OrderedRing.mul_nonneg a b
  have p2 : 0 ≤ x → y ≤ 0 → x * y ≤ 0 := fun a b =>
    OrderedRing.mul_nonpos_of_nonneg_of_nonpos a b
  have p3 : x ≤ 0 → 0 ≤ y → x * y ≤ 0 := fun a b =>
    OrderedRing.mul_nonpos_of_nonpos_of_nonneg a b
  have p4 : x ≤ 0 → y ≤ 0 → 0 ≤ x * y := fun a b =>
    OrderedRing.mul_nonneg_of_nonpos_of_nonpos a b
  unfold absv
  repeat' split
  all_goals grind

/-- The triangle inequality for finite sums. -/
theorem absv_finSum_le {n : Nat} (f : Fin n → α) :
    absv (finSum f) ≤ finSum fun i => absv (f i) := by
  induction n with
  | zero => simp only [finSum_zero_len]; exact absv_le_iff.mpr ⟨by grind, by grind⟩
  | succ n ih =>
    rw [finSum_succ, finSum_succ (fun i => absv (f i))]
    have h1 := absv_add_le (finSum fun i : Fin n => f i.castSucc) (f (Fin.last n))
    have h2 := ih (fun i => f i.castSucc)
    grind

/-! ### The score bound -/

/-- The score difference is the bilinear form of `G - G*`. -/
theorem score_sub {S dk : Nat} (Q K : Mat α S dk) (G G' : Mat α dk dk) (i j : Fin S) :
    (Q ⬝ G ⬝ Kᵀ) i j - (Q ⬝ G' ⬝ Kᵀ) i j =
      finSum fun b => (finSum fun a => Q i a * (G a b - G' a b)) * K j b := by
  simp only [Mat.mul_apply, Mat.transpose_apply]
  rw [← finSum_sub]; congr 1; funext b
  have h : finSum (fun a => Q i a * (G a b - G' a b)) =
      finSum (fun a => Q i a * G a b) - finSum (fun a => Q i a * G' a b) := by
    rw [← finSum_sub]; congr 1; funext a; grind
  rw [h]; grind

/-- [score_perturbation] The quasi-invariance budget: if `|G_ab - G*_ab| ≤ δ` for all
`a, b`, every score moves by at most `(Σ_a |q_a|)(Σ_b |k_b|) δ`:
`|q G kᵀ - q G* kᵀ| ≤ (Σ_a |q_a|)(Σ_b |k_b|) δ` for query row `q = Q_i`, key row
`k = K_j`. -/
theorem score_perturbation {S dk : Nat} (Q K : Mat α S dk) (G G' : Mat α dk dk) (δ : α)
    (hδ : ∀ a b, absv (G a b - G' a b) ≤ δ) (i j : Fin S) :
    absv ((Q ⬝ G ⬝ Kᵀ) i j - (Q ⬝ G' ⬝ Kᵀ) i j) ≤
      (finSum fun a => absv (Q i a)) * (finSum fun b => absv (K j b)) * δ := by
  rw [score_sub]
  have inner : ∀ b, absv (finSum fun a => Q i a * (G a b - G' a b)) ≤
      (finSum fun a => absv (Q i a)) * δ := fun b => by
    refine Std.le_trans (absv_finSum_le _) ?_
    rw [finSum_mul]
    refine finSum_le_finSum fun a => ?_
    rw [absv_mul]
    exact OrderedRing.mul_le_mul_of_nonneg_left (hδ a b) (absv_nonneg _)
  refine Std.le_trans (absv_finSum_le _) ?_
  have e : (finSum fun a => absv (Q i a)) * (finSum fun b => absv (K j b)) * δ =
      finSum fun b => (finSum fun a => absv (Q i a)) * δ * absv (K j b) := by
    rw [← mul_finSum]; grind
  rw [e]
  refine finSum_le_finSum fun b => ?_
  rw [absv_mul]
  exact OrderedRing.mul_le_mul_of_nonneg_right (inner b) (absv_nonneg _)

/-- [score_perturbation] Argmax stability: if every score of a row moves by at most
`η` and the top entry `j₀` beats every other entry by more than `2η`, then `j₀` is still
the strict argmax of the perturbed row. -/
theorem score_perturbation_argmax {n : Nat} (x x' : Fin n → α) (η : α)
    (hη : ∀ j, absv (x' j - x j) ≤ η) (j0 : Fin n)
    (hmargin : ∀ j, j ≠ j0 → x j + (η + η) < x j0) :
    ∀ j, j ≠ j0 → x' j < x' j0 := by
  intro j hj
  have h1 := absv_le_iff.mp (hη j)
  have h2 := absv_le_iff.mp (hη j0)
  have h3 := hmargin j hj
  grind

/-! ### Softmax under bounded score perturbations -/

/-- A monotone abstract exponential (the real exponential is one). -/
structure MonoExpMap (α : Type u) [Field α] [LE α] [LT α] extends ExpMap α where
  /-- `a ≤ b → exp a ≤ exp b`. -/
  exp_mono : ∀ a b, a ≤ b → exp a ≤ exp b

/-- The constant `1` is a lawful (degenerate) monotone exponential. -/
@[expose] def MonoExpMap.one : MonoExpMap α where
  exp := fun _ => 1
  exp_add := fun _ _ => by grind
  exp_pos := fun _ => OrderedRing.zero_lt_one
  exp_mono := fun _ _ _ => Std.le_refl _

/-- `exp 0 = 1` for any abstract exponential. -/
theorem ExpMap.exp_zero' (E : ExpMap α) : E.exp 0 = 1 := by
  have h := E.exp_add 0 0
  have hz : (0 : α) + 0 = 0 := by grind
  rw [hz] at h
  have := E.exp_ne_zero 0
  have h2 : E.exp 0 * (E.exp 0 - 1) = 0 := by grind
  grind

/-- One direction of the factor bound: the perturbed weight is at most `exp(2η)` times
the original one. -/
theorem softmax_factor_upper {n : Nat} (E : MonoExpMap α) (mask : Fin n → Bool)
    (x x' : Fin n → α) (η : α) (hη : ∀ j, mask j = true → absv (x' j - x j) ≤ η)
    (j : Fin n) (hj : mask j = true) :
    msoftmax E.toExpMap mask x' j ≤ E.exp (η + η) * msoftmax E.toExpMap mask x j := by
  have hexp := E.exp_pos
  have hZp := smDenom_pos E.toExpMap mask x j hj
  have hZp' := smDenom_pos E.toExpMap mask x' j hj
  -- numerator: exp x'_j ≤ exp x_j · exp η
  have hnum : E.exp (x' j) ≤ E.exp (x j) * E.exp η := by
    rw [← E.exp_add]
    exact E.exp_mono _ _ (by have := absv_le_iff.mp (hη j hj); grind)
  -- denominator: Z · exp(-η) ≤ Z'
  have hden : smDenom E.toExpMap mask x * E.exp (-η) ≤ smDenom E.toExpMap mask x' := by
    show (finSum fun l => if mask l = true then E.exp (x l) else 0) * E.exp (-η) ≤
      finSum fun l => if mask l = true then E.exp (x' l) else 0
    rw [finSum_mul]
    refine finSum_le_finSum fun l => ?_
    by_cases hl : mask l = true
    · rw [if_pos hl, if_pos hl, ← E.exp_add]
      exact E.exp_mono _ _ (by have := absv_le_iff.mp (hη l hl); grind)
    · rw [if_neg hl, if_neg hl]; grind
  have he1 : E.exp (-η) * E.exp η = 1 := by
    rw [← E.exp_add]; have : -η + η = 0 := by grind
    rw [this]; exact ExpMap.exp_zero' E.toExpMap
  have he2 : E.exp (η + η) = E.exp η * E.exp η := E.exp_add η η
  have hpη := hexp η
  have hpη' := hexp (-η)
  have hpx := hexp (x j)
  generalize hZ : smDenom E.toExpMap mask x = Z at hZp hden
  generalize hZ' : smDenom E.toExpMap mask x' = Z' at hZp' hden
  -- cross-multiplied: exp x'_j · Z ≤ exp(2η) · exp x_j · Z'
  have key : E.exp (x' j) * Z ≤ E.exp (η + η) * E.exp (x j) * Z' := by
    have a1 : E.exp (x' j) * Z ≤ E.exp (x j) * E.exp η * Z :=
      OrderedRing.mul_le_mul_of_nonneg_right hnum (Std.le_of_lt hZp)
    have hc : 0 ≤ E.exp (x j) * E.exp η * E.exp η :=
      Std.le_of_lt (OrderedRing.mul_pos (OrderedRing.mul_pos hpx hpη) hpη)
    have a2 : E.exp (x j) * E.exp η * E.exp η * (Z * E.exp (-η)) ≤
        E.exp (x j) * E.exp η * E.exp η * Z' :=
      OrderedRing.mul_le_mul_of_nonneg_left hden hc
    have a3 : E.exp (x j) * E.exp η * Z =
        E.exp (x j) * E.exp η * E.exp η * (Z * E.exp (-η)) := by grind
    rw [he2]; grind
  have hZne : Z ≠ 0 := by grind
  have hZne' : Z' ≠ 0 := by grind
  have hinv : 0 ≤ Z⁻¹ * Z'⁻¹ := Std.le_of_lt
    (OrderedRing.mul_pos (inv_pos_of_pos hZp) (inv_pos_of_pos hZp'))
  have k2 := OrderedRing.mul_le_mul_of_nonneg_right key hinv
  have i1 := Field.mul_inv_cancel hZne
  have i2 := Field.mul_inv_cancel hZne'
  have l1 : E.exp (x' j) * Z * (Z⁻¹ * Z'⁻¹) = E.exp (x' j) * Z'⁻¹ := by grind
  have l2 : E.exp (η + η) * E.exp (x j) * Z' * (Z⁻¹ * Z'⁻¹) =
      E.exp (η + η) * (E.exp (x j) * Z⁻¹) := by grind
  rw [l1, l2] at k2
  simp only [msoftmax]
  rw [if_pos hj, if_pos hj, Field.div_eq_mul_inv, Field.div_eq_mul_inv]
  change E.exp (x' j) * (smDenom E.toExpMap mask x')⁻¹ ≤
    E.exp (η + η) * (E.exp (x j) * (smDenom E.toExpMap mask x)⁻¹)
  rw [hZ, hZ']
  exact k2

/-- [score_perturbation] For a monotone exponential: if every allowed score moves by at
most `η`, each masked softmax weight changes by a factor within `[exp(-2η), exp(2η)]`:
`exp(-2η) p_j ≤ p'_j ≤ exp(2η) p_j`. -/
theorem score_perturbation_softmax {n : Nat} (E : MonoExpMap α) (mask : Fin n → Bool)
    (x x' : Fin n → α) (η : α) (hη : ∀ j, mask j = true → absv (x' j - x j) ≤ η)
    (j : Fin n) (hj : mask j = true) :
    msoftmax E.toExpMap mask x' j ≤ E.exp (η + η) * msoftmax E.toExpMap mask x j ∧
      E.exp (-(η + η)) * msoftmax E.toExpMap mask x j ≤ msoftmax E.toExpMap mask x' j := by
  refine ⟨softmax_factor_upper E mask x x' η hη j hj, ?_⟩
  have hη' : ∀ j, mask j = true → absv (x j - x' j) ≤ η := fun j hj => by
    have := absv_le_iff.mp (hη j hj); exact absv_le_iff.mpr ⟨by grind, by grind⟩
  have h := softmax_factor_upper E mask x' x η hη' j hj
  have he : E.exp (-(η + η)) * E.exp (η + η) = 1 := by
    rw [← E.exp_add]; have : -(η + η) + (η + η) = 0 := by grind
    rw [this]; exact ExpMap.exp_zero' E.toExpMap
  have hp := E.exp_pos (-(η + η))
  have k := OrderedRing.mul_le_mul_of_nonneg_left h (Std.le_of_lt hp)
  have r : E.exp (-(η + η)) * (E.exp (η + η) * msoftmax E.toExpMap mask x' j) =
      msoftmax E.toExpMap mask x' j := by grind
  rw [r] at k
  exact k

end Pldr

end
