module

public import Pldr.SoftmaxSimplex
public import Pldr.LayerNorm

/-!
# The RMS form of the pairwise order parameter is at most 2  (`[order_parameter_rms_bound]`)

The author's audit (`audit_lib.order_pair`, the paper's order parameter E7 measured on
two sampled continuations `x₁, x₂` of one prompt) reports
`num = √mean((x₁ − x₂)²)` divided by `½(rms x₁ + rms x₂)`, `rms x = √mean(x²)`, and `0`
when `num = 0`; the claims ledger (N4) relies on this RMS form being at most 2, the
triangle inequality for the RMS.

* `meanSq x = (Σᵢ xᵢ²)/n` and `orderParamRms num r₁ r₂ = num / ((r₁ + r₂)/2)` (`0` when
  `num = 0`): the formula with the square roots taken as arguments.
* `neg_finSum_mul_le`: Cauchy–Schwarz in the form needed, `−Σ aᵢbᵢ ≤ n r₁ r₂`, from
  `0 ≤ Σ (r₂aᵢ + r₁bᵢ)²` (and, when `r₁r₂ = 0`, a vanishing row).
* `rms_sub_le`: `num ≤ r₁ + r₂`, from `n num² = Σ(aᵢ − bᵢ)² ≤ n (r₁ + r₂)²`.
* `order_parameter_rms_bound`: `num ≤ r₁ + r₂` and `0 ≤ orderParamRms num r₁ r₂ ≤ 2`.
* `order_parameter_rms_bound_sharp`: `x₂ = −x₁ ≠ 0` attains `2`;
  `order_parameter_rms_bound_rat`: a rational instance of the hypotheses (`6/5`).

Abstracted: core Lean has no square root, so `num`, `r₁`, `r₂` are hypotheses: nonnegative
numbers whose squares are the mean squares (that is what `√` returns, and positive square
roots are unique, `pos_sq_unique` in `Pldr.LayerNormModel`). Any ordered field. Floating point is not modelled:
the computed form can exceed 2 by rounding; the property tests bound that excess by the
dtype's unit round-off. There are no unproved assumptions.
-/

public noncomputable section

set_option linter.unusedSectionVars false

namespace Pldr

open Lean.Grind

universe u

attribute [local instance] Lean.Grind.Semiring.natCast

variable {α : Type u} [Field α] [LE α] [LT α] [Std.LawfulOrderLT α] [Std.IsLinearOrder α]
  [OrderedRing α]

/-- The mean square `(Σᵢ xᵢ²)/n` of a row of length `n`. -/
@[expose] def meanSq {n : Nat} (x : Fin n → α) : α := finSum (fun i => x i * x i) * (n : α)⁻¹

open Classical in
/-- The RMS form of the pairwise order parameter, `num / (½(r₁ + r₂))`, and `0` when
`num = 0`, with `num = √mean((x₁ − x₂)²)` and `rᵢ = √mean(xᵢ²)` supplied. -/
@[expose] def orderParamRms (num r1 r2 : α) : α := if num = 0 then 0 else num / ((r1 + r2) / 2)

