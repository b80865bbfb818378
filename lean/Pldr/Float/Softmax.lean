module

public import Pldr.Float.Sum
public import Pldr.Softmax

/-!
# Floating-point softmax rows and attention outputs  (`[fp_softmax]`, `[fp_head_output]`)

The row softmax as kernels compute it: shift the scores by a number `m` (the row maximum
in practice; any number works, `softmax_shift`), evaluate `exp` on the rounded
differences with a library exponential of relative error `u_exp`, add the exponentials in
any order, divide. The exponential is the library's `ExpMap` (the abstract `exp`); the
*computed* exponentials `ê_j` enter through `|ê_j − e_j| ≤ (c_e − 1) e_j + η_e`
(`e_j = exp(x_j − m)`; `η_e` the absolute error below the normal range, where a library
exponential returns `0` or a subnormal), and `fp_softmax_exp` supplies `c_e` from the
three sources of error: the score's own error `Δ`, the rounding of `x − m`, and `u_exp`.
That step needs one analytic law of the exponential beyond `ExpMap`,
`ExpMap.AddOneLe : y + 1 ≤ exp y` (`Real.add_one_le_exp`); over `Rat` no `ExpMap`
satisfies it (every `ExpMap Rat` is `≡ 1`, `ExpMap.eq_one_of_rat`), so its intended
model is `Real.exp`, outside core Lean.

* `[fp_softmax]` `fp_softmax_exp`: `|x̂ − x| ≤ Δ`, `|x̂ − m| ≤ M`, `a = Δ + u M < 1`, a
  computed exponential with `|ê(z) − exp z| ≤ u_exp exp z + η_e`:
  `|ê(fl(x̂ − m)) − exp(x − m)| ≤ ((1 − a)⁻¹ (1 + u_exp) − 1) exp(x − m) + η_e`.
* `absv_div_sub_div_le`: a ratio with `|N̂ − N| ≤ a A + H_N`, `|D̂ − D| ≤ b D + H_D`,
  `|N| ≤ A`, `D⁻¹ ≤ σ`, `β = b + H_D σ < 1`:
  `|N̂/D̂ − N/D| ≤ ((a + β) A/D + H_N σ)/(1 − β)`.
* `[fp_softmax]` `fp_softmax`: each computed weight `fl(ê_j / ŝ)` (`ŝ` the computed sum
  in any order, the quotient rounded at `u_d` with underflow `η_d`):
  `|p̂_j − p_j| ≤ (1 + u_d)((c_e − 1 + β) p_j + η_e σ)/(1 − β) + u_d p_j + η_d`,
  `β = (1 + γ_{n−1}) c_e − 1 + (1 + γ_{n−1}) n η_e σ`, `(Σ e)⁻¹ ≤ σ`.
* `[fp_head_output]` `fp_head_output_of_bounds`: the output `Σ_j softmax(x)_j v_j` from
  any accumulated numerator and denominator with those bounds, the quotient and final
  roundings within `w |·| + η_y`: `≤ (1 + w)((a + β) μ + H_N σ)/(1 − β) + w μ + η_y`,
  `μ = Σ_j softmax(x)_j |v_j|`; `fp_head_output` the fused kernel (numerator and
  denominator sums in any order, products and the rounding of `ê_j` to the input format
  inside a per-term `e_p`). The normalise-first order (weights, then `p V`) and the
  online-softmax step of blocked kernels are in `Pldr.Float.Head`.

Masking: a masked entry is an exact `0` on both sides (its exponential underflows to `0`),
so a masked row is the row of its allowed entries; the statements are for unmasked rows.
The floating-point model is that of `Pldr.Float.Model`. There are no unproved
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

/-- `a < b → a ≤ b`. -/
theorem le_of_lt' {a b : α} (h : a < b) : a ≤ b := by grind

/-! ### The exponential -/

/-- The analytic law `y + 1 ≤ exp y` of the real exponential (`Real.add_one_le_exp`), a
predicate on an `ExpMap`. -/
@[expose] def ExpMap.AddOneLe (E : ExpMap α) : Prop := ∀ y, y + 1 ≤ E.exp y

