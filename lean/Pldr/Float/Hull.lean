module

public import Pldr.Float.Softmax
public import Pldr.SoftmaxSimplex

/-!
# An attention output bound without a premise on the scores  (`[fp_head_output]`)

`fp_head_output` needs the scores' error `Δ` small (`c_e < 2`, so `Δ` below about
`ln 2`): its relative bound on every exponential then holds. Where the scores are off by
more (bfloat16 queries against large trained metrics), that route has no bound at all.
This one holds for any scores: an attention output is a convex combination of the values,
and so is the quotient of the computed numerator and denominator, whatever the computed
exponentials `ê_j ≥ 0` are. Both lie in the values' range `[lo, hi]`, so they are at
most `hi − lo` apart; what the kernel adds to its own convex combination is the rounding
of its two sums and of the quotient:

* `convex_mem_interval`: `p ≥ 0`, `Σ p = 1`, `lo ≤ v_j ≤ hi` give `lo ≤ Σ p_j v_j ≤ hi`.
* `[fp_head_output]` `fp_head_output_hull`: the fused kernel's order (numerator leaves `g_j`
  within `e_p |ê_j v_j| + η_g j` of `ê_j v_j`, numerator and denominator `Σ ê_j` summed in
  any order at `u`, `ŷ` within `w |N̂/D̂| + η_y` of the quotient), one computed exponential
  at least `c > 0` (the row maximum's, `ê(0) ≥ 1 − u_exp − η_e`), `|v_j| ≤ V`, and any
  exact weights `p` on the simplex (the softmax of the exact scores, `softmax_simplex`):
  `|ŷ − Σ_j p_j v_j| ≤ (hi − lo) + (1 + w)((a + b) V + H_N / c)/(1 − b) + w V + η_y`,
  `a = (1 + γ_{n−1})(1 + e_p) − 1`, `b = γ_{n−1}`, `H_N = (1 + γ_{n−1}) Σ_j η_g j`.

It says nothing about the exact scores, hence nothing about how close the computed
weights are to the exact ones: it is the bound of last resort, as loose as the values'
range. The floating-point model is that of `Pldr.Float.Model`. There are no unproved
assumptions.
-/

public noncomputable section

set_option linter.unusedSectionVars false

namespace Pldr

open Lean.Grind FP

universe u

variable {α : Type u} [Field α] [LE α] [LT α] [Std.LawfulOrderLT α] [Std.IsLinearOrder α]
  [OrderedRing α]

attribute [local instance] Lean.Grind.Semiring.natCast

/-- [fp_head_output] A convex combination of values in `[lo, hi]` lies in `[lo, hi]` (the
fact behind `fp_head_output_hull`). -/
theorem convex_mem_interval {n : Nat} {p v : Fin n → α} {lo hi : α} (hp : ∀ j, 0 ≤ p j)
    (h1 : finSum p = 1) (hv : ∀ j, lo ≤ v j ∧ v j ≤ hi) :
    lo ≤ finSum (fun j => p j * v j) ∧ finSum (fun j => p j * v j) ≤ hi := by
  have hl : finSum (fun j => p j * lo) ≤ finSum (fun j => p j * v j) :=
    finSum_le_finSum fun j => OrderedRing.mul_le_mul_of_nonneg_left (hv j).1 (hp j)
  have hh : finSum (fun j => p j * v j) ≤ finSum (fun j => p j * hi) :=
    finSum_le_finSum fun j => OrderedRing.mul_le_mul_of_nonneg_left (hv j).2 (hp j)
  rw [← finSum_mul p lo, h1] at hl
  rw [← finSum_mul p hi, h1] at hh
  constructor <;> grind

/-- [fp_head_output] The fused attention output against any weights on the simplex,
without a premise on the scores: `ŷ` within `w |N̂/D̂| + η_y` of the quotient of the
numerator (leaves `g_j` within `e_p |ê_j v_j| + η_g j` of `ê_j v_j`) and the denominator
`Σ ê_j`, both summed in any order at `u`; computed exponentials `ê_j ≥ 0`, one of them at
least `c > 0`; values in `[lo, hi]` with `|v_j| ≤ V`; `p ≥ 0`, `Σ p = 1`. With
`a = (1 + γ_{n−1})(1 + e_p) − 1`, `b = γ_{n−1} < 1`, `H_N = (1 + γ_{n−1}) Σ_j η_g j`:
`|ŷ − Σ_j p_j v_j| ≤ (hi − lo) + (1 + w)((a + b) V + H_N c⁻¹)/(1 − b) + w V + η_y`. -/
theorem fp_head_output_hull {n : Nat} (R : Rounding α) (p v ehat g ηg : Fin n → α)
    {lo hi V ep w ηy c a b HN : α} (hp : ∀ j, 0 ≤ p j) (hp1 : finSum p = 1)
    (hv : ∀ j, lo ≤ v j ∧ v j ≤ hi) (hV : ∀ j, absv (v j) ≤ V)
    (he0 : ∀ j, 0 ≤ ehat j) (k : Fin n) (hc : 0 < c) (hk : c ≤ ehat k)
    (hep : 0 ≤ ep) (hw : 0 ≤ w) (hηg : ∀ j, 0 ≤ ηg j)
    (hg : ∀ j, absv (g j - ehat j * v j) ≤ ep * absv (ehat j * v j) + ηg j)
    (tn td : STree (Fin n)) (htn : tn.IsOrder α) (htd : td.IsOrder α)
    (hn : ((n - 1 : Nat) : α) * R.u < 1)
    (ha : a = (1 + gam R.u (n - 1)) * (1 + ep) - 1) (hb : b = gam R.u (n - 1))
    (hHN : HN = (1 + gam R.u (n - 1)) * finSum ηg) (hb1 : b < 1) (y : α)
    (hy : absv (y - tn.eval R.fl g / td.eval R.fl ehat) ≤
      w * absv (tn.eval R.fl g / td.eval R.fl ehat) + ηy) :
    absv (y - finSum (fun j => p j * v j)) ≤
      (hi - lo) + ((1 + w) * (((a + b) * V + HN * c⁻¹) * (1 - b)⁻¹) + w * V + ηy) := by
  have hu := R.u_nonneg
  have g0 := gam_nonneg hu hn
  have hmul : ∀ j, absv (ehat j * v j) = ehat j * absv (v j) := fun j => by
    rw [absv_mul, show absv (ehat j) = ehat j by unfold absv; simp [he0 j]]
  -- the numerator and the denominator against their exact sums
  have leafN : ∀ j, absv (g j - ehat j * v j) ≤ ep * (ehat j * absv (v j)) + ηg j :=
    fun j => by rw [← hmul j]; exact hg j
  have hNum := fp_summation_perturbed R hep hηg (fun j => by rw [hmul j]; exact Std.le_refl _) leafN tn htn hn
  have hDen := fp_summation_perturbed R (f := ehat) (e := 0) (M := ehat) (η := fun _ => 0) (g := ehat)
    (by grind) (fun _ => by grind) (fun j => by unfold absv; split <;> grind [he0 j])
    (fun j => by unfold absv; split <;> grind) td htd hn
  rw [finSum_zero] at hDen
  have ea : (1 + gam R.u (n - 1)) * (1 + ep) - 1 = a := by rw [ha]
  have eb : (1 + gam R.u (n - 1)) * (1 + 0) - 1 = b := by rw [hb]; grind
  rw [ea, ← hHN] at hNum
  rw [eb] at hDen
  generalize hD : finSum ehat = D at *
  generalize hA : finSum (fun j => ehat j * absv (v j)) = A at *
  generalize hN : finSum (fun j => ehat j * v j) = N at *
  have hDk : c ≤ D := by rw [← hD]; exact Std.le_trans hk (le_finSum_of_nonneg he0 k)
  have hDpos : 0 < D := by grind
  have hσ : D⁻¹ ≤ c⁻¹ := inv_le_inv_of_le hc hDk
  have hNA : absv N ≤ A := by
    rw [← hN, ← hA]
    exact Std.le_trans (absv_finSum_le _) (finSum_le_finSum fun j => by rw [hmul j]; exact Std.le_refl _)
  have ha0 : 0 ≤ a := by
    rw [ha]
    have := OrderedRing.mul_le_mul_of_nonneg_left (by grind : (1 : α) ≤ 1 + ep)
      (by grind : (0 : α) ≤ 1 + gam R.u (n - 1))
    grind
  have hb0 : 0 ≤ b := by rw [hb]; exact g0
  have hHN0 : 0 ≤ HN := by
    rw [hHN]; exact OrderedRing.mul_nonneg (by grind) (finSum_nonneg hηg)
  have hDen' : absv (td.eval R.fl ehat - D) ≤ b * D + 0 := by grind
  have hr := absv_div_sub_div_le (HD := 0) hDpos hNA ha0 hb0 hHN0 (by grind) hσ (by grind)
    hNum hDen'
  -- `A / D ≤ V`: the mean of `|v|` under the weights `ê / D`
  have hAV : A * D⁻¹ ≤ V := by
    have : A ≤ D * V := by
      rw [← hA, ← hD, finSum_mul]
      exact finSum_le_finSum fun j =>
        OrderedRing.mul_le_mul_of_nonneg_left (hV j) (he0 j)
    have hDi := inv_pos_of_pos hDpos
    have h2 := OrderedRing.mul_le_mul_of_nonneg_right this (le_of_lt' hDi)
    have e : D * V * D⁻¹ = V := by
      have : D * D⁻¹ = 1 := Field.mul_inv_cancel (by grind)
      grind
    grind
  have hV0 : 0 ≤ V := Std.le_trans (absv_nonneg _) (hV k)
  have hib := inv_pos_of_pos (a := 1 - b) (by grind)
  have hrV : ((a + b + 0 * c⁻¹) * (A * D⁻¹) + HN * c⁻¹) * (1 - b - 0 * c⁻¹)⁻¹ ≤
      ((a + b) * V + HN * c⁻¹) * (1 - b)⁻¹ := by
    have e1 : a + b + 0 * c⁻¹ = a + b := by grind
    have e2 : 1 - b - 0 * c⁻¹ = 1 - b := by grind
    rw [e1, e2]
    exact OrderedRing.mul_le_mul_of_nonneg_right
      (by have := OrderedRing.mul_le_mul_of_nonneg_left hAV (by grind : (0 : α) ≤ a + b); grind)
      (le_of_lt' hib)
  generalize hQ : tn.eval R.fl g / td.eval R.fl ehat = Q at *
  generalize hR : ((a + b) * V + HN * c⁻¹) * (1 - b)⁻¹ = r at hrV
  have hQND : absv (Q - N / D) ≤ r := Std.le_trans hr hrV
  -- the kernel's quotient against its own convex combination, then the range
  have hQb : absv Q ≤ V + r := by
    have t := absv_add_le (Q - N / D) (N / D)
    have e : Q - N / D + N / D = Q := by grind
    rw [e] at t
    have hND : absv (N / D) ≤ V := by
      rw [Field.div_eq_mul_inv, absv_mul_inv_of_pos hDpos]
      exact Std.le_trans (OrderedRing.mul_le_mul_of_nonneg_right hNA
        (le_of_lt' (inv_pos_of_pos hDpos))) hAV
    grind
  have hyQ : absv (y - Q) ≤ w * (V + r) + ηy :=
    Std.le_trans hy (by have := OrderedRing.mul_le_mul_of_nonneg_left hQb hw; grind)
  have hconv : lo ≤ N / D ∧ N / D ≤ hi := by
    have hq0 : ∀ j, 0 ≤ ehat j * D⁻¹ := fun j =>
      OrderedRing.mul_nonneg (he0 j) (le_of_lt' (inv_pos_of_pos hDpos))
    have hq1 : finSum (fun j => ehat j * D⁻¹) = 1 := by
      rw [← finSum_mul ehat D⁻¹, hD]; exact Field.mul_inv_cancel (by grind)
    have h := convex_mem_interval hq0 hq1 hv
    have e : finSum (fun j => ehat j * D⁻¹ * v j) = N / D := by
      rw [← hN, Field.div_eq_mul_inv, finSum_mul]; congr 1; funext j; grind
    rw [e] at h; exact h
  have hP := convex_mem_interval hp hp1 hv
  have hr0 : 0 ≤ r := Std.le_trans (absv_nonneg _) hQND
  have hhull : absv (N / D - finSum (fun j => p j * v j)) ≤ hi - lo :=
    absv_le_iff.mpr ⟨by grind, by grind⟩
  have t1 := absv_add_le (y - Q) (Q - N / D)
  have t2 := absv_add_le (y - Q + (Q - N / D)) (N / D - finSum (fun j => p j * v j))
  have e : y - Q + (Q - N / D) + (N / D - finSum (fun j => p j * v j)) =
      y - finSum (fun j => p j * v j) := by grind
  rw [e] at t2
  grind

end Pldr

end
