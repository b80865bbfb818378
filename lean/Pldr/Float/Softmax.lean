module

public import Pldr.Float.Sum
public import Pldr.Softmax

/-!
# Floating-point softmax rows and attention outputs  (`[fp_softmax]`, `[fp_head_output]`)

The row softmax as kernels compute it: shift the scores by a number `m` (the row maximum
in practice; any number works, `softmax_shift`), evaluate `exp` on the rounded
differences with a library exponential of relative error `u_exp`, add the exponentials in
any order, divide. The exponential is the library's `ExpMap` (the abstract `exp`); the
*computed* exponentials enter as numbers within a factor `c_e` of the exact ones
(`Within`, `Pldr.Float.Model`), and `fp_softmax_exp_within` supplies that factor from the
three sources of error: the score's own error `Δ`, the rounding of `x − m`, and `u_exp`.
That step needs one analytic law of the exponential beyond `ExpMap`,
`ExpMap.AddOneLe : y + 1 ≤ exp y` (`Real.add_one_le_exp`); over `Rat` no `ExpMap`
satisfies it (every `ExpMap Rat` is `≡ 1`, `ExpMap.eq_one_of_rat`), so its intended
model is `Real.exp`, outside core Lean.

* `fp_softmax_exp_within`: `|x̂ − x| ≤ Δ`, `|x̂ − m| ≤ M`, `a = Δ + u M < 1`, a computed
  exponential `ê(z)` with `|ê(z) − exp z| ≤ u_exp exp z`: `ê(fl(x̂ − m))` is within
  `1/((1 − u_exp)(1 − a))` of `exp(x − m)`.
* `[fp_softmax]`: each computed weight `fl(ê_j / ŝ)` (`ŝ` the computed sum in any order)
  is within relative error `c_e² (1 + γ_n) − 1` of `softmax(x)_j`.
* `absv_div_sub_div_le`: a ratio `N̂/D̂` with `|N̂ − N| ≤ a A`, `|D̂ − D| ≤ b D`,
  `|N| ≤ A`, `b < 1`: `|N̂/D̂ − N/D| ≤ (a + b)/(1 − b) · A/D`.
* `[fp_head_output]`: one attention output `Σ_j softmax(x)_j v_j` computed as a fused
  kernel does (the numerator `Σ ê_j v_j` and the denominator `Σ ê_j` accumulated in any
  order, the products and a rounding of the weights to the input format inside a
  per-term relative error `e_p`, the quotient and the final roundings inside `w`):
  `|ŷ − Σ p_j v_j| ≤ ((1 + w)(1 + a)/(1 − b) − 1) Σ p_j |v_j|` with
  `1 + a = c_e (1 + e_p)(1 + γ_{n−1})`, `b = c_e (1 + γ_{n−1}) − 1 < 1`
  (`fp_head_output`), from the general statement for any accumulation with relative
  bounds `a`, `b` (`fp_head_output_of_bounds`). The normalise-first order (weights, then
  `p V`) and the online-softmax step of blocked kernels are in `Pldr.Float.Head`.

Masking: a masked entry is an exact `0` on both sides (its exponential underflows to `0`),
so a masked row is the row of its allowed entries; the statements are for unmasked rows.
The floating-point model and its limits are those of `Pldr.Float.Model`. There are no
unproved assumptions.
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