/-- A relative error `r < 1` on a nonnegative number is a factor `1/(1 − r)`. -/
theorem within_of_absv_sub_le {x y r : α} (hy : 0 ≤ y) (hr0 : 0 ≤ r) (hr : r < 1)
    (h : absv (x - y) ≤ r * y) : Within (1 - r)⁻¹ x y := by
  obtain ⟨h1, h2⟩ := absv_le_iff.mp h
  have hpos : 0 < 1 - r := by grind
  rw [Within, Field.inv_inv]
  constructor
  · grind
  · -- (1 + r) y ≤ (1 − r)⁻¹ y, as (1 + r)(1 − r) ≤ 1
    have hrr : 0 ≤ r * r := OrderedRing.mul_nonneg hr0 hr0
    have h3 := le_mul_inv_of_mul_le (a := 1 + r) (b := 1) hpos (by grind)
    have := OrderedRing.mul_le_mul_of_nonneg_right h3 hy
    grind

/-- Perturbing the argument of `exp` by `|d| ≤ a < 1` moves it by a factor `1/(1 − a)`
(needs `ExpMap.AddOneLe`). -/
theorem ExpMap.within_exp_add (E : ExpMap α) (hE : E.AddOneLe) {y d a : α}
    (hd : absv d ≤ a) (ha : a < 1) : Within (1 - a)⁻¹ (E.exp (y + d)) (E.exp y) := by
  obtain ⟨h1, h2⟩ := absv_le_iff.mp hd
  have hpos : 0 < 1 - a := by grind
  have hey := E.exp_pos y
  have hed := E.exp_pos d
  have hend := E.exp_pos (-d)
  -- exp d ≥ 1 + d ≥ 1 − a and exp (−d) ≥ 1 − a, exp d · exp (−d) = 1
  have l1 := hE d
  have l2 := hE (-d)
  have prod : E.exp d * E.exp (-d) = 1 := by
    rw [← E.exp_add]; have : d + -d = 0 := by grind
    rw [this, E.exp_zero']
  have up : E.exp d ≤ (1 - a)⁻¹ := by
    -- exp d = (exp (−d))⁻¹ ≤ (1 − a)⁻¹
    have hinv : E.exp d = (E.exp (-d))⁻¹ := by
      have hne : E.exp (-d) ≠ 0 := by grind
      have := Field.mul_inv_cancel hne
      grind
    rw [hinv]; exact inv_le_inv_of_le hpos (by grind)
  rw [E.exp_add]
  constructor
  · rw [Field.inv_inv]
    have := OrderedRing.mul_le_mul_of_nonneg_left (by grind : 1 - a ≤ E.exp d) (by grind : 0 ≤ E.exp y)
    grind
  · have := OrderedRing.mul_le_mul_of_nonneg_left up (by grind : 0 ≤ E.exp y)
    grind

/-- [fp_softmax] One computed exponential of a shifted score: the score `x̂` is within `Δ`
of the exact `x`, the shift `m` is any number with `|x̂ − m| ≤ M`, the difference is
rounded once (`R`; a difference of floating-point numbers never underflows), and the
library exponential `ê` has relative error `u_exp` and absolute error `η_e` (its
underflow: `ê(z)` is `0` or subnormal where `exp z` is below the normal range); with
`a = Δ + u M < 1`:
`|ê(fl(x̂ − m)) − exp(x − m)| ≤ ((1 − a)⁻¹ (1 + u_exp) − 1) exp(x − m) + η_e`
(needs `ExpMap.AddOneLe`). -/
theorem fp_softmax_exp (E : ExpMap α) (hE : E.AddOneLe) (R : Rounding α)
    (expc : α → α) {uexp ηe : α} (hue0 : 0 ≤ uexp)
    (hexp : ∀ z, absv (expc z - E.exp z) ≤ uexp * E.exp z + ηe) {x xhat m Δ M : α}
    (hx : absv (xhat - x) ≤ Δ) (hM : absv (xhat - m) ≤ M) (ha : Δ + R.u * M < 1) :
    absv (expc (R.fl (xhat - m)) - E.exp (x - m)) ≤
      ((1 - (Δ + R.u * M))⁻¹ * (1 + uexp) - 1) * E.exp (x - m) + ηe := by
  have hr := R.rel (xhat - m)
  have hd : absv (R.fl (xhat - m) - (x - m)) ≤ Δ + R.u * M := by
    have := absv_add_le (R.fl (xhat - m) - (xhat - m)) (xhat - x)
    have e : R.fl (xhat - m) - (xhat - m) + (xhat - x) = R.fl (xhat - m) - (x - m) := by grind
    rw [e] at this
    have := OrderedRing.mul_le_mul_of_nonneg_left hM R.u_nonneg
    grind
  have w1 := E.within_exp_add hE (y := x - m) hd ha
  have e : x - m + (R.fl (xhat - m) - (x - m)) = R.fl (xhat - m) := by grind
  rw [e] at w1
  have hΔ : 0 ≤ Δ := Std.le_trans (absv_nonneg _) hx
  have hM0 : 0 ≤ M := Std.le_trans (absv_nonneg _) hM
  have hpos : 0 < 1 - (Δ + R.u * M) := by grind
  have hc1 : 1 ≤ (1 - (Δ + R.u * M))⁻¹ :=
    one_le_inv hpos (by have := OrderedRing.mul_nonneg R.u_nonneg hM0; grind)
  generalize hc : (1 - (Δ + R.u * M))⁻¹ = c at *
  have ez := E.exp_pos (x - m)
  have d1 := w1.absv_sub_le hc1 (le_of_lt' ez)
  have d2 := w1.2
  have d3 := hexp (R.fl (xhat - m))
  have d4 := OrderedRing.mul_le_mul_of_nonneg_left d2 hue0
  have t := absv_add_le (expc (R.fl (xhat - m)) - E.exp (R.fl (xhat - m)))
    (E.exp (R.fl (xhat - m)) - E.exp (x - m))
  have e2 : expc (R.fl (xhat - m)) - E.exp (R.fl (xhat - m)) +
      (E.exp (R.fl (xhat - m)) - E.exp (x - m)) = expc (R.fl (xhat - m)) - E.exp (x - m) := by
    grind
  rw [e2] at t
  grind

/-! ### Quotients -/

/-- The softmax of `x` as the quotient of shifted exponentials. -/
theorem softmax_eq_div_shift (E : ExpMap α) {n : Nat} (x : Fin n → α) (m : α) (j : Fin n) :
    softmax E x j = E.exp (x j - m) / finSum (fun l => E.exp (x l - m)) := by
  have h := congrFun (softmax_shift_unmasked E x (-m)) j
  rw [← h]
  simp only [softmax, msoftmax, if_true]
  have e : ∀ l, x l + -m = x l - m := fun l => by grind
  simp only [e]

/-- `|x d⁻¹| = |x| d⁻¹` for `d > 0`. -/
theorem absv_mul_inv_of_pos {x d : α} (hd : 0 < d) : absv (x * d⁻¹) = absv x * d⁻¹ := by
  rw [absv_mul]
  have : absv d⁻¹ = d⁻¹ := by
    have := inv_pos_of_pos hd; unfold absv; simp [(le_of_lt' this)]
  rw [this]

/-- A perturbed ratio: `|N̂ − N| ≤ a A + H_N`, `|D̂ − D| ≤ b D + H_D` with `D > 0`,
`|N| ≤ A`, `D⁻¹ ≤ σ` and `β = b + H_D σ < 1`:
`|N̂/D̂ − N/D| ≤ ((a + β)(A/D) + H_N σ)/(1 − β)`. -/
theorem absv_div_sub_div_le {N N' D D' A a b HN HD σ : α} (hD : 0 < D) (hNA : absv N ≤ A)
    (ha : 0 ≤ a) (hb0 : 0 ≤ b) (hHN : 0 ≤ HN) (hHD : 0 ≤ HD) (hσ : D⁻¹ ≤ σ)
    (hlt : b + HD * σ < 1) (hN : absv (N' - N) ≤ a * A + HN)
    (hD' : absv (D' - D) ≤ b * D + HD) :
    absv (N' / D' - N / D) ≤
      ((a + b + HD * σ) * (A * D⁻¹) + HN * σ) * (1 - b - HD * σ)⁻¹ := by
  obtain ⟨d1, d2⟩ := absv_le_iff.mp hD'
  have hDi := inv_pos_of_pos hD
  have hDD : D * D⁻¹ = 1 := Field.mul_inv_cancel (by grind)
  have hσD : 1 ≤ σ * D := by
    have := OrderedRing.mul_le_mul_of_nonneg_right hσ (le_of_lt' hD); grind
  have hHDσ : HD ≤ HD * σ * D := by
    have := OrderedRing.mul_le_mul_of_nonneg_left hσD hHD; grind
  have hA : 0 ≤ A := Std.le_trans (absv_nonneg _) hNA
  generalize hβ : b + HD * σ = β at *
  have e1m : 1 - b - HD * σ = 1 - β := by rw [← hβ]; grind
  rw [e1m]
  have hlow : (1 - β) * D ≤ D' := by
    have : b * D + HD * σ * D = β * D := by rw [← hβ]; grind
    grind
  have hpos : 0 < (1 - β) * D := OrderedRing.mul_pos (by grind) hD
  have hD'pos : 0 < D' := by grind
  have hinv : D'⁻¹ ≤ ((1 - β) * D)⁻¹ := inv_le_inv_of_le hpos hlow
  have hD'i := inv_pos_of_pos hD'pos
  have e : N' / D' - N / D = (N' - N) * D'⁻¹ - N * D⁻¹ * ((D' - D) * D'⁻¹) := by
    have h2 : D' * D'⁻¹ = 1 := Field.mul_inv_cancel (by grind)
    simp only [Field.div_eq_mul_inv]; grind
  rw [e]
  have t := absv_add_le ((N' - N) * D'⁻¹) (-(N * D⁻¹ * ((D' - D) * D'⁻¹)))
  have en : ∀ z : α, absv (-z) = absv z := fun z => by unfold absv; split <;> split <;> grind
  rw [en] at t
  have e2 : (N' - N) * D'⁻¹ + -(N * D⁻¹ * ((D' - D) * D'⁻¹)) =
      (N' - N) * D'⁻¹ - N * D⁻¹ * ((D' - D) * D'⁻¹) := by grind
  rw [e2] at t
  rw [absv_mul_inv_of_pos hD'pos] at t
  rw [absv_mul, absv_mul_inv_of_pos hD, absv_mul_inv_of_pos hD'pos] at t
  have hNa : 0 ≤ a * A + HN := by have := OrderedRing.mul_nonneg ha hA; grind
  have hDb : 0 ≤ b * D + HD := by have := OrderedRing.mul_nonneg hb0 (le_of_lt' hD); grind
  have t1 : absv (N' - N) * D'⁻¹ ≤ (a * A + HN) * ((1 - β) * D)⁻¹ :=
    mul_le_mul_of_le_of_le hN hinv hNa (le_of_lt' hD'i)
  have t2a : absv N * D⁻¹ ≤ A * D⁻¹ := OrderedRing.mul_le_mul_of_nonneg_right hNA (le_of_lt' hDi)
  have t2b : absv (D' - D) * D'⁻¹ ≤ (b * D + HD) * ((1 - β) * D)⁻¹ :=
    mul_le_mul_of_le_of_le hD' hinv hDb (le_of_lt' hD'i)
  have t2 := mul_le_mul_of_le_of_le t2a t2b (OrderedRing.mul_nonneg hA (le_of_lt' hDi))
    (OrderedRing.mul_nonneg (absv_nonneg _) (le_of_lt' hD'i))
  have hbi := inv_pos_of_pos (a := 1 - β) (by grind)
  -- the sum of the two bounds, rewritten
  have ealg : (a * A + HN) * ((1 - β) * D)⁻¹ + A * D⁻¹ * ((b * D + HD) * ((1 - β) * D)⁻¹) =
      ((a + b) * (A * D⁻¹) + HN * D⁻¹ + HD * D⁻¹ * (A * D⁻¹)) * (1 - β)⁻¹ := by
    rw [Field.inv_mul]; grind
  have m1 : HN * D⁻¹ ≤ HN * σ := OrderedRing.mul_le_mul_of_nonneg_left hσ hHN
  have m2 : HD * D⁻¹ * (A * D⁻¹) ≤ HD * σ * (A * D⁻¹) :=
    OrderedRing.mul_le_mul_of_nonneg_right (OrderedRing.mul_le_mul_of_nonneg_left hσ hHD)
      (OrderedRing.mul_nonneg hA (le_of_lt' hDi))
  have m3 : ((a + b) * (A * D⁻¹) + HN * D⁻¹ + HD * D⁻¹ * (A * D⁻¹)) * (1 - β)⁻¹ ≤
      ((a + b) * (A * D⁻¹) + HN * σ + HD * σ * (A * D⁻¹)) * (1 - β)⁻¹ :=
    OrderedRing.mul_le_mul_of_nonneg_right (by grind) (le_of_lt' hbi)
  have efin : ((a + b) * (A * D⁻¹) + HN * σ + HD * σ * (A * D⁻¹)) * (1 - β)⁻¹ =
      ((a + β) * (A * D⁻¹) + HN * σ) * (1 - β)⁻¹ := by rw [← hβ]; grind
  grind

/-! ### Softmax weights -/

/-- [fp_softmax] A softmax row in floating point, in the normalise-first order (the
float64 reference): computed exponentials `ê_j` within `(c_e − 1) e_j + η_e` of
`e_j = exp(x_j − m)` (`fp_softmax_exp`; any shift `m`), added in any order at `u`
(`(n − 1) u < 1`), each quotient `ê_j / ŝ` rounded (`|ŷ − q| ≤ u_d |q| + η_d`). With
`b = (1 + γ_{n−1}) c_e − 1`, `H = (1 + γ_{n−1}) n η_e`, `(Σ_l e_l)⁻¹ ≤ σ` and
`β = b + H σ < 1`:
`|ŷ − softmax(x)_j| ≤ (1 + u_d)((c_e − 1 + β) p_j + η_e σ)/(1 − β) + u_d p_j + η_d`,
`p_j = softmax(x)_j`. -/
theorem fp_softmax {n : Nat} (E : ExpMap α) (R : Rounding α) (x : Fin n → α) (m : α)
    (ehat : Fin n → α) {ce ηe ud ηd σ b H : α} (hce : 1 ≤ ce) (hηe : 0 ≤ ηe) (hud : 0 ≤ ud)
    (he : ∀ j, absv (ehat j - E.exp (x j - m)) ≤ (ce - 1) * E.exp (x j - m) + ηe)
    (t : STree (Fin n)) (ht : t.IsOrder α) (hn1 : 1 ≤ n) (hn : ((n - 1 : Nat) : α) * R.u < 1)
    (hb : b = (1 + gam R.u (n - 1)) * ce - 1) (hH : H = (1 + gam R.u (n - 1)) * ((n : α) * ηe))
    (hσ : (finSum fun l => E.exp (x l - m))⁻¹ ≤ σ) (hlt : b + H * σ < 1) (j : Fin n) (y : α)
    (hy : absv (y - ehat j / t.eval R.fl ehat) ≤ ud * absv (ehat j / t.eval R.fl ehat) + ηd) :
    absv (y - softmax E x j) ≤
      (1 + ud) * (((ce - 1 + b + H * σ) * softmax E x j + ηe * σ) * (1 - b - H * σ)⁻¹) +
        ud * softmax E x j + ηd := by
  have hu := R.u_nonneg
  have g0 := gam_nonneg hu hn
  have epos : ∀ l, 0 < E.exp (x l - m) := fun l => E.exp_pos _
  have hD : 0 < finSum (fun l => E.exp (x l - m)) := by
    obtain ⟨k, hk⟩ : ∃ k, n = k + 1 := ⟨n - 1, by omega⟩
    subst hk
    rw [finSum_succ]
    have := finSum_nonneg (fun l : Fin k => le_of_lt' (epos l.castSucc))
    have := epos (Fin.last k); grind
  have hMD : ∀ l, absv (E.exp (x l - m)) ≤ E.exp (x l - m) := fun l => by
    unfold absv; simp [le_of_lt' (epos l)]; grind
  have hDen := fp_summation_perturbed R (by grind : (0 : α) ≤ ce - 1) (fun _ => hηe) hMD he t ht hn
  rw [finSum_const] at hDen
  have eb : (1 + gam R.u (n - 1)) * (1 + (ce - 1)) - 1 = b := by rw [hb]; grind
  rw [eb, ← hH] at hDen
  have hb0 : 0 ≤ b := by
    rw [hb]; have := OrderedRing.mul_le_mul_of_nonneg_left (by grind : (1 : α) ≤ 1 + gam R.u (n - 1))
      (by grind : (0 : α) ≤ ce)
    grind
  have hH0 : 0 ≤ H := by
    rw [hH]; have : (0 : α) ≤ n := OrderedRing.natCast_nonneg
    exact OrderedRing.mul_nonneg (by grind) (OrderedRing.mul_nonneg this hηe)
  have hNj : absv (ehat j - E.exp (x j - m)) ≤ (ce - 1) * E.exp (x j - m) + ηe := he j
  have hr := absv_div_sub_div_le hD (hMD j) (by grind : (0 : α) ≤ ce - 1) hb0 hηe hH0 hσ hlt hNj
    hDen
  rw [← softmax_eq_div_shift E x m j] at hr
  have hp0 : 0 ≤ softmax E x j := by
    rw [softmax_eq_div_shift E x m j, Field.div_eq_mul_inv]
    exact le_of_lt' (OrderedRing.mul_pos (epos j) (inv_pos_of_pos hD))
  have ep : E.exp (x j - m) * (finSum fun l => E.exp (x l - m))⁻¹ = softmax E x j := by
    rw [softmax_eq_div_shift E x m j, Field.div_eq_mul_inv]
  rw [ep] at hr
  generalize hQ : ehat j / t.eval R.fl ehat = Q at *
  generalize hP : softmax E x j = P at *
  generalize hr' : ((ce - 1 + b + H * σ) * P + ηe * σ) * (1 - b - H * σ)⁻¹ = r at hr
  have hQb : absv Q ≤ P + r := by
    have t := absv_add_le (Q - P) P
    have e : Q - P + P = Q := by grind
    rw [e, show absv P = P by unfold absv; simp [hp0]] at t; grind
  have := OrderedRing.mul_le_mul_of_nonneg_left hQb hud
  have t := absv_add_le (y - Q) (Q - P)
  have e : y - Q + (Q - P) = y - P := by grind
  rw [e] at t
  grind

/-! ### Attention outputs -/

/-- The output row as the quotient of shifted sums. -/
theorem softmax_output_eq (E : ExpMap α) {n : Nat} (x v : Fin n → α) (m : α) :
    finSum (fun j => softmax E x j * v j) =
      finSum (fun j => E.exp (x j - m) * v j) * (finSum fun l => E.exp (x l - m))⁻¹ := by
  rw [finSum_mul]; congr 1; funext j
  rw [softmax_eq_div_shift E x m j, Field.div_eq_mul_inv]; grind

/-- [fp_head_output] The attention output from accumulated numerator and denominator,
whatever the algorithm (one pass, blocked, online with rescaling,
`fp_head_output_rescale`): `N̂` within `a A + H_N` of `N = Σ_j e_j v_j`
(`A = Σ_j e_j |v_j|`, `e_j = exp(x_j − m)`), `D̂` within `b D + H_D` of `D = Σ_j e_j`,
`ŷ` within `w |N̂/D̂| + η_y` of `N̂/D̂`, `D⁻¹ ≤ σ`, `β = b + H_D σ < 1`; with
`μ = Σ_j softmax(x)_j |v_j|` (`= A/D`):
`|ŷ − Σ_j softmax(x)_j v_j| ≤ (1 + w)((a + β) μ + H_N σ)/(1 − β) + w μ + η_y`. -/
theorem fp_head_output_of_bounds {n : Nat} (E : ExpMap α) (x v : Fin n → α) (m : α)
    (hn1 : 1 ≤ n) {Nh Dh y a b w HN HD ηy σ : α} (ha0 : 0 ≤ a) (hb0 : 0 ≤ b) (hw : 0 ≤ w)
    (hHN : 0 ≤ HN) (hHD : 0 ≤ HD) (hσ : (finSum fun l => E.exp (x l - m))⁻¹ ≤ σ)
    (hlt : b + HD * σ < 1)
    (hNum : absv (Nh - finSum (fun j => E.exp (x j - m) * v j)) ≤
      a * finSum (fun j => E.exp (x j - m) * absv (v j)) + HN)
    (hDen : absv (Dh - finSum (fun j => E.exp (x j - m))) ≤
      b * finSum (fun j => E.exp (x j - m)) + HD)
    (hy : absv (y - Nh / Dh) ≤ w * absv (Nh / Dh) + ηy) :
    absv (y - finSum (fun j => softmax E x j * v j)) ≤
      (1 + w) * (((a + b + HD * σ) * finSum (fun j => softmax E x j * absv (v j)) + HN * σ) *
        (1 - b - HD * σ)⁻¹) + w * finSum (fun j => softmax E x j * absv (v j)) + ηy := by
  have epos : ∀ l, 0 < E.exp (x l - m) := fun l => E.exp_pos _
  have hD : 0 < finSum (fun l => E.exp (x l - m)) := by
    obtain ⟨k, hk⟩ : ∃ k, n = k + 1 := ⟨n - 1, by omega⟩
    subst hk
    rw [finSum_succ]
    have := finSum_nonneg (fun l : Fin k => le_of_lt' (epos l.castSucc))
    have := epos (Fin.last k); grind
  have hMN : ∀ j, absv (E.exp (x j - m) * v j) ≤ E.exp (x j - m) * absv (v j) := fun j => by
    rw [absv_mul, show absv (E.exp (x j - m)) = E.exp (x j - m) by
      unfold absv; simp [le_of_lt' (epos j)]]; grind
  rw [softmax_output_eq E x v m, softmax_output_eq E x (fun j => absv (v j)) m]
  generalize hDdef : finSum (fun l => E.exp (x l - m)) = D at *
  generalize hA : finSum (fun j => E.exp (x j - m) * absv (v j)) = A at *
  generalize hN : finSum (fun j => E.exp (x j - m) * v j) = N at *
  have hNA : absv N ≤ A := by
    rw [← hN, ← hA]
    exact Std.le_trans (absv_finSum_le _) (finSum_le_finSum hMN)
  have hr := absv_div_sub_div_le hD hNA ha0 hb0 hHN hHD hσ hlt hNum hDen
  generalize hQ : Nh / Dh = Q at *
  have hDi := inv_pos_of_pos hD
  generalize hR : ((a + b + HD * σ) * (A * D⁻¹) + HN * σ) * (1 - b - HD * σ)⁻¹ = r at hr
  have hQb : absv Q ≤ A * D⁻¹ + r := by
    have := absv_add_le (Q - N / D) (N / D)
    have e : Q - N / D + N / D = Q := by grind
    rw [e] at this
    have hND : absv (N * D⁻¹) ≤ A * D⁻¹ := by
      rw [absv_mul_inv_of_pos hD]
      exact OrderedRing.mul_le_mul_of_nonneg_right hNA (le_of_lt' hDi)
    simp only [Field.div_eq_mul_inv] at this hr; grind
  have hyb := OrderedRing.mul_le_mul_of_nonneg_left hQb hw
  have t := absv_add_le (y - Q) (Q - N / D)
  have e : y - Q + (Q - N / D) = y - N / D := by grind
  rw [e] at t
  simp only [Field.div_eq_mul_inv] at t hr
  grind

/-- [fp_head_output] One attention output in floating point, in the fused-kernel order
(torch's CPU flash attention with one key block): exponentials `ê_j` within
`(c_e − 1) e_j + η_e` of `e_j = exp(x_j − m)` (`fp_softmax_exp`); numerator leaves `g_j`
within `e_p |ê_j v_j| + η_g j` of `ê_j v_j` (the product, the rounding of `ê_j` to the input
format before `p V`, their underflow); numerator `N̂` and denominator `D̂ = Σ ê_j`
accumulated in any order at `u` (`(n − 1) u < 1`); `ŷ` within `w |N̂/D̂| + η_y` of the
quotient. With `a = (1 + γ_{n−1}) c_e (1 + e_p) − 1`, `b = (1 + γ_{n−1}) c_e − 1`,
`H_N = (1 + γ_{n−1}) Σ_j ((1 + e_p) η_e |v_j| + η_g j)`, `H_D = (1 + γ_{n−1}) n η_e`,
`(Σ e)⁻¹ ≤ σ`, `β = b + H_D σ < 1`, `μ = Σ_j softmax(x)_j |v_j|`:
`|ŷ − Σ_j softmax(x)_j v_j| ≤ (1 + w)((a + β) μ + H_N σ)/(1 − β) + w μ + η_y`. -/
theorem fp_head_output {n : Nat} (E : ExpMap α) (R : Rounding α) (x v : Fin n → α) (m : α)
    (ehat g ηg : Fin n → α) {ce ηe ep w ηy σ a b HN HD : α} (hce : 1 ≤ ce) (hηe : 0 ≤ ηe)
    (hep : 0 ≤ ep) (hw : 0 ≤ w) (hηg : ∀ j, 0 ≤ ηg j)
    (he : ∀ j, absv (ehat j - E.exp (x j - m)) ≤ (ce - 1) * E.exp (x j - m) + ηe)
    (hg : ∀ j, absv (g j - ehat j * v j) ≤ ep * absv (ehat j * v j) + ηg j)
    (tn td : STree (Fin n)) (htn : tn.IsOrder α) (htd : td.IsOrder α) (hn1 : 1 ≤ n)
    (hn : ((n - 1 : Nat) : α) * R.u < 1)
    (ha : a = (1 + gam R.u (n - 1)) * (ce * (1 + ep)) - 1)
    (hb : b = (1 + gam R.u (n - 1)) * ce - 1)
    (hHN : HN = (1 + gam R.u (n - 1)) *
      finSum (fun j => (1 + ep) * ηe * absv (v j) + ηg j))
    (hHD : HD = (1 + gam R.u (n - 1)) * ((n : α) * ηe))
    (hσ : (finSum fun l => E.exp (x l - m))⁻¹ ≤ σ) (hlt : b + HD * σ < 1) (y : α)
    (hy : absv (y - tn.eval R.fl g / td.eval R.fl ehat) ≤
      w * absv (tn.eval R.fl g / td.eval R.fl ehat) + ηy) :
    absv (y - finSum (fun j => softmax E x j * v j)) ≤
      (1 + w) * (((a + b + HD * σ) * finSum (fun j => softmax E x j * absv (v j)) + HN * σ) *
        (1 - b - HD * σ)⁻¹) + w * finSum (fun j => softmax E x j * absv (v j)) + ηy := by
  have hu := R.u_nonneg
  have hce0 : 0 < ce := by grind
  have g0 := gam_nonneg hu hn
  have epos : ∀ l, 0 < E.exp (x l - m) := fun l => E.exp_pos _
  -- numerator leaves
  have leafN : ∀ j, absv (g j - E.exp (x j - m) * v j) ≤
      (ce * (1 + ep) - 1) * (E.exp (x j - m) * absv (v j)) +
        ((1 + ep) * ηe * absv (v j) + ηg j) := fun j => by
    have w1 := he j
    have habs : absv (ehat j) ≤ ce * E.exp (x j - m) + ηe := by
      have t := absv_add_le (ehat j - E.exp (x j - m)) (E.exp (x j - m))
      have e : ehat j - E.exp (x j - m) + E.exp (x j - m) = ehat j := by grind
      rw [e, show absv (E.exp (x j - m)) = E.exp (x j - m) by
        unfold absv; simp [le_of_lt' (epos j)]] at t
      grind
    have h1 := hg j
    rw [absv_mul] at h1
    have p1 : ep * (absv (ehat j) * absv (v j)) ≤
        ep * ((ce * E.exp (x j - m) + ηe) * absv (v j)) :=
      OrderedRing.mul_le_mul_of_nonneg_left
        (OrderedRing.mul_le_mul_of_nonneg_right habs (absv_nonneg _)) hep
    have p2 : absv ((ehat j - E.exp (x j - m)) * v j) ≤
        ((ce - 1) * E.exp (x j - m) + ηe) * absv (v j) := by
      rw [absv_mul]; exact OrderedRing.mul_le_mul_of_nonneg_right w1 (absv_nonneg _)
    have t := absv_add_le (g j - ehat j * v j) ((ehat j - E.exp (x j - m)) * v j)
    have e : g j - ehat j * v j + (ehat j - E.exp (x j - m)) * v j =
        g j - E.exp (x j - m) * v j := by grind
    rw [e] at t; grind
  have hMN : ∀ j, absv (E.exp (x j - m) * v j) ≤ E.exp (x j - m) * absv (v j) := fun j => by
    rw [absv_mul, show absv (E.exp (x j - m)) = E.exp (x j - m) by
      unfold absv; simp [le_of_lt' (epos j)]]; grind
  have hea : 0 ≤ ce * (1 + ep) - 1 := by
    have := OrderedRing.mul_le_mul_of_nonneg_left (by grind : (1 : α) ≤ 1 + ep) (le_of_lt' hce0)
    grind
  have hηN : ∀ j, 0 ≤ (1 + ep) * ηe * absv (v j) + ηg j := fun j => by
    have := OrderedRing.mul_nonneg (OrderedRing.mul_nonneg (by grind : (0 : α) ≤ 1 + ep) hηe)
      (absv_nonneg (v j))
    have := hηg j; grind
  have hNum := fp_summation_perturbed R hea hηN hMN leafN tn htn hn
  -- denominator leaves
  have hMD : ∀ j, absv (E.exp (x j - m)) ≤ E.exp (x j - m) := fun j => by
    unfold absv; simp [le_of_lt' (epos j)]; grind
  have hDen := fp_summation_perturbed R (by grind : (0 : α) ≤ ce - 1) (fun _ => hηe) hMD he
    td htd hn
  rw [finSum_const] at hDen
  have ea' : (1 + gam R.u (n - 1)) * (1 + (ce * (1 + ep) - 1)) - 1 = a := by rw [ha]; grind
  have eb' : (1 + gam R.u (n - 1)) * (1 + (ce - 1)) - 1 = b := by rw [hb]; grind
  rw [ea', ← hHN] at hNum; rw [eb', ← hHD] at hDen
  have ha0 : 0 ≤ a := by
    rw [ha]
    have := OrderedRing.mul_le_mul_of_nonneg_left (by grind : (1 : α) ≤ 1 + gam R.u (n - 1))
      (by grind : (0 : α) ≤ ce * (1 + ep))
    grind
  have hb0 : 0 ≤ b := by
    rw [hb]
    have := OrderedRing.mul_le_mul_of_nonneg_left (by grind : (1 : α) ≤ 1 + gam R.u (n - 1))
      (le_of_lt' hce0)
    grind
  have hHN0 : 0 ≤ HN := by
    rw [hHN]; exact OrderedRing.mul_nonneg (by grind) (finSum_nonneg hηN)
  have hHD0 : 0 ≤ HD := by
    rw [hHD]; have : (0 : α) ≤ n := OrderedRing.natCast_nonneg
    exact OrderedRing.mul_nonneg (by grind) (OrderedRing.mul_nonneg this hηe)
  exact fp_head_output_of_bounds E x v m hn1 ha0 hb0 hw hHN0 hHD0 hσ hlt hNum hDen hy

end Pldr

end
