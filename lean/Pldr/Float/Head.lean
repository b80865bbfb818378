module

public import Pldr.Float.Softmax

/-!
# Floating-point PLGA head: scores, outputs, pipeline stages
(`[fp_head_scores]`, `[fp_head_output]`, `[fp_mixed_precision]`, `[fp_elementwise]`)

* `[fp_head_scores]`: the scores `τ Q G Kᵀ` computed from a metric `Ĝ` that is itself
  off by at most `δG` entrywise (the metric pipeline's error, an input bound): the query
  product `X ≈ Q Ĝ` within `e₁ (|Q| |Ĝ|) + h₁`, the score product `≈ X Kᵀ` within
  `e₂ (|X| |K|ᵀ) + h₂` (both from `fp_mixed_precision`; `h` the underflow parts), the
  scale `τ̂` within `u_τ |τ|` and the scaled score rounded at `u_s` (underflow `η_s`); with
  `C = (1 + u_s)(1 + u_τ)`: `|Ê − τ Q G Kᵀ| ≤ |τ| ((C (1 + e₁)(1 + e₂) − 1)(|Q| |Ĝ| |K|ᵀ)
  + C ((1 + e₂) h₁ |K|ᵀ + h₂) + |Q| δG |K|ᵀ) + η_s`. `Q` has `S` rows and `K` has `T`
  (decoding: `T ≥ S`); for `T = S` the exact side is `scores τ Q G K` of `Pldr.Attention`.
* `[fp_head_output]` `fp_head_output_normalized`, the normalise-first order (the float64
  reference): weights within `ρ p_j + η_p` of the softmax (`fp_softmax`), the products and
  a sum in any order, the result rounded:
  `((1 + w)(1 + γ_{n−1})(1 + e_p)(1 + ρ) − 1) μ + (1 + w)(1 + γ_{n−1}) H + η_y`.
  `fp_head_output_rescale`, the online-softmax step of blocked kernels: an accumulator
  of `Σ exp(x_j − m₁) v_j` with relative bound `a₁`, multiplied by a computed
  `exp(m₁ − m₂)` within `c_α` and rounded (`r`), accumulates `Σ exp(x_j − m₂) v_j` with
  bound `(1 + r) c_α (1 + a₁) − 1` (no underflow term: for rescaling factors in the normal
  range); blocked kernels add the next block's terms to it as one more leaf of a sum
  (`fp_summation_perturbed`). The Python side uses it nowhere yet: torch's CPU flash
  kernel takes 512 keys per block, and `pyverify.fp.models` refuses more keys.
* `[fp_mixed_precision]` with a perturbed input (`fp_mixed_precision_propagated`): a
  pipeline stage `Σ_j a_j x_j` evaluated on a computed input `x̂` (off by `d_j`) within `B`
  of `Σ_j a_j x̂_j` is off by `B + Σ_j |a_j| d_j`.
* `[fp_elementwise]`: an entrywise stage `f` (iSwiGLU, the power law) evaluated by a
  routine of relative error `r` and absolute error `η_f` on an input off by `d`, with
  `|f x̂ − f x| ≤ L |x̂ − x|` on the segment (a Lipschitz bound, an analytic fact of the
  real function supplied as a hypothesis): `|f̂(x̂) − f(x)| ≤ (1 + r) L d + r |f x| + η_f`.

The floating-point model is that of `Pldr.Float.Model`. There are no unproved
assumptions.
-/

public noncomputable section

set_option linter.unusedSectionVars false

namespace Pldr

open Lean.Grind FP

universe u

local infixl:75 " ⬝ " => Mat.mul
local postfix:max "ᵀ" => Mat.transpose

variable {α : Type u} [Field α] [LE α] [LT α] [Std.LawfulOrderLT α] [Std.IsLinearOrder α]
  [OrderedRing α]

attribute [local instance] Lean.Grind.Semiring.natCast

/-- `a ≤ a`. -/
theorem le_refl' (a : α) : a ≤ a := by grind

/-- The entrywise absolute value of a matrix. -/
@[expose] def Mat.abs {m n : Nat} (A : Mat α m n) : Mat α m n := fun i j => absv (A i j)

/-- Entries of a product are bounded by the product of entrywise bounds. -/
theorem absv_mul_apply_le {m n p : Nat} {X Z : Mat α m n} (B : Mat α n p)
    (h : ∀ i j, absv (X i j) ≤ Z i j) (i : Fin m) (k : Fin p) :
    absv ((X ⬝ B) i k) ≤ (Z ⬝ Mat.abs B) i k := by
  simp only [Mat.mul_apply, Mat.abs]
  refine Std.le_trans (absv_finSum_le _) (finSum_le_finSum fun j => ?_)
  rw [absv_mul]
  exact OrderedRing.mul_le_mul_of_nonneg_right (h i j) (absv_nonneg _)

/-- Products of nonnegative matrices are monotone in the left factor. -/
theorem mul_apply_le_of_le {m n p : Nat} {X Z : Mat α m n} {B : Mat α n p}
    (h : ∀ i j, X i j ≤ Z i j) (hB : ∀ j k, 0 ≤ B j k) (i : Fin m) (k : Fin p) :
    (X ⬝ B) i k ≤ (Z ⬝ B) i k := by
  simp only [Mat.mul_apply]
  exact finSum_le_finSum fun j => OrderedRing.mul_le_mul_of_nonneg_right (h i j) (hB j k)

/-- Entries of a product of nonnegative matrices are nonnegative. -/
theorem mul_apply_nonneg {m n p : Nat} {X : Mat α m n} {B : Mat α n p}
    (hX : ∀ i j, 0 ≤ X i j) (hB : ∀ j k, 0 ≤ B j k) (i : Fin m) (k : Fin p) :
    0 ≤ (X ⬝ B) i k := by
  simp only [Mat.mul_apply]
  exact finSum_nonneg fun j => OrderedRing.mul_nonneg (hX i j) (hB j k)

/-- [fp_head_scores] The scores of a head in floating point, with the metric's error as an
input bound: `|Ĝ − G| ≤ δG` entrywise; `X` within `e₁ (|Q| |Ĝ|) + h₁` of `Q Ĝ`; the score
product `Sc` within `e₂ (|X| |K|ᵀ) + h₂` of `X Kᵀ` (`h₁`, `h₂ ≥ 0`: underflow); the scale
`τ̂` within `u_τ |τ|` of `τ`; `Ê` within `u_s |τ̂ Sc| + η_s` of `τ̂ Sc`. With
`P = |Q| |Ĝ| |K|ᵀ`, `C = (1 + u_s)(1 + u_τ)`:
`|Ê i j − τ (Q G Kᵀ) i j| ≤ |τ| ((C (1 + e₁)(1 + e₂) − 1) P i j
+ C ((1 + e₂)(h₁ |K|ᵀ) i j + h₂ i j) + (|Q| δG |K|ᵀ) i j) + η_s`. -/
theorem fp_head_scores {S T dk : Nat} (Q : Mat α S dk) (K : Mat α T dk)
    (G G' δG : Mat α dk dk) (X : Mat α S dk) (Sc Eh : Mat α S T) (h₁ : Mat α S dk)
    (h₂ : Mat α S T) {τ τ' e₁ e₂ uτ us ηs : α}
    (he₂ : 0 ≤ e₂) (huτ : 0 ≤ uτ) (hus : 0 ≤ us) (hh₁ : ∀ i b, 0 ≤ h₁ i b)
    (hG : ∀ a b, absv (G' a b - G a b) ≤ δG a b)
    (hX : ∀ i b, absv (X i b - (Q ⬝ G') i b) ≤ e₁ * (Mat.abs Q ⬝ Mat.abs G') i b + h₁ i b)
    (hSc : ∀ i j, absv (Sc i j - (X ⬝ Kᵀ) i j) ≤
      e₂ * (Mat.abs X ⬝ (Mat.abs K)ᵀ) i j + h₂ i j)
    (hτ : absv (τ' - τ) ≤ uτ * absv τ)
    (hE : ∀ i j, absv (Eh i j - τ' * Sc i j) ≤ us * absv (τ' * Sc i j) + ηs)
    (i : Fin S) (j : Fin T) :
    absv (Eh i j - τ * (Q ⬝ G ⬝ Kᵀ) i j) ≤
      absv τ * (((1 + us) * (1 + uτ) * (1 + e₁) * (1 + e₂) - 1) *
          (Mat.abs Q ⬝ Mat.abs G' ⬝ (Mat.abs K)ᵀ) i j +
        (1 + us) * (1 + uτ) * ((1 + e₂) * (h₁ ⬝ (Mat.abs K)ᵀ) i j + h₂ i j) +
        (Mat.abs Q ⬝ δG ⬝ (Mat.abs K)ᵀ) i j) + ηs := by
  have aQ : ∀ i a, 0 ≤ Mat.abs Q i a := fun _ _ => absv_nonneg _
  have aG : ∀ a b, 0 ≤ Mat.abs G' a b := fun _ _ => absv_nonneg _
  have aK : ∀ b j, 0 ≤ (Mat.abs K)ᵀ b j := fun _ _ => absv_nonneg _
  have QG0 := mul_apply_nonneg aQ aG
  generalize hP : (Mat.abs Q ⬝ Mat.abs G' ⬝ (Mat.abs K)ᵀ) i j = P
  generalize hΔ : (Mat.abs Q ⬝ δG ⬝ (Mat.abs K)ᵀ) i j = Δ
  generalize hH₁ : (h₁ ⬝ (Mat.abs K)ᵀ) i j = H₁
  have hP0 : 0 ≤ P := by rw [← hP]; exact mul_apply_nonneg QG0 aK i j
  have hH₁0 : 0 ≤ H₁ := by rw [← hH₁]; exact mul_apply_nonneg hh₁ aK i j
  have hQGabs : ∀ i b, absv ((Q ⬝ G') i b) ≤ (Mat.abs Q ⬝ Mat.abs G') i b := fun i b =>
    absv_mul_apply_le G' (fun i a => le_refl' (absv (Q i a))) i b
  have hXabs : ∀ i b, absv (X i b) ≤ (1 + e₁) * (Mat.abs Q ⬝ Mat.abs G') i b + h₁ i b :=
    fun i b => by
      have h1 := hX i b
      have h2 := hQGabs i b
      have t := absv_add_le (X i b - (Q ⬝ G') i b) ((Q ⬝ G') i b)
      have e : X i b - (Q ⬝ G') i b + (Q ⬝ G') i b = X i b := by grind
      rw [e] at t
      grind
  -- (|X| |K|ᵀ) i j ≤ (1 + e₁) P + H₁
  have hXK : (Mat.abs X ⬝ (Mat.abs K)ᵀ) i j ≤ (1 + e₁) * P + H₁ := by
    have := mul_apply_le_of_le (B := (Mat.abs K)ᵀ)
      (X := Mat.abs X) (Z := fun i b => (1 + e₁) * (Mat.abs Q ⬝ Mat.abs G') i b + h₁ i b)
      (fun i b => hXabs i b) aK i j
    have e : ((fun i b => (1 + e₁) * (Mat.abs Q ⬝ Mat.abs G') i b + h₁ i b) ⬝
        (Mat.abs K)ᵀ) i j = (1 + e₁) * P + H₁ := by
      rw [← hP, ← hH₁]; simp only [Mat.mul_apply, Mat.transpose_apply]
      rw [mul_finSum, ← finSum_add]; congr 1; funext b; grind
    rw [e] at this; exact this
  -- |X Kᵀ − Q Ĝ Kᵀ| ≤ e₁ P + H₁
  have hXmK : absv ((X ⬝ Kᵀ) i j - (Q ⬝ G' ⬝ Kᵀ) i j) ≤ e₁ * P + H₁ := by
    have e : (X ⬝ Kᵀ) i j - (Q ⬝ G' ⬝ Kᵀ) i j =
        ((fun i b => X i b - (Q ⬝ G') i b) ⬝ Kᵀ) i j := by
      simp only [Mat.mul_apply, Mat.transpose_apply]
      rw [← finSum_sub]; congr 1; funext b; grind
    rw [e]
    have h := absv_mul_apply_le (Kᵀ)
      (Z := fun i b => e₁ * (Mat.abs Q ⬝ Mat.abs G') i b + h₁ i b) (fun i b => hX i b) i j
    have e2 : ((fun i b => e₁ * (Mat.abs Q ⬝ Mat.abs G') i b + h₁ i b) ⬝ Mat.abs Kᵀ) i j =
        e₁ * P + H₁ := by
      rw [← hP, ← hH₁]; simp only [Mat.mul_apply, Mat.transpose_apply, Mat.abs]
      rw [mul_finSum, ← finSum_add]; congr 1; funext b; grind
    rw [e2] at h; exact h
  -- |Q (Ĝ − G) Kᵀ| ≤ Δ
  have hGK : absv ((Q ⬝ G' ⬝ Kᵀ) i j - (Q ⬝ G ⬝ Kᵀ) i j) ≤ Δ := by
    have e : (Q ⬝ G' ⬝ Kᵀ) i j - (Q ⬝ G ⬝ Kᵀ) i j =
        ((Q ⬝ fun a b => G' a b - G a b) ⬝ Kᵀ) i j := by
      simp only [Mat.mul_apply, Mat.transpose_apply]
      rw [← finSum_sub]; congr 1; funext b
      have h1 : (finSum fun a => Q i a * (G' a b - G a b)) =
          (finSum fun a => Q i a * G' a b) - (finSum fun a => Q i a * G a b) := by
        rw [← finSum_sub]; congr 1; funext a; grind
      rw [h1]; grind
    rw [e]
    have inner : ∀ i b, absv ((Q ⬝ fun a b => G' a b - G a b) i b) ≤ (Mat.abs Q ⬝ δG) i b :=
      fun i b => by
        simp only [Mat.mul_apply, Mat.abs]
        refine Std.le_trans (absv_finSum_le _) (finSum_le_finSum fun a => ?_)
        rw [absv_mul]
        exact OrderedRing.mul_le_mul_of_nonneg_left (hG a b) (absv_nonneg _)
    have h := absv_mul_apply_le (Kᵀ) inner i j
    have e2 : ((Mat.abs Q ⬝ δG) ⬝ Mat.abs Kᵀ) i j = Δ := by rw [← hΔ]; rfl
    rw [e2] at h; exact h
  -- the score product
  generalize hC : (1 + e₁) * (1 + e₂) = C
  generalize hHs : (1 + e₂) * H₁ + h₂ i j = Hs
  have hSc1 : absv (Sc i j - (Q ⬝ G' ⬝ Kᵀ) i j) ≤ (C - 1) * P + Hs := by
    have h1 := hSc i j
    have h2 := OrderedRing.mul_le_mul_of_nonneg_left hXK he₂
    have t := absv_add_le (Sc i j - (X ⬝ Kᵀ) i j) ((X ⬝ Kᵀ) i j - (Q ⬝ G' ⬝ Kᵀ) i j)
    have e : Sc i j - (X ⬝ Kᵀ) i j + ((X ⬝ Kᵀ) i j - (Q ⬝ G' ⬝ Kᵀ) i j) =
        Sc i j - (Q ⬝ G' ⬝ Kᵀ) i j := by grind
    rw [e] at t; rw [← hC, ← hHs]; grind
  have hQGK : absv ((Q ⬝ G' ⬝ Kᵀ) i j) ≤ P := by
    rw [← hP]
    exact absv_mul_apply_le (Kᵀ) (X := Q ⬝ G') (Z := Mat.abs Q ⬝ Mat.abs G') hQGabs i j
  have hScabs : absv (Sc i j) ≤ C * P + Hs := by
    have t := absv_add_le (Sc i j - (Q ⬝ G' ⬝ Kᵀ) i j) ((Q ⬝ G' ⬝ Kᵀ) i j)
    have e : Sc i j - (Q ⬝ G' ⬝ Kᵀ) i j + (Q ⬝ G' ⬝ Kᵀ) i j = Sc i j := by grind
    rw [e] at t; grind
  have hτ' : absv τ' ≤ (1 + uτ) * absv τ := by
    have t := absv_add_le (τ' - τ) τ
    have e : τ' - τ + τ = τ' := by grind
    rw [e] at t; grind
  have at0 := absv_nonneg τ
  have p1 : absv (Eh i j - τ' * Sc i j) ≤ us * ((1 + uτ) * absv τ * (C * P + Hs)) + ηs := by
    have h := hE i j
    rw [absv_mul] at h
    have := mul_le_mul_of_le_of_le hτ' hScabs (OrderedRing.mul_nonneg (by grind) at0)
      (absv_nonneg _)
    have := OrderedRing.mul_le_mul_of_nonneg_left this hus
    grind
  have p2 : absv ((τ' - τ) * Sc i j) ≤ uτ * absv τ * (C * P + Hs) := by
    rw [absv_mul]
    exact mul_le_mul_of_le_of_le hτ hScabs (OrderedRing.mul_nonneg huτ at0) (absv_nonneg _)
  have p3 : absv (τ * (Sc i j - (Q ⬝ G' ⬝ Kᵀ) i j)) ≤ absv τ * ((C - 1) * P + Hs) := by
    rw [absv_mul]; exact OrderedRing.mul_le_mul_of_nonneg_left hSc1 at0
  have p4 : absv (τ * ((Q ⬝ G' ⬝ Kᵀ) i j - (Q ⬝ G ⬝ Kᵀ) i j)) ≤ absv τ * Δ := by
    rw [absv_mul]; exact OrderedRing.mul_le_mul_of_nonneg_left hGK at0
  have e : Eh i j - τ * (Q ⬝ G ⬝ Kᵀ) i j =
      (Eh i j - τ' * Sc i j) + (τ' - τ) * Sc i j + τ * (Sc i j - (Q ⬝ G' ⬝ Kᵀ) i j) +
        τ * ((Q ⬝ G' ⬝ Kᵀ) i j - (Q ⬝ G ⬝ Kᵀ) i j) := by grind
  rw [e]
  have t1 := absv_add_le ((Eh i j - τ' * Sc i j) + (τ' - τ) * Sc i j +
    τ * (Sc i j - (Q ⬝ G' ⬝ Kᵀ) i j)) (τ * ((Q ⬝ G' ⬝ Kᵀ) i j - (Q ⬝ G ⬝ Kᵀ) i j))
  have t2 := absv_add_le ((Eh i j - τ' * Sc i j) + (τ' - τ) * Sc i j)
    (τ * (Sc i j - (Q ⬝ G' ⬝ Kᵀ) i j))
  have t3 := absv_add_le (Eh i j - τ' * Sc i j) ((τ' - τ) * Sc i j)
  have fin : ((1 + us) * (1 + uτ) * (1 + e₁) * (1 + e₂) - 1) = (1 + us) * (1 + uτ) * C - 1 := by
    rw [← hC]; grind
  rw [fin]
  grind

/-- [fp_head_output] The online-softmax step of blocked kernels: an accumulator `Ŷ` of
`Σ_j exp(x_j − m₁) v_j` with relative bound `a₁` (of `Σ_j exp(x_j − m₁)|v_j|`), multiplied
by a computed `α̂` within `c_α` of `exp(m₁ − m₂)` and rounded (`|ẑ − α̂ Ŷ| ≤ r |α̂ Ŷ|`),
is an accumulator of `Σ_j exp(x_j − m₂) v_j` with relative bound
`(1 + r) c_α (1 + a₁) − 1`. -/
theorem fp_head_output_rescale {k : Nat} (E : ExpMap α) (x v : Fin k → α)
    {m₁ m₂ Yh αh z cα a₁ r : α} (hcα : 1 ≤ cα) (hr : 0 ≤ r)
    (hY : absv (Yh - finSum (fun j => E.exp (x j - m₁) * v j)) ≤
      a₁ * finSum (fun j => E.exp (x j - m₁) * absv (v j)))
    (hα : Within cα αh (E.exp (m₁ - m₂))) (hz : absv (z - αh * Yh) ≤ r * absv (αh * Yh)) :
    absv (z - finSum (fun j => E.exp (x j - m₂) * v j)) ≤
      ((1 + r) * cα * (1 + a₁) - 1) * finSum (fun j => E.exp (x j - m₂) * absv (v j)) := by
  have hal := E.exp_pos (m₁ - m₂)
  have shift : ∀ j, E.exp (x j - m₂) = E.exp (x j - m₁) * E.exp (m₁ - m₂) := fun j => by
    rw [← E.exp_add]; congr 1; grind
  have eY : finSum (fun j => E.exp (x j - m₂) * v j) =
      finSum (fun j => E.exp (x j - m₁) * v j) * E.exp (m₁ - m₂) := by
    rw [finSum_mul]; congr 1; funext j; rw [shift j]; grind
  have eA : finSum (fun j => E.exp (x j - m₂) * absv (v j)) =
      finSum (fun j => E.exp (x j - m₁) * absv (v j)) * E.exp (m₁ - m₂) := by
    rw [finSum_mul]; congr 1; funext j; rw [shift j]; grind
  rw [eY, eA]
  have hMN : ∀ j, absv (E.exp (x j - m₁) * v j) ≤ E.exp (x j - m₁) * absv (v j) := fun j => by
    rw [absv_mul, show absv (E.exp (x j - m₁)) = E.exp (x j - m₁) by
      unfold absv; simp [le_of_lt' (E.exp_pos (x j - m₁))]]; grind
  generalize hYs : finSum (fun j => E.exp (x j - m₁) * v j) = Ys at *
  generalize hA : finSum (fun j => E.exp (x j - m₁) * absv (v j)) = A at *
  have hYA : absv Ys ≤ A := by
    rw [← hYs, ← hA]; exact Std.le_trans (absv_finSum_le _) (finSum_le_finSum hMN)
  generalize hαd : E.exp (m₁ - m₂) = al at *
  have hA0 : 0 ≤ A := Std.le_trans (absv_nonneg _) hYA
  have hYh : absv Yh ≤ (1 + a₁) * A := by
    have t := absv_add_le (Yh - Ys) Ys
    have e : Yh - Ys + Ys = Yh := by grind
    rw [e] at t; grind
  have hαd : absv (αh - al) ≤ (cα - 1) * al := hα.absv_sub_le hcα (le_of_lt' hal)
  have hαh0 : 0 ≤ αh := hα.nonneg (by grind) (le_of_lt' hal)
  have hαup : αh ≤ cα * al := hα.2
  -- |α̂ Ŷ − α Y| ≤ (c_α (1 + a₁) − 1) α A
  have q1 : absv ((αh - al) * Yh) ≤ (cα - 1) * al * ((1 + a₁) * A) := by
    rw [absv_mul]
    exact mul_le_mul_of_le_of_le hαd hYh (by
      have := OrderedRing.mul_nonneg (by grind : (0 : α) ≤ cα - 1) (le_of_lt' hal); grind)
      (absv_nonneg _)
  have q2 : absv (al * (Yh - Ys)) ≤ al * (a₁ * A) := by
    rw [absv_mul, show absv al = al by unfold absv; simp [le_of_lt' hal]]
    exact OrderedRing.mul_le_mul_of_nonneg_left hY (le_of_lt' hal)
  have hprod : absv (αh * Yh) ≤ cα * al * ((1 + a₁) * A) := by
    rw [absv_mul, show absv αh = αh by unfold absv; simp [hαh0]]
    exact mul_le_mul_of_le_of_le hαup hYh (by
      have := OrderedRing.mul_nonneg (by grind : (0 : α) ≤ cα) (le_of_lt' hal); grind)
      (absv_nonneg _)
  have hrp := OrderedRing.mul_le_mul_of_nonneg_left hprod hr
  have e : z - Ys * al = (z - αh * Yh) + ((αh - al) * Yh + al * (Yh - Ys)) := by grind
  rw [e]
  have t1 := absv_add_le (z - αh * Yh) ((αh - al) * Yh + al * (Yh - Ys))
  have t2 := absv_add_le ((αh - al) * Yh) (al * (Yh - Ys))
  grind

/-- [fp_head_output] The normalise-first order (weights first, then `p V`, as the float64
reference computes): weights `p̂_j` within `ρ p_j + η_p` of nonnegative `p_j`
(`fp_softmax`), leaves `g_j` within `e_p |p̂_j v_j| + η_g j` of `p̂_j v_j` (the product, or
exact in an FMA), any summation order at `u` (`(n − 1) u < 1`), the result within
`w |·| + η_y`:
`|ŷ − Σ_j p_j v_j| ≤ ((1 + w)(1 + γ_{n−1})(1 + e_p)(1 + ρ) − 1) Σ_j p_j |v_j|
+ (1 + w)(1 + γ_{n−1}) Σ_j ((1 + e_p) η_p |v_j| + η_g j) + η_y`. -/
theorem fp_head_output_normalized {n : Nat} (R : Rounding α) (p ph v g ηg : Fin n → α)
    {ρ ηp ep w ηy y : α} (hρ : 0 ≤ ρ) (hηp : 0 ≤ ηp) (hep : 0 ≤ ep) (hw : 0 ≤ w)
    (hηg : ∀ j, 0 ≤ ηg j) (hp0 : ∀ j, 0 ≤ p j)
    (hp : ∀ j, absv (ph j - p j) ≤ ρ * p j + ηp)
    (hg : ∀ j, absv (g j - ph j * v j) ≤ ep * absv (ph j * v j) + ηg j)
    (t : STree (Fin n)) (ht : t.IsOrder α) (hn : ((n - 1 : Nat) : α) * R.u < 1)
    (hy : absv (y - t.eval R.fl g) ≤ w * absv (t.eval R.fl g) + ηy) :
    absv (y - finSum (fun j => p j * v j)) ≤
      ((1 + w) * (1 + gam R.u (n - 1)) * (1 + ep) * (1 + ρ) - 1) *
        finSum (fun j => p j * absv (v j)) +
      (1 + w) * (1 + gam R.u (n - 1)) *
        finSum (fun j => (1 + ep) * ηp * absv (v j) + ηg j) + ηy := by
  have hu := R.u_nonneg
  have g0 := gam_nonneg hu hn
  have hM : ∀ j, absv (p j * v j) ≤ p j * absv (v j) := fun j => by
    rw [absv_mul, show absv (p j) = p j by unfold absv; simp [hp0 j]]; grind
  have hηl : ∀ j, 0 ≤ (1 + ep) * ηp * absv (v j) + ηg j := fun j => by
    have := OrderedRing.mul_nonneg (OrderedRing.mul_nonneg (by grind : (0 : α) ≤ 1 + ep) hηp)
      (absv_nonneg (v j))
    have := hηg j; grind
  have leaf : ∀ j, absv (g j - p j * v j) ≤ ((1 + ep) * (1 + ρ) - 1) * (p j * absv (v j)) +
      ((1 + ep) * ηp * absv (v j) + ηg j) := fun j => by
    have hph : absv (ph j) ≤ (1 + ρ) * p j + ηp := by
      have t := absv_add_le (ph j - p j) (p j)
      have e : ph j - p j + p j = ph j := by grind
      rw [e, show absv (p j) = p j by unfold absv; simp [hp0 j]] at t; have := hp j; grind
    have h1 := hg j
    rw [absv_mul] at h1
    have h2 := OrderedRing.mul_le_mul_of_nonneg_left
      (OrderedRing.mul_le_mul_of_nonneg_right hph (absv_nonneg (v j))) hep
    have h3 : absv ((ph j - p j) * v j) ≤ (ρ * p j + ηp) * absv (v j) := by
      rw [absv_mul]; exact OrderedRing.mul_le_mul_of_nonneg_right (hp j) (absv_nonneg _)
    have t := absv_add_le (g j - ph j * v j) ((ph j - p j) * v j)
    have e : g j - ph j * v j + (ph j - p j) * v j = g j - p j * v j := by grind
    rw [e] at t; grind
  have he : 0 ≤ (1 + ep) * (1 + ρ) - 1 := by
    have := OrderedRing.mul_nonneg hep hρ; grind
  have hs := fp_summation_perturbed R he hηl hM leaf t ht hn
  generalize hS : finSum (fun j => p j * v j) = S at *
  generalize hA : finSum (fun j => p j * absv (v j)) = A at *
  generalize hH : finSum (fun j => (1 + ep) * ηp * absv (v j) + ηg j) = H at *
  generalize hE : t.eval R.fl g = Ev at *
  have hSA : absv S ≤ A := by
    rw [← hS, ← hA]; exact Std.le_trans (absv_finSum_le _) (finSum_le_finSum hM)
  have hA0 : 0 ≤ A := Std.le_trans (absv_nonneg _) hSA
  have hH0 : 0 ≤ H := by rw [← hH]; exact finSum_nonneg hηl
  generalize hK : (1 + gam R.u (n - 1)) * (1 + ((1 + ep) * (1 + ρ) - 1)) = K at hs
  generalize hC : 1 + gam R.u (n - 1) = C at hs
  have hEv : absv Ev ≤ K * A + C * H := by
    have t := absv_add_le (Ev - S) S
    have e : Ev - S + S = Ev := by grind
    rw [e] at t; grind
  have hwE := OrderedRing.mul_le_mul_of_nonneg_left hEv hw
  have t := absv_add_le (y - Ev) (Ev - S)
  have e : y - Ev + (Ev - S) = y - S := by grind
  rw [e] at t
  have fin : (1 + w) * C * (1 + ep) * (1 + ρ) - 1 = (1 + w) * K - 1 := by
    rw [← hK, ← hC]; grind
  rw [fin]; grind

/-- [fp_mixed_precision] A pipeline stage on a computed input: the exact stage is
`Σ_j a_j x_j`; the kernel evaluates it on its own input `x̂` (`|x̂_j − x_j| ≤ d_j`) within
`B` of `Σ_j a_j x̂_j` (`fp_mixed_precision` on `x̂`); then
`|ŷ − Σ_j a_j x_j| ≤ B + Σ_j |a_j| d_j`. -/
theorem fp_mixed_precision_propagated {n : Nat} (a x x' d : Fin n → α) {B y : α}
    (hx : ∀ j, absv (x' j - x j) ≤ d j)
    (hy : absv (y - finSum (fun j => a j * x' j)) ≤ B) :
    absv (y - finSum (fun j => a j * x j)) ≤ B + finSum (fun j => absv (a j) * d j) := by
  have hlin : absv (finSum (fun j => a j * x' j) - finSum (fun j => a j * x j)) ≤
      finSum (fun j => absv (a j) * d j) := by
    rw [← finSum_sub]
    refine Std.le_trans (absv_finSum_le _) (finSum_le_finSum fun j => ?_)
    have e : a j * x' j - a j * x j = a j * (x' j - x j) := by grind
    rw [e, absv_mul]
    exact OrderedRing.mul_le_mul_of_nonneg_left (hx j) (absv_nonneg _)
  have t := absv_add_le (y - finSum (fun j => a j * x' j))
    (finSum (fun j => a j * x' j) - finSum (fun j => a j * x j))
  have e : y - finSum (fun j => a j * x' j) +
      (finSum (fun j => a j * x' j) - finSum (fun j => a j * x j)) =
      y - finSum (fun j => a j * x j) := by grind
  rw [e] at t; grind

/-- [fp_elementwise] One entrywise stage in floating point: the exact stage is `f x`; the
kernel evaluates a routine `f̂` of relative error `r` and absolute error `η_f`
(`|f̂ x̂ − f x̂| ≤ r |f x̂| + η_f`) on its computed input `x̂` (`|x̂ − x| ≤ d`), and `f` moves by
at most `L |x̂ − x|` between the two (a Lipschitz bound on the segment: `L ≥ sup |f'|`
there, a fact of the real function). Then `|f̂ x̂ − f x| ≤ (1 + r) L d + r |f x| + η_f`. -/
theorem fp_elementwise {f fh : α → α} {x x' L d r ηf : α} (hL0 : 0 ≤ L) (hr : 0 ≤ r)
    (hx : absv (x' - x) ≤ d) (hL : absv (f x' - f x) ≤ L * absv (x' - x))
    (hf : absv (fh x' - f x') ≤ r * absv (f x') + ηf) :
    absv (fh x' - f x) ≤ (1 + r) * L * d + r * absv (f x) + ηf := by
  have hLd : absv (f x' - f x) ≤ L * d :=
    Std.le_trans hL (OrderedRing.mul_le_mul_of_nonneg_left hx hL0)
  have hfx : absv (f x') ≤ absv (f x) + L * d := by
    have t := absv_add_le (f x' - f x) (f x)
    have e : f x' - f x + f x = f x' := by grind
    rw [e] at t; grind
  have h2 := OrderedRing.mul_le_mul_of_nonneg_left hfx hr
  have t := absv_add_le (fh x' - f x') (f x' - f x)
  have e : fh x' - f x' + (f x' - f x) = fh x' - f x := by grind
  rw [e] at t
  grind

end Pldr

end