/-- [fp_softmax] The factor of one computed exponential of a shifted score: the score
`x̂` is within `Δ` of the exact `x`, the shift `m` is any number with `|x̂ − m| ≤ M`,
the difference is rounded once (`R`), and the library exponential `ê` has relative
error `u_exp`; with `a = Δ + u M < 1`, `ê(fl(x̂ − m))` is within
`1/((1 − u_exp)(1 − a))` of `exp(x − m)` (needs `ExpMap.AddOneLe`). -/
theorem fp_softmax_exp_within (E : ExpMap α) (hE : E.AddOneLe) (R : Rounding α)
    (expc : α → α) {uexp : α} (hue0 : 0 ≤ uexp) (hue : uexp < 1)
    (hexp : ∀ z, absv (expc z - E.exp z) ≤ uexp * E.exp z) {x xhat m Δ M : α}
    (hx : absv (xhat - x) ≤ Δ) (hM : absv (xhat - m) ≤ M)
    (ha : Δ + R.u * M < 1) :
    Within ((1 - uexp)⁻¹ * (1 - (Δ + R.u * M))⁻¹) (expc (R.fl (xhat - m))) (E.exp (x - m)) := by
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
  have w2 := within_of_absv_sub_le (x := expc (R.fl (xhat - m))) (le_of_lt' (E.exp_pos _)) hue0 hue
    (hexp _)
  have hp1 := inv_pos_of_pos (a := 1 - uexp) (by grind)
  have hΔ : 0 ≤ Δ := Std.le_trans (absv_nonneg _) hx
  have hp2 := inv_pos_of_pos (a := 1 - (Δ + R.u * M)) (by grind)
  exact w2.trans hp1 hp2 (le_of_lt' (E.exp_pos _)) w1

/-! ### Sums of nonnegative terms -/

/-- A floating-point sum of nonnegative terms, any tree of depth `d` (`d u < 1`), is
within a factor `1 + γ_d` of the exact sum. -/
theorem STree.within_eval (R : Rounding α) {ι : Type} {f : ι → α} (hf : ∀ i, 0 ≤ f i) :
    ∀ t : STree ι, ((t.depth : Nat) : α) * R.u < 1 →
      Within (1 + gam R.u t.depth) (t.eval R.fl f) (t.sum f)
  | .leaf i, _ => by
    simp only [STree.eval, STree.sum, STree.depth]
    have : gam R.u 0 = 0 := by simp [gam]; grind
    rw [this]; exact Within.refl (by grind) (hf i)
  | .node l r, hd => by
    have hu := R.u_nonneg
    simp only [STree.eval, STree.sum, STree.depth] at hd ⊢
    generalize hdl : l.depth = dl at *
    generalize hdr : r.depth = dr at *
    have hmax : ((max dl dr : Nat) : α) * R.u < 1 := by
      have := natCast_le_natCast (α := α) (Nat.le_succ (max dl dr))
      have := OrderedRing.mul_le_mul_of_nonneg_right this hu; grind
    have hdl' : (dl : α) * R.u < 1 := by
      have := natCast_le_natCast (α := α) (Nat.le_max_left dl dr)
      have := OrderedRing.mul_le_mul_of_nonneg_right this hu; grind
    have hdr' : (dr : α) * R.u < 1 := by
      have := natCast_le_natCast (α := α) (Nat.le_max_right dl dr)
      have := OrderedRing.mul_le_mul_of_nonneg_right this hu; grind
    have ihl := STree.within_eval R hf l (by rw [hdl]; exact hdl')
    have ihr := STree.within_eval R hf r (by rw [hdr]; exact hdr')
    rw [hdl] at ihl; rw [hdr] at ihr
    have gl0 := gam_nonneg hu hdl'
    have gr0 := gam_nonneg hu hdr'
    have l0 := STree.sum_nonneg hf l
    have r0 := STree.sum_nonneg hf r
    have hml : 1 + gam R.u dl ≤ 1 + gam R.u (max dl dr) := by
      have := gam_mono hu (Nat.le_max_left dl dr) hmax; grind
    have hmr : 1 + gam R.u dr ≤ 1 + gam R.u (max dl dr) := by
      have := gam_mono hu (Nat.le_max_right dl dr) hmax; grind
    have ml := ihl.mono (by grind) hml l0
    have mr := ihr.mono (by grind) hmr r0
    have hs := ml.add mr
    have g0 := gam_nonneg hu hmax
    have hu1 : R.u < 1 := by
      have := natCast_le_natCast (α := α) (Nat.le_add_left 1 (max dl dr))
      have := OrderedRing.mul_le_mul_of_nonneg_right this hu; grind
    have hab0 := hs.nonneg (by grind) (by grind)
    have hr := R.within hu1 hab0
    have ht := hr.trans (by have := gam_nonneg hu (n := 1) (by grind); grind) (by grind)
      (by grind) hs
    have hc := one_add_gam_mul_le (j := 1) (k := max dl dr) hu (by
      have e : ((1 + max dl dr : Nat) : α) = ((max dl dr + 1 : Nat) : α) := by
        rw [Nat.add_comm]
      rw [e]; exact hd)
    rw [Nat.add_comm] at hc
    exact ht.mono (OrderedRing.mul_pos (by have := gam_nonneg hu (n := 1) (by grind); grind)
      (by grind)) hc (by grind)

/-- The same for a summation order of `n` terms: within `1 + γ_{n−1}`. -/
theorem STree.within_eval_order (R : Rounding α) {n : Nat} {f : Fin n → α}
    (hf : ∀ i, 0 ≤ f i) {t : STree (Fin n)} (ht : t.IsOrder α)
    (hn : ((n - 1 : Nat) : α) * R.u < 1) :
    Within (1 + gam R.u (n - 1)) (t.eval R.fl f) (finSum f) := by
  have hle : t.depth ≤ n - 1 := by have := ht.depth_le; omega
  have hd : (t.depth : α) * R.u < 1 := by
    have := natCast_le_natCast (α := α) hle
    have := OrderedRing.mul_le_mul_of_nonneg_right this R.u_nonneg; grind
  have h := STree.within_eval R hf t hd
  rw [ht f] at h
  have g0 := gam_nonneg R.u_nonneg hd
  exact h.mono (by grind) (by have := gam_mono R.u_nonneg hle hn; grind)
    (finSum_nonneg hf)

/-! ### Softmax weights -/

/-- The softmax of `x` as the quotient of shifted exponentials. -/
theorem softmax_eq_div_shift (E : ExpMap α) {n : Nat} (x : Fin n → α) (m : α) (j : Fin n) :
    softmax E x j = E.exp (x j - m) / finSum (fun l => E.exp (x l - m)) := by
  have h := congrFun (softmax_shift_unmasked E x (-m)) j
  rw [← h]
  simp only [softmax, msoftmax, if_true]
  have e : ∀ l, x l + -m = x l - m := fun l => by grind
  simp only [e]

/-- [fp_softmax] A softmax row in floating point: computed exponentials `ê_j` within a
factor `c_e` of `exp(x_j − m)` (any shift `m`; `fp_softmax_exp_within` gives `c_e`), added
in any order with unit round-off `u`, and each quotient `ê_j / ŝ` rounded; for `n` terms
with `n u < 1`:
`|fl(ê_j / ŝ) − softmax(x)_j| ≤ (c_e² (1 + γ_n) − 1) softmax(x)_j`. -/
theorem fp_softmax {n : Nat} (E : ExpMap α) (R : Rounding α) (x : Fin n → α) (m : α)
    (ehat : Fin n → α) {ce : α} (hce : 1 ≤ ce)
    (he : ∀ j, Within ce (ehat j) (E.exp (x j - m))) (t : STree (Fin n)) (ht : t.IsOrder α)
    (hn1 : 1 ≤ n) (hn : (n : α) * R.u < 1) (j : Fin n) :
    absv (R.fl (ehat j / t.eval R.fl ehat) - softmax E x j) ≤
      (ce * ce * (1 + gam R.u n) - 1) * softmax E x j := by
  have hu := R.u_nonneg
  have hce0 : 0 < ce := by grind
  have hpred : ((n - 1 : Nat) : α) * R.u < 1 := by
    have := natCast_le_natCast (α := α) (Nat.sub_le n 1)
    have := OrderedRing.mul_le_mul_of_nonneg_right this hu; grind
  have hu1 : R.u < 1 := by
    have := natCast_le_natCast (α := α) hn1
    have := OrderedRing.mul_le_mul_of_nonneg_right this hu; grind
  have epos : ∀ l, 0 < E.exp (x l - m) := fun l => E.exp_pos _
  have ehat0 : ∀ l, 0 ≤ ehat l := fun l => (he l).nonneg hce0 (le_of_lt' (epos l))
  have hD : 0 < finSum (fun l => E.exp (x l - m)) := by
    obtain ⟨k, hk⟩ : ∃ k, n = k + 1 := ⟨n - 1, by omega⟩
    subst hk
    rw [finSum_succ]
    have := finSum_nonneg (fun l : Fin k => (le_of_lt' (epos l.castSucc)))
    have := epos (Fin.last k); grind
  -- ŝ within (1 + γ_{n−1}) c_e of the exact sum
  have hs1 := STree.within_eval_order R ehat0 ht hpred
  have hs2 := Within.finSum he
  have g1 := gam_nonneg hu hpred
  have hs := hs1.trans (by grind) hce0 (le_of_lt' hD) hs2
  -- the quotient, then its rounding
  have hq := (he j).div hce0 (OrderedRing.mul_pos (by grind) hce0) (le_of_lt' (epos j)) hD hs
  have hq0 := hq.nonneg (OrderedRing.mul_pos hce0 (OrderedRing.mul_pos (by grind) hce0))
    (by have := inv_pos_of_pos hD; have := epos j
        simp only [Field.div_eq_mul_inv]; exact (le_of_lt' (OrderedRing.mul_pos (epos j) (inv_pos_of_pos hD))))
  have hr := R.within hu1 hq0
  have g10 := gam_nonneg hu (n := 1) (by grind)
  have hall := hr.trans (by grind) (OrderedRing.mul_pos hce0 (OrderedRing.mul_pos (by grind) hce0))
    (by simp only [Field.div_eq_mul_inv]; exact (le_of_lt' (OrderedRing.mul_pos (epos j) (inv_pos_of_pos hD)))) hq
  rw [← softmax_eq_div_shift] at hall
  -- (1 + γ₁) c_e (1 + γ_{n−1}) c_e ≤ c_e² (1 + γ_n)
  have hg := one_add_gam_mul_le (j := 1) (k := n - 1) hu (by
    have e : 1 + (n - 1) = n := by omega
    rw [e]; exact hn)
  have e1 : 1 + (n - 1) = n := by omega
  rw [e1] at hg
  have hcc : 0 ≤ ce * ce := OrderedRing.mul_nonneg (le_of_lt' hce0) (le_of_lt' hce0)
  have hbig : (1 + gam R.u 1) * (ce * ((1 + gam R.u (n - 1)) * ce)) ≤
      ce * ce * (1 + gam R.u n) := by
    have := OrderedRing.mul_le_mul_of_nonneg_left hg hcc; grind
  have hp0 : 0 ≤ softmax E x j := by
    rw [softmax_eq_div_shift E x m j, Field.div_eq_mul_inv]
    exact (le_of_lt' (OrderedRing.mul_pos (epos j) (inv_pos_of_pos hD)))
  have hfin := hall.mono (OrderedRing.mul_pos (by grind)
    (OrderedRing.mul_pos hce0 (OrderedRing.mul_pos (by grind) hce0))) hbig hp0
  have gn := gam_nonneg hu hn
  have hc1 : 1 ≤ ce * ce * (1 + gam R.u n) := by
    have h1 : 1 ≤ ce * ce := by
      have := OrderedRing.mul_le_mul_of_nonneg_right hce (by grind : (0 : α) ≤ ce); grind
    have := OrderedRing.mul_le_mul_of_nonneg_left (by grind : (1 : α) ≤ 1 + gam R.u n)
      (by grind : (0 : α) ≤ ce * ce)
    grind
  exact hfin.absv_sub_le hc1 hp0

/-! ### Attention outputs -/

/-- `|x d⁻¹| = |x| d⁻¹` for `d > 0`. -/
theorem absv_mul_inv_of_pos {x d : α} (hd : 0 < d) : absv (x * d⁻¹) = absv x * d⁻¹ := by
  rw [absv_mul]
  have : absv d⁻¹ = d⁻¹ := by
    have := inv_pos_of_pos hd; unfold absv; simp [(le_of_lt' this)]
  rw [this]

/-- A perturbed ratio: `|N̂ − N| ≤ a A`, `|D̂ − D| ≤ b D` with `D > 0`, `|N| ≤ A`,
`0 ≤ b < 1`: `|N̂/D̂ − N/D| ≤ (a + b)(1 − b)⁻¹ A D⁻¹`. -/
theorem absv_div_sub_div_le {N N' D D' A a b : α} (hD : 0 < D) (hNA : absv N ≤ A)
    (ha : 0 ≤ a) (hb0 : 0 ≤ b) (hb : b < 1) (hN : absv (N' - N) ≤ a * A)
    (hD' : absv (D' - D) ≤ b * D) :
    absv (N' / D' - N / D) ≤ (a + b) * (1 - b)⁻¹ * (A * D⁻¹) := by
  obtain ⟨d1, d2⟩ := absv_le_iff.mp hD'
  have hbD : 0 ≤ b * D := OrderedRing.mul_nonneg hb0 (le_of_lt' hD)
  have hlow : (1 - b) * D ≤ D' := by grind
  have hpos : 0 < (1 - b) * D := OrderedRing.mul_pos (by grind) hD
  have hD'pos : 0 < D' := by grind
  have hinv : D'⁻¹ ≤ ((1 - b) * D)⁻¹ := inv_le_inv_of_le hpos hlow
  have hDi := inv_pos_of_pos hD
  have hD'i := inv_pos_of_pos hD'pos
  have hA : 0 ≤ A := Std.le_trans (absv_nonneg _) hNA
  -- N̂/D̂ − N/D = (N̂ − N)/D̂ − (N/D)(D̂ − D)/D̂
  have e : N' / D' - N / D = (N' - N) * D'⁻¹ - N * D⁻¹ * ((D' - D) * D'⁻¹) := by
    have h1 : D * D⁻¹ = 1 := Field.mul_inv_cancel (by grind)
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
  -- the two terms
  have t1 : absv (N' - N) * D'⁻¹ ≤ a * A * ((1 - b) * D)⁻¹ :=
    mul_le_mul_of_le_of_le hN hinv (OrderedRing.mul_nonneg ha hA) (le_of_lt' hD'i)
  have t2a : absv N * D⁻¹ ≤ A * D⁻¹ := OrderedRing.mul_le_mul_of_nonneg_right hNA (le_of_lt' hDi)
  have t2b : absv (D' - D) * D'⁻¹ ≤ b * D * ((1 - b) * D)⁻¹ :=
    mul_le_mul_of_le_of_le hD' hinv hbD (le_of_lt' hD'i)
  have t2 := mul_le_mul_of_le_of_le t2a t2b (OrderedRing.mul_nonneg hA (le_of_lt' hDi))
    (OrderedRing.mul_nonneg (absv_nonneg _) (le_of_lt' hD'i))
  have eb : b * D * ((1 - b) * D)⁻¹ = b * (1 - b)⁻¹ := by
    have h1 : D * D⁻¹ = 1 := Field.mul_inv_cancel (by grind)
    rw [Field.inv_mul]; grind
  have ea : a * A * ((1 - b) * D)⁻¹ = a * (1 - b)⁻¹ * (A * D⁻¹) := by
    rw [Field.inv_mul]; grind
  rw [eb] at t2; rw [ea] at t1
  grind

/-- The output row as the quotient of shifted sums. -/
theorem softmax_output_eq (E : ExpMap α) {n : Nat} (x v : Fin n → α) (m : α) :
    finSum (fun j => softmax E x j * v j) =
      finSum (fun j => E.exp (x j - m) * v j) * (finSum fun l => E.exp (x l - m))⁻¹ := by
  rw [finSum_mul]; congr 1; funext j
  rw [softmax_eq_div_shift E x m j, Field.div_eq_mul_inv]; grind

/-- [fp_head_output] The attention output from accumulated numerator and denominator,
whatever the algorithm (one pass, blocked, online with rescaling,
`fp_head_output_rescale`): if `N̂` is within `a Σ_j exp(x_j − m)|v_j|` of
`Σ_j exp(x_j − m) v_j`, `D̂` within `b Σ_j exp(x_j − m)` of `Σ_j exp(x_j − m)`
(`0 ≤ b < 1`) and `ŷ` within `w |N̂/D̂|` of `N̂/D̂`, then
`|ŷ − Σ_j softmax(x)_j v_j| ≤ ((1 + w)(1 + a)/(1 − b) − 1) Σ_j softmax(x)_j |v_j|`. -/
theorem fp_head_output_of_bounds {n : Nat} (E : ExpMap α) (x v : Fin n → α) (m : α)
    (hn1 : 1 ≤ n) {Nh Dh y a b w : α} (ha0 : 0 ≤ a) (hb0 : 0 ≤ b) (hb : b < 1) (hw : 0 ≤ w)
    (hNum : absv (Nh - finSum (fun j => E.exp (x j - m) * v j)) ≤
      a * finSum (fun j => E.exp (x j - m) * absv (v j)))
    (hDen : absv (Dh - finSum (fun j => E.exp (x j - m))) ≤ b * finSum (fun j => E.exp (x j - m)))
    (hy : absv (y - Nh / Dh) ≤ w * absv (Nh / Dh)) :
    absv (y - finSum (fun j => softmax E x j * v j)) ≤
      ((1 + w) * (1 + a) * (1 - b)⁻¹ - 1) * finSum (fun j => softmax E x j * absv (v j)) := by
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
  have hout : finSum (fun j => softmax E x j * v j) =
      finSum (fun j => E.exp (x j - m) * v j) * (finSum fun l => E.exp (x l - m))⁻¹ :=
    softmax_output_eq E x v m
  have hmass : finSum (fun j => softmax E x j * absv (v j)) =
      finSum (fun j => E.exp (x j - m) * absv (v j)) * (finSum fun l => E.exp (x l - m))⁻¹ :=
    softmax_output_eq E x (fun j => absv (v j)) m
  rw [hout, hmass]
  generalize hDdef : finSum (fun l => E.exp (x l - m)) = D at *
  generalize hA : finSum (fun j => E.exp (x j - m) * absv (v j)) = A at *
  generalize hN : finSum (fun j => E.exp (x j - m) * v j) = N at *
  have hNA : absv N ≤ A := by
    rw [← hN, ← hA]
    exact Std.le_trans (absv_finSum_le _) (finSum_le_finSum hMN)
  have hr := absv_div_sub_div_le hD hNA ha0 hb0 hb hNum hDen
  generalize hQ : Nh / Dh = Q at *
  have h2pos : 0 < 1 - b := by grind
  have hi2 := inv_pos_of_pos h2pos
  have hi2c : (1 - b) * (1 - b)⁻¹ = 1 := Field.mul_inv_cancel (by grind)
  have hDi := inv_pos_of_pos hD
  have hAD : 0 ≤ A * D⁻¹ :=
    OrderedRing.mul_nonneg (Std.le_trans (absv_nonneg N) hNA) (le_of_lt' hDi)
  generalize hR : (a + b) * (1 - b)⁻¹ = r at hr
  have hr0 : 0 ≤ r := by
    rw [← hR]; exact OrderedRing.mul_nonneg (by grind) (le_of_lt' hi2)
  have hQb : absv Q ≤ (1 + r) * (A * D⁻¹) := by
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
  have hfin : (1 + w) * (1 + a) * (1 - b)⁻¹ - 1 = w * (1 + r) + r := by
    rw [← hR]
    have : 1 + a = (1 - b) + (a + b) := by grind
    rw [this]; grind
  rw [hfin]
  grind

/-- [fp_head_output] One attention output in floating point, in the fused-kernel order:
exponentials `ê_j` within `c_e` of `exp(x_j − m)`; numerator leaves `g_j` within
`e_p |ê_j v_j|` of `ê_j v_j` (products, the rounding of `ê_j` to the input format);
numerator `N̂` and denominator `D̂` accumulated in any order at `u` (`(n − 1) u < 1`);
the result `ŷ` within `w |N̂/D̂|` of the quotient (division or reciprocal and product,
output rounding). With `1 + a = c_e (1 + e_p)(1 + γ_{n−1})` and
`b = c_e (1 + γ_{n−1}) − 1 < 1`:
`|ŷ − Σ_j softmax(x)_j v_j| ≤ ((1 + w)(1 + a)/(1 − b) − 1) Σ_j softmax(x)_j |v_j|`. -/
theorem fp_head_output {n : Nat} (E : ExpMap α) (R : Rounding α) (x v : Fin n → α) (m : α)
    (ehat : Fin n → α) {ce ep w : α} (hce : 1 ≤ ce) (hep : 0 ≤ ep) (hw : 0 ≤ w)
    (he : ∀ j, Within ce (ehat j) (E.exp (x j - m))) (g : Fin n → α)
    (hg : ∀ j, absv (g j - ehat j * v j) ≤ ep * absv (ehat j * v j))
    (tn td : STree (Fin n)) (htn : tn.IsOrder α) (htd : td.IsOrder α) (hn1 : 1 ≤ n)
    (hn : ((n - 1 : Nat) : α) * R.u < 1) (hb : ce * (1 + gam R.u (n - 1)) < 2) (y : α)
    (hy : absv (y - tn.eval R.fl g / td.eval R.fl ehat) ≤
      w * absv (tn.eval R.fl g / td.eval R.fl ehat)) :
    absv (y - finSum (fun j => softmax E x j * v j)) ≤
      ((1 + w) * (ce * (1 + ep) * (1 + gam R.u (n - 1))) *
        (2 - ce * (1 + gam R.u (n - 1)))⁻¹ - 1) *
        finSum (fun j => softmax E x j * absv (v j)) := by
  have hu := R.u_nonneg
  have hce0 : 0 < ce := by grind
  have g0 := gam_nonneg hu hn
  have epos : ∀ l, 0 < E.exp (x l - m) := fun l => E.exp_pos _
  -- numerator leaves
  have leafN : ∀ j, absv (g j - E.exp (x j - m) * v j) ≤
      (ce * (1 + ep) - 1) * (E.exp (x j - m) * absv (v j)) := fun j => by
    have w1 := (he j).absv_sub_le hce (le_of_lt' (epos j))
    have eh0 := (he j).nonneg hce0 (le_of_lt' (epos j))
    have up := (he j).2
    have h1 := hg j
    rw [absv_mul, show absv (ehat j) = ehat j by unfold absv; simp [eh0]] at h1
    have p1 : ep * (ehat j * absv (v j)) ≤ ep * (ce * E.exp (x j - m) * absv (v j)) :=
      OrderedRing.mul_le_mul_of_nonneg_left
        (OrderedRing.mul_le_mul_of_nonneg_right up (absv_nonneg _)) hep
    have p2 : absv ((ehat j - E.exp (x j - m)) * v j) ≤
        (ce - 1) * E.exp (x j - m) * absv (v j) := by
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
  have hNum := fp_summation_perturbed R hea hMN leafN tn htn hn
  -- denominator leaves
  have leafD : ∀ j, absv (ehat j - E.exp (x j - m)) ≤ (ce - 1) * E.exp (x j - m) := fun j =>
    (he j).absv_sub_le hce (le_of_lt' (epos j))
  have hMD : ∀ j, absv (E.exp (x j - m)) ≤ E.exp (x j - m) := fun j => by
    unfold absv; simp [le_of_lt' (epos j)]; grind
  have hDen := fp_summation_perturbed R (by grind : (0 : α) ≤ ce - 1) hMD leafD td htd hn
  generalize hγ : gam R.u (n - 1) = γ at *
  have ea : (1 + γ) * (1 + (ce * (1 + ep) - 1)) - 1 = ce * (1 + ep) * (1 + γ) - 1 := by grind
  have eb : (1 + γ) * (1 + (ce - 1)) - 1 = ce * (1 + γ) - 1 := by grind
  rw [ea] at hNum; rw [eb] at hDen
  have ha0 : 0 ≤ ce * (1 + ep) * (1 + γ) - 1 := by
    have := OrderedRing.mul_le_mul_of_nonneg_right (by grind : (1 : α) ≤ ce * (1 + ep))
      (by grind : (0 : α) ≤ 1 + γ)
    have := OrderedRing.mul_le_mul_of_nonneg_left (by grind : (1 : α) ≤ 1 + γ)
      (by grind : (0 : α) ≤ ce * (1 + ep))
    grind
  have hb0 : 0 ≤ ce * (1 + γ) - 1 := by
    have := OrderedRing.mul_le_mul_of_nonneg_left (by grind : (1 : α) ≤ 1 + γ) (le_of_lt' hce0)
    grind
  have h := fp_head_output_of_bounds E x v m hn1 ha0 hb0 (by grind) hw hNum hDen hy
  have e1 : 1 - (ce * (1 + γ) - 1) = 2 - ce * (1 + γ) := by grind
  have e2 : 1 + (ce * (1 + ep) * (1 + γ) - 1) = ce * (1 + ep) * (1 + γ) := by grind
  rw [e1, e2] at h
  exact h

end Pldr

end