/-- A sum of squares that vanishes has vanishing terms. -/
theorem eq_zero_of_finSum_mul_self_eq_zero {n : Nat} {a : Fin n → α}
    (h : finSum (fun i => a i * a i) = 0) (i : Fin n) : a i = 0 := by
  have hle := le_finSum_of_nonneg (f := fun i => a i * a i) (fun i => mul_self_nonneg' (a i)) i
  have h0 := mul_self_nonneg' (a i)
  have hz : a i * a i = 0 := by grind
  apply Classical.byContradiction; intro hne
  have := Field.mul_inv_cancel hne
  have : a i * a i * (a i)⁻¹ = 0 := by rw [hz]; grind
  grind

/-- Cauchy–Schwarz in the form the bound needs: `−Σ aᵢbᵢ ≤ n r₁ r₂` when
`r₁² = Σ aᵢ²/n`, `r₂² = Σ bᵢ²/n`, `r₁, r₂ ≥ 0`. -/
theorem neg_finSum_mul_le {n : Nat} (hn : 0 < n) (a b : Fin n → α) {r1 r2 : α}
    (hr1 : 0 ≤ r1) (hr2 : 0 ≤ r2) (h1 : r1 * r1 = meanSq a) (h2 : r2 * r2 = meanSq b) :
    -finSum (fun i => a i * b i) ≤ (n : α) * (r1 * r2) := by
  have hn0 := natCast_ne_zero_of_pos (α := α) hn
  have hinv := Field.mul_inv_cancel hn0
  have hnpos : (0 : α) < n := by
    have := OrderedRing.natCast_nonneg (R := α) (a := n); grind
  have hA : finSum (fun i => a i * a i) = (n : α) * (r1 * r1) := by
    rw [h1]; simp only [meanSq]; grind
  have hB : finSum (fun i => b i * b i) = (n : α) * (r2 * r2) := by
    rw [h2]; simp only [meanSq]; grind
  by_cases hz : r1 * r2 = 0
  · have hab : finSum (fun i => a i * b i) = 0 := by
      by_cases h10 : r1 = 0
      · have ha : finSum (fun i => a i * a i) = 0 := by rw [hA, h10]; grind
        exact finSum_eq_zero fun i => by rw [eq_zero_of_finSum_mul_self_eq_zero ha i]; grind
      · have h20 : r2 = 0 := by
          apply Classical.byContradiction; intro h20
          have := Field.mul_inv_cancel h10
          have : r1⁻¹ * (r1 * r2) = 0 := by rw [hz]; grind
          grind
        have hb : finSum (fun i => b i * b i) = 0 := by rw [hB, h20]; grind
        exact finSum_eq_zero fun i => by rw [eq_zero_of_finSum_mul_self_eq_zero hb i]; grind
    rw [hab, hz]; grind
  · have hpos : 0 < r1 * r2 := by
      have := OrderedRing.mul_nonneg hr1 hr2; grind
    have hsum : 0 ≤ finSum (fun i => (r2 * a i + r1 * b i) * (r2 * a i + r1 * b i)) :=
      finSum_nonneg fun i => mul_self_nonneg' _
    have hexp : finSum (fun i => (r2 * a i + r1 * b i) * (r2 * a i + r1 * b i)) =
        r2 * r2 * finSum (fun i => a i * a i) + (r1 * r2 + r1 * r2) * finSum (fun i => a i * b i) +
          r1 * r1 * finSum (fun i => b i * b i) := by
      rw [mul_finSum, mul_finSum, mul_finSum, ← finSum_add, ← finSum_add]
      congr 1; funext i; grind
    rw [hexp, hA, hB] at hsum
    -- `0 ≤ 2 r₁r₂ (n r₁r₂ + Σ ab)`
    have hfac : 0 ≤ (r1 * r2) * ((n : α) * (r1 * r2) + finSum (fun i => a i * b i)) := by
      have e : r2 * r2 * ((n : α) * (r1 * r1)) + (r1 * r2 + r1 * r2) * finSum (fun i => a i * b i) +
          r1 * r1 * ((n : α) * (r2 * r2)) =
          (r1 * r2 + r1 * r2) * ((n : α) * (r1 * r2) + finSum (fun i => a i * b i)) := by grind
      rw [e] at hsum
      grind
    rcases OrderedRing.mul_nonneg_iff.mp hfac with ⟨_, h⟩ | ⟨h, _⟩
    · grind
    · grind

/-- The triangle inequality for the RMS (Minkowski): `num ≤ r₁ + r₂`. -/
theorem rms_sub_le {n : Nat} (hn : 0 < n) (x1 x2 : Fin n → α) {num r1 r2 : α}
    (hr1 : 0 ≤ r1) (hr2 : 0 ≤ r2)
    (hd : num * num = meanSq (fun i => x1 i - x2 i)) (h1 : r1 * r1 = meanSq x1)
    (h2 : r2 * r2 = meanSq x2) : num ≤ r1 + r2 := by
  have hn0 := natCast_ne_zero_of_pos (α := α) hn
  have hinv := Field.mul_inv_cancel hn0
  have hnpos : (0 : α) < n := by
    have := OrderedRing.natCast_nonneg (R := α) (a := n); grind
  have hcs := neg_finSum_mul_le hn x1 x2 hr1 hr2 h1 h2
  have hA : finSum (fun i => x1 i * x1 i) = (n : α) * (r1 * r1) := by
    rw [h1]; simp only [meanSq]; grind
  have hB : finSum (fun i => x2 i * x2 i) = (n : α) * (r2 * r2) := by
    rw [h2]; simp only [meanSq]; grind
  have hD : finSum (fun i => (x1 i - x2 i) * (x1 i - x2 i)) = (n : α) * (num * num) := by
    rw [hd]; simp only [meanSq]; grind
  have hexp : finSum (fun i => (x1 i - x2 i) * (x1 i - x2 i)) =
      finSum (fun i => x1 i * x1 i) + finSum (fun i => x2 i * x2 i) -
        (1 + 1) * finSum (fun i => x1 i * x2 i) := by
    rw [mul_finSum, ← finSum_add, ← finSum_sub]
    congr 1; funext i; grind
  rw [hD, hA, hB] at hexp
  -- `n num² ≤ n (r₁ + r₂)²`, so `num² ≤ (r₁ + r₂)²`
  have hsq : (n : α) * (num * num) ≤ (n : α) * ((r1 + r2) * (r1 + r2)) := by grind
  have hsq' : num * num ≤ (r1 + r2) * (r1 + r2) := by
    have hi := inv_pos_of_pos hnpos
    have k := OrderedRing.mul_le_mul_of_nonneg_left hsq (Std.le_of_lt hi)
    have hinv' : (n : α)⁻¹ * (n : α) = 1 := by grind
    have e1 : (n : α)⁻¹ * ((n : α) * (num * num)) = num * num := by
      rw [← Semiring.mul_assoc, hinv', Semiring.one_mul]
    have e2 : (n : α)⁻¹ * ((n : α) * ((r1 + r2) * (r1 + r2))) = (r1 + r2) * (r1 + r2) := by
      rw [← Semiring.mul_assoc, hinv', Semiring.one_mul]
    rw [e1, e2] at k; exact k
  apply Classical.byContradiction; intro hlt
  have hlt' : r1 + r2 < num := by grind
  have hpos : 0 < (num - (r1 + r2)) * (num + (r1 + r2)) :=
    OrderedRing.mul_pos (by grind) (by grind)
  grind

/-- [order_parameter_rms_bound] The RMS form of the author's pairwise order parameter is
at most 2 (claims ledger N4; `audit_lib.order_pair`, the paper's E7 order parameter
measured on two continuations): for rows `x₁, x₂` of length `n ≥ 1`, with
`num = √mean((x₁ − x₂)²)`, `rᵢ = √mean(xᵢ²)` given as the nonnegative numbers with those
squares, `num ≤ r₁ + r₂` (the triangle inequality for the RMS), and
`0 ≤ num / (½(r₁ + r₂)) ≤ 2` (`0` when `num = 0`). -/
theorem order_parameter_rms_bound {n : Nat} (hn : 0 < n) (x1 x2 : Fin n → α) (num r1 r2 : α)
    (hnum : 0 ≤ num) (hr1 : 0 ≤ r1) (hr2 : 0 ≤ r2)
    (hd : num * num = meanSq (fun i => x1 i - x2 i)) (h1 : r1 * r1 = meanSq x1)
    (h2 : r2 * r2 = meanSq x2) :
    num ≤ r1 + r2 ∧ 0 ≤ orderParamRms num r1 r2 ∧ orderParamRms num r1 r2 ≤ 2 := by
  have hle := rms_sub_le hn x1 x2 hr1 hr2 hd h1 h2
  refine ⟨hle, ?_⟩
  unfold orderParamRms
  split
  · exact ⟨Std.le_refl 0, by have := OrderedRing.zero_lt_one (R := α); grind⟩
  · next h0 =>
    have hnp : 0 < num := by grind
    have hs : 0 < (r1 + r2) / 2 := by
      have h2p : (0 : α) < 2 := by have := OrderedRing.zero_lt_one (R := α); grind
      rw [Field.div_eq_mul_inv]
      exact OrderedRing.mul_pos (by grind) (inv_pos_of_pos h2p)
    have hsi := inv_pos_of_pos hs
    have hs0 : (r1 + r2) / 2 ≠ 0 := by grind
    have hi := Field.mul_inv_cancel hs0
    rw [Field.div_eq_mul_inv]
    refine ⟨Std.le_of_lt (OrderedRing.mul_pos hnp hsi), ?_⟩
    -- `num ≤ 2 · ((r₁ + r₂)/2)`, multiply by the positive inverse
    have h2s : num ≤ 2 * ((r1 + r2) / 2) := by
      have e : 2 * ((r1 + r2) / 2) = r1 + r2 := by
        have h20 : (2 : α) ≠ 0 := by have := OrderedRing.zero_lt_one (R := α); grind
        have := Field.mul_inv_cancel h20
        rw [Field.div_eq_mul_inv]; grind
      rw [e]; exact hle
    have := OrderedRing.mul_le_mul_of_nonneg_right h2s (Std.le_of_lt hsi)
    grind

/-- [order_parameter_rms_bound] The bound is attained: `x₂ = −x₁` with `r = √mean(x₁²) > 0`
gives `num = 2r` and the RMS form `2`. -/
theorem order_parameter_rms_bound_sharp {n : Nat} (x : Fin n → α) {r : α} (hr : 0 < r)
    (h : r * r = meanSq x) :
    (r + r) * (r + r) = meanSq (fun i => x i - -x i) ∧ orderParamRms (r + r) r r = 2 := by
  refine ⟨?_, ?_⟩
  · have e : meanSq (fun i => x i - -x i) = (1 + 1 + 1 + 1) * meanSq x := by
      simp only [meanSq]
      have hf : (fun i => (x i - -x i) * (x i - -x i)) = fun i => (1 + 1 + 1 + 1) * (x i * x i) :=
        funext fun i => by grind
      rw [hf, ← mul_finSum]; grind
    rw [e, ← h]; grind
  · unfold orderParamRms
    rw [if_neg (by grind)]
    have h20 : (2 : α) ≠ 0 := by have := OrderedRing.zero_lt_one (R := α); grind
    have hr0 : r ≠ 0 := by grind
    have i2 := Field.mul_inv_cancel h20
    have ir := Field.mul_inv_cancel hr0
    have e : (r + r) / 2 = r := by rw [Field.div_eq_mul_inv]; grind
    rw [e, Field.div_eq_mul_inv]; grind

/-- [order_parameter_rms_bound] The hypotheses are met over `Rat` (kernel-checked):
`x₁ = (1, 7)`, `x₂ = (7, 1)` have `r₁ = r₂ = 5`, `num = 6`, RMS form `6/5 ≤ 2`. -/
theorem order_parameter_rms_bound_rat :
    meanSq (fun i : Fin 2 => (if i.val = 0 then 1 else 7 : Rat)) = 5 * 5 ∧
      meanSq (fun i : Fin 2 => (if i.val = 0 then 7 else 1 : Rat)) = 5 * 5 ∧
      meanSq (fun i : Fin 2 => (if i.val = 0 then 1 else 7 : Rat) - (if i.val = 0 then 7 else 1)) = 6 * 6 ∧
      orderParamRms (6 : Rat) 5 5 = 6 / 5 := by
  refine ⟨?_, ?_, ?_, ?_⟩
  · simp only [meanSq, finSum_succ, finSum_zero_len]; decide +kernel
  · simp only [meanSq, finSum_succ, finSum_zero_len]; decide +kernel
  · simp only [meanSq, finSum_succ, finSum_zero_len]; decide +kernel
  · rw [orderParamRms, if_neg (by decide +kernel)]; decide +kernel

end Pldr

end
