module

public import Pldr.Float.Ieee
public import Pldr.LayerNorm

/-!
# A floating-point LayerNorm row  (`[fp_layernorm]`)

LayerNorm of a row `x` of length `n`, `y_i = γ_i (x_i − μ) r + β_i` with `μ = Σ x / n`,
`v = Σ (x_i − μ)² / n` (`rowMean`, `rowVar` of `Pldr.LayerNorm`) and `r = 1/√(v + ε)`,
computed the two-pass way on an input `x̂` off by `d` (`|x̂_i − x_i| ≤ d_i`):

1. a computed mean `μ̂` within `Δμ` of `μ` (`fp_layernorm_mean`: a sum in any order and a
   rounded division, `Δμ = ((1 + u_d)(1 + γ_{n−1}) − 1) Σ|x|/n + (1 + u_d)(1 + γ_{n−1}) Σd/n
   + η_d`; any other algorithm, Welford's included, enters through its own `Δμ`);
2. the centred values `ĉ_i = fl(x̂_i − μ̂)` (a difference of two floating-point numbers:
   relative error `u`, no absolute term, `fp_ieee_rounding_lattice`);
3. a computed variance `v̂` of the `ĉ_i`, `|v̂ − Σ ĉ²/n| ≤ e_v Σ ĉ²/n + η_v`
   (`fp_layernorm_variance`: `e_v = (1 + u_d)(1 + γ_n) − 1`,
   `η_v = (1 + u_d)(1 + γ_{n−1}) η_m + η_d`);
4. `ŵ = fl(v̂ + ε)`;
5. `r̂`, a reciprocal square root routine of relative accuracy `u_rs` at its computed
   argument: `|r̂ − ρ| ≤ u_rs ρ` where `ρ > 0`, `ρ² ŵ = 1`;
6. `t̂_i = fl(ĉ_i r̂)`, `ŝ_i = fl(t̂_i γ_i)` (products: relative `u`, absolute `η`),
   `ŷ_i = fl(ŝ_i + β_i)` (a sum: no absolute term).

`[fp_layernorm]` `fp_layernorm`: with `c_i = x_i − μ`, `w = v + ε`,
`D_i = (1 + u)(d_i + Δμ) + u |c_i|` (`|ĉ_i − c_i| ≤ D_i`),
`Q = Σ D_i (2|c_i| + D_i) / n`, `V = (1 + e_v) Q + e_v v + η_v` (`|v̂ − v| ≤ V`),
`W = (1 + u) V + u w` (`|ŵ − w| ≤ W`), `W < w`, `ω = W/(w − W)` (`|ρ − r| ≤ ω r`),
`R = (1 + u_rs)(1 + ω) − 1` (`|r̂ − r| ≤ R r`),
`T_i = (1 + u)(D_i r + |c_i| R r + D_i R r) + u |c_i| r + η` (`|t̂_i − c_i r| ≤ T_i`),
`S_i = (1 + u) T_i |γ_i| + u |c_i| r |γ_i| + η` (`|ŝ_i − γ_i c_i r| ≤ S_i`):
`|ŷ_i − y_i| ≤ (1 + u) S_i + u |y_i|`.
Every quantity is a magnitude of the row itself (`|c_i|`, `v`, `r`, `|y_i|`), so the bound is
a running error bound to evaluate on the data.

Abstracted: core Lean has no square root, so `r` and `ρ` are arguments with their defining
equations `r² (v + ε) = 1`, `ρ² ŵ = 1` (as `Pldr.OrderParameter` does) and the routine's
accuracy `u_rs` is an interface parameter; the roundings enter through their bounds (IEEE
rounding to nearest: `fp_ieee_rounding`); overflow is outside the model. There are no
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

/-! ### Small facts about `absv` -/

/-- The triangle inequality through a middle point. -/
theorem absv_sub_le_sub_add_sub (a b c : α) : absv (a - c) ≤ absv (a - b) + absv (b - c) := by
  have := absv_add_le (a - b) (b - c)
  have e : a - b + (b - c) = a - c := by grind
  rw [e] at this; exact this

/-- `|a| ≤ |b| + e` from `|a − b| ≤ e`. -/
theorem absv_le_of_absv_sub_le {a b e : α} (h : absv (a - b) ≤ e) : absv a ≤ absv b + e := by
  have := absv_add_le (a - b) b
  have e' : a - b + b = a := by grind
  rw [e'] at this; grind

/-- A perturbed product: `|a' b' − a b| ≤ |a' − a| |b'| + |a| |b' − b|`. -/
theorem absv_mul_sub_mul_le_abs (a a' b b' : α) :
    absv (a' * b' - a * b) ≤ absv (a' - a) * absv b' + absv a * absv (b' - b) := by
  have e : a' * b' - a * b = (a' - a) * b' + a * (b' - b) := by grind
  rw [e, ← absv_mul, ← absv_mul]
  exact absv_add_le _ _

/-- `|−x| = |x|`. -/
theorem absv_neg' (x : α) : absv (-x) = absv x := by unfold absv; split <;> split <;> grind

/-- `|x| = x` for `x ≥ 0`. -/
theorem absv_of_nonneg' {x : α} (h : 0 ≤ x) : absv x = x := by unfold absv; simp [h]

/-! ### The reciprocal square root at a perturbed argument -/

/-- Two reciprocal square roots: `r² w = 1`, `ρ² ŵ = 1` (`r, ρ > 0`), `|ŵ − w| ≤ W < w`:
`|ρ − r| ≤ W/(w − W) · r`. -/
theorem absv_rsqrt_sub_le {w wh W r ρ : α} (hr0 : 0 < r) (hr : r * r * w = 1) (hρ0 : 0 < ρ)
    (hρ : ρ * ρ * wh = 1) (hw : absv (wh - w) ≤ W) (hW : W < w) :
    absv (ρ - r) ≤ W * (w - W)⁻¹ * r := by
  have hwh : w - W ≤ wh := by have := absv_le_iff.mp hw; grind
  have hW0 : 0 ≤ W := Std.le_trans (absv_nonneg _) hw
  have hpos : 0 < w - W := by grind
  have hwh0 : 0 < wh := Std.lt_of_lt_of_le hpos hwh
  -- (ρ − r)(ρ + r) = ρ² r² (w − ŵ)
  have key : (ρ - r) * (ρ + r) = ρ * ρ * (r * r) * (w - wh) := by
    have e1 : ρ * ρ * (r * r) * w = ρ * ρ := by
      have : ρ * ρ * (r * r) * w = ρ * ρ * (r * r * w) := by grind
      rw [this, hr]; grind
    have e2 : ρ * ρ * (r * r) * wh = r * r := by
      have : ρ * ρ * (r * r) * wh = r * r * (ρ * ρ * wh) := by grind
      rw [this, hρ]; grind
    grind
  have hρρ : 0 ≤ ρ * ρ := mul_self_nonneg' ρ
  have hrr : 0 ≤ r * r := mul_self_nonneg' r
  have hA := absv_nonneg (ρ - r)
  -- |ρ − r| r ≤ |ρ − r| (ρ + r) = ρ² r² |w − ŵ| ≤ ρ² r² W
  have h1 : absv (ρ - r) * r ≤ ρ * ρ * (r * r) * W := by
    have a1 : absv (ρ - r) * r ≤ absv (ρ - r) * (ρ + r) :=
      OrderedRing.mul_le_mul_of_nonneg_left (by grind) hA
    have a2 : absv ((ρ - r) * (ρ + r)) = absv (ρ - r) * (ρ + r) := by
      rw [absv_mul, absv_of_nonneg' (by grind : (0 : α) ≤ ρ + r)]
    have a3 : absv (ρ * ρ * (r * r) * (w - wh)) ≤ ρ * ρ * (r * r) * W := by
      rw [absv_mul, absv_of_nonneg' (OrderedRing.mul_nonneg hρρ hrr)]
      have : absv (w - wh) = absv (wh - w) := by
        rw [show w - wh = -(wh - w) by grind, absv_neg']
      rw [this]
      exact OrderedRing.mul_le_mul_of_nonneg_left hw (OrderedRing.mul_nonneg hρρ hrr)
    rw [key] at a2
    grind
  -- divide by r: |ρ − r| ≤ ρ² r W
  have h2 : absv (ρ - r) ≤ ρ * ρ * r * W := by
    have hri := inv_pos_of_pos hr0
    have hrr' : r * r⁻¹ = 1 := Field.mul_inv_cancel (by grind)
    have := OrderedRing.mul_le_mul_of_nonneg_right h1 (Std.le_of_lt hri)
    have e1 : absv (ρ - r) * r * r⁻¹ = absv (ρ - r) := by
      have : absv (ρ - r) * r * r⁻¹ = absv (ρ - r) * (r * r⁻¹) := by grind
      rw [this, hrr']; grind
    have e2 : ρ * ρ * (r * r) * W * r⁻¹ = ρ * ρ * r * W := by
      have : ρ * ρ * (r * r) * W * r⁻¹ = ρ * ρ * r * W * (r * r⁻¹) := by grind
      rw [this, hrr']; grind
    grind
  -- ρ² = ŵ⁻¹ ≤ (w − W)⁻¹
  have h3 : ρ * ρ ≤ (w - W)⁻¹ := by
    have hwi : wh * wh⁻¹ = 1 := Field.mul_inv_cancel (by grind)
    have e : ρ * ρ = wh⁻¹ := by
      have : ρ * ρ = ρ * ρ * wh * wh⁻¹ := by
        have : ρ * ρ * wh * wh⁻¹ = ρ * ρ * (wh * wh⁻¹) := by grind
        rw [this, hwi]; grind
      rw [this, hρ]; grind
    rw [e]; exact inv_le_inv_of_le hpos hwh
  have h4 : ρ * ρ * r * W ≤ W * (w - W)⁻¹ * r := by
    have := OrderedRing.mul_le_mul_of_nonneg_right h3
      (OrderedRing.mul_nonneg (Std.le_of_lt hr0) hW0)
    grind
  exact Std.le_trans h2 h4

/-! ### The row -/

/-- The centred values: `|ĉ_i − c_i| ≤ (1 + u)(d_i + Δμ) + u |c_i|`. -/
theorem fp_layernorm_centred {x xh : α} {μ μh c d Δμ u : α} (hu : 0 ≤ u)
    (hd : absv (xh - x) ≤ d) (hμ : absv (μh - μ) ≤ Δμ)
    (hc : absv (c - (xh - μh)) ≤ u * absv (xh - μh)) :
    absv (c - (x - μ)) ≤ (1 + u) * (d + Δμ) + u * absv (x - μ) := by
  have h1 : absv ((xh - μh) - (x - μ)) ≤ d + Δμ := by
    have := absv_add_le (xh - x) (-(μh - μ))
    rw [absv_neg'] at this
    have e : xh - x + -(μh - μ) = xh - μh - (x - μ) := by grind
    rw [e] at this; grind
  have h2 := absv_le_of_absv_sub_le h1
  have h3 := OrderedRing.mul_le_mul_of_nonneg_left h2 hu
  have := absv_sub_le_sub_add_sub c (xh - μh) (x - μ)
  grind

/-! ### One rounded operation on perturbed operands -/

/-- A rounded product of perturbed factors: `|a' − a| ≤ d_a`, `|b' − b| ≤ d_b`, the product
rounded (`|p − a' b'| ≤ u |a' b'| + η`):
`|p − a b| ≤ (1 + u)(d_a |b| + |a| d_b + d_a d_b) + u |a| |b| + η`. -/
theorem fp_round_mul_le {a a' b b' p da db u η : α} (hu : 0 ≤ u)
    (ha : absv (a' - a) ≤ da) (hb : absv (b' - b) ≤ db)
    (hp : absv (p - a' * b') ≤ u * absv (a' * b') + η) :
    absv (p - a * b) ≤ (1 + u) * (da * absv b + absv a * db + da * db) +
      u * (absv a * absv b) + η := by
  have hda : 0 ≤ da := Std.le_trans (absv_nonneg _) ha
  have hb' : absv b' ≤ absv b + db := absv_le_of_absv_sub_le hb
  have h1 := absv_mul_sub_mul_le_abs a a' b b'
  have h2 : absv (a' - a) * absv b' ≤ da * (absv b + db) :=
    FP.mul_le_mul_of_le_of_le ha hb' hda (absv_nonneg _)
  have h3 : absv a * absv (b' - b) ≤ absv a * db :=
    OrderedRing.mul_le_mul_of_nonneg_left hb (absv_nonneg _)
  have hd : absv (a' * b' - a * b) ≤ da * absv b + absv a * db + da * db := by grind
  have hab : absv (a' * b') ≤ absv a * absv b + (da * absv b + absv a * db + da * db) := by
    have := absv_le_of_absv_sub_le hd; rw [absv_mul a b] at this; exact this
  have h4 := OrderedRing.mul_le_mul_of_nonneg_left hab hu
  have := absv_sub_le_sub_add_sub p (a' * b') (a * b)
  grind

/-- A rounded product with one exact factor: `|a' − a| ≤ d_a`,
`|p − a' b| ≤ u |a' b| + η`: `|p − a b| ≤ (1 + u) d_a |b| + u |a| |b| + η`. -/
theorem fp_round_mul_exact_le {a a' b p da u η : α} (hu : 0 ≤ u) (ha : absv (a' - a) ≤ da)
    (hp : absv (p - a' * b) ≤ u * absv (a' * b) + η) :
    absv (p - a * b) ≤ (1 + u) * (da * absv b) + u * (absv a * absv b) + η := by
  have h := fp_round_mul_le (db := 0) hu ha
    (by rw [show b - b = 0 by grind]; unfold absv; split <;> grind) hp
  have e : da * absv b + absv a * 0 + da * 0 = da * absv b := by grind
  rw [e] at h; exact h

/-- A rounded sum with one perturbed operand: `|s' − s| ≤ d`, `|y − (s' + b)| ≤ u |s' + b|`:
`|y − (s + b)| ≤ (1 + u) d + u |s + b|` (a sum of floating-point numbers has no absolute
term). -/
theorem fp_round_add_le {s s' b y d u : α} (hu : 0 ≤ u) (hs : absv (s' - s) ≤ d)
    (hy : absv (y - (s' + b)) ≤ u * absv (s' + b)) :
    absv (y - (s + b)) ≤ (1 + u) * d + u * absv (s + b) := by
  have h1 : absv (s' + b - (s + b)) ≤ d := by rw [show s' + b - (s + b) = s' - s by grind]; exact hs
  have h2 := absv_le_of_absv_sub_le h1
  have h3 := OrderedRing.mul_le_mul_of_nonneg_left h2 hu
  have := absv_sub_le_sub_add_sub y (s' + b) (s + b)
  grind

/-! ### The statistics -/

/-- The variance step: `|Σ ĉ²/n − v| ≤ Q` and `|v̂ − Σ ĉ²/n| ≤ e_v Σ ĉ²/n + η_v` give
`|v̂ − v| ≤ (1 + e_v) Q + e_v v + η_v`. -/
theorem fp_layernorm_var_step {sc v vh Q ev ηv : α} (hev : 0 ≤ ev)
    (hq : absv (sc - v) ≤ Q) (hv : absv (vh - sc) ≤ ev * sc + ηv) :
    absv (vh - v) ≤ (1 + ev) * Q + ev * v + ηv := by
  have h1 : sc ≤ v + Q := by have := absv_le_iff.mp hq; grind
  have h2 := OrderedRing.mul_le_mul_of_nonneg_left h1 hev
  have := absv_sub_le_sub_add_sub vh sc v
  grind

/-- The reciprocal square root step: `|ρ − r| ≤ ω r`, `|r̂ − ρ| ≤ u_rs ρ`:
`|r̂ − r| ≤ ((1 + u_rs)(1 + ω) − 1) r`. -/
theorem fp_layernorm_rsqrt_step {ρ r rh ω urs : α} (hurs : 0 ≤ urs)
    (hρr : absv (ρ - r) ≤ ω * r) (hrh : absv (rh - ρ) ≤ urs * ρ) :
    absv (rh - r) ≤ ((1 + urs) * (1 + ω) - 1) * r := by
  have hρup : ρ ≤ (1 + ω) * r := by have := absv_le_iff.mp hρr; grind
  have := absv_sub_le_sub_add_sub rh ρ r
  have := OrderedRing.mul_le_mul_of_nonneg_left hρup hurs
  grind

/-- [fp_layernorm] The statistics of a LayerNorm row: with the hypotheses of `fp_layernorm` on
the mean, the centred values, the variance and the sum with `ε`, and `v + ε > 0`,
`|ŵ − (v + ε)| ≤ W = (1 + u) V + u (v + ε)`. -/
theorem fp_layernorm_stats {n : Nat} (hn : 0 < n) (x xh d : Fin n → α)
    {eps u Δμ ev ηv μh vh wh Q V W : α} (ch D : Fin n → α)
    (hu : 0 ≤ u) (hev : 0 ≤ ev)
    (hd : ∀ i, absv (xh i - x i) ≤ d i)
    (hμ : absv (μh - rowMean x) ≤ Δμ)
    (hc : ∀ i, absv (ch i - (xh i - μh)) ≤ u * absv (xh i - μh))
    (hv : absv (vh - finSum (fun i => ch i * ch i) * (n : α)⁻¹) ≤
      ev * (finSum (fun i => ch i * ch i) * (n : α)⁻¹) + ηv)
    (hw : absv (wh - (vh + eps)) ≤ u * absv (vh + eps))
    (hw0 : 0 < rowVar x + eps)
    (hD : ∀ i, D i = (1 + u) * (d i + Δμ) + u * absv (x i - rowMean x))
    (hQ : Q = finSum (fun i => D i * (2 * absv (x i - rowMean x) + D i)) * (n : α)⁻¹)
    (hV : V = (1 + ev) * Q + ev * rowVar x + ηv)
    (hW : W = (1 + u) * V + u * (rowVar x + eps)) :
    absv (wh - (rowVar x + eps)) ≤ W := by
  generalize hμd : rowMean x = μ at *
  have hvdef : rowVar x = finSum (fun i => (x i - μ) * (x i - μ)) * (n : α)⁻¹ := by
    unfold rowVar; rw [hμd]
  generalize hvd : rowVar x = v at *
  have hnpos : (0 : α) < (n : α) := by
    have := natCast_ne_zero_of_pos (α := α) hn
    have := OrderedRing.natCast_nonneg (R := α) (a := n); grind
  have hni := inv_pos_of_pos hnpos
  have hcD : ∀ i, absv (ch i - (x i - μ)) ≤ D i := fun i => by
    rw [hD i]; exact fp_layernorm_centred hu (hd i) hμ (hc i)
  have hD0 : ∀ i, 0 ≤ D i := fun i => Std.le_trans (absv_nonneg _) (hcD i)
  have hq : absv (finSum (fun i => ch i * ch i) * (n : α)⁻¹ - v) ≤ Q := by
    rw [hvdef, hQ]
    have e : finSum (fun i => ch i * ch i) * (n : α)⁻¹ -
        finSum (fun i => (x i - μ) * (x i - μ)) * (n : α)⁻¹ =
        finSum (fun i => ch i * ch i - (x i - μ) * (x i - μ)) * (n : α)⁻¹ := by
      rw [finSum_sub]; grind
    rw [e, absv_mul, absv_of_nonneg' (Std.le_of_lt hni)]
    apply OrderedRing.mul_le_mul_of_nonneg_right _ (Std.le_of_lt hni)
    refine Std.le_trans (absv_finSum_le _) (finSum_le_finSum fun i => ?_)
    have h1 := absv_mul_sub_mul_le_abs (x i - μ) (ch i) (x i - μ) (ch i)
    have h2 := absv_le_of_absv_sub_le (hcD i)
    have h3 : absv (ch i - (x i - μ)) * absv (ch i) ≤ D i * (absv (x i - μ) + D i) :=
      FP.mul_le_mul_of_le_of_le (hcD i) h2 (hD0 i) (absv_nonneg _)
    have h4 : absv (x i - μ) * absv (ch i - (x i - μ)) ≤ absv (x i - μ) * D i :=
      OrderedRing.mul_le_mul_of_nonneg_left (hcD i) (absv_nonneg _)
    grind
  have hVb : absv (vh - v) ≤ V := by
    rw [hV]; exact fp_layernorm_var_step hev hq hv
  rw [hW]
  have h := fp_round_add_le (s := v) (s' := vh) (b := eps) hu hVb hw
  rw [absv_of_nonneg' (Std.le_of_lt hw0)] at h; exact h

/-- [fp_layernorm] A LayerNorm row in floating point (two-pass statistics, Higham,
*Accuracy and Stability of Numerical Algorithms*, §1.9; the forward error composed stage
by stage as in Higham §3.3): the computed `ŷ_i = fl(fl(fl(ĉ_i r̂) γ_i) + β_i)` on an input
off by `d`, with the mean's error `Δμ`, the variance's relative and absolute errors `e_v`,
`η_v`, the reciprocal square root's accuracy `u_rs`, roundings at `u` (products with
absolute term `η`). With `c_i = x_i − μ`, `w = v + ε`,
`D_i = (1 + u)(d_i + Δμ) + u |c_i|`, `Q = Σ D_i (2|c_i| + D_i) / n`,
`V = (1 + e_v) Q + e_v v + η_v`, `W = (1 + u) V + u w < w`, `ω = W/(w − W)`,
`R = (1 + u_rs)(1 + ω) − 1`,
`T_i = (1 + u)(D_i r + |c_i| R r + D_i R r) + u |c_i| r + η`,
`S_i = (1 + u) T_i |γ_i| + u |c_i| r |γ_i| + η`:
`|ŷ_i − (γ_i (x_i − μ) r + β_i)| ≤ (1 + u) S_i + u |γ_i (x_i − μ) r + β_i|`. -/
theorem fp_layernorm {n : Nat} (hn : 0 < n) (x xh d γ β : Fin n → α)
    {eps u η urs Δμ ev ηv μh vh wh ρ rh r Q V W ω R : α} (ch th sh yh D T S : Fin n → α)
    (hu : 0 ≤ u) (hurs : 0 ≤ urs) (hev : 0 ≤ ev)
    (hd : ∀ i, absv (xh i - x i) ≤ d i)
    (hμ : absv (μh - rowMean x) ≤ Δμ)
    (hc : ∀ i, absv (ch i - (xh i - μh)) ≤ u * absv (xh i - μh))
    (hv : absv (vh - finSum (fun i => ch i * ch i) * (n : α)⁻¹) ≤
      ev * (finSum (fun i => ch i * ch i) * (n : α)⁻¹) + ηv)
    (hw : absv (wh - (vh + eps)) ≤ u * absv (vh + eps))
    (hρ0 : 0 < ρ) (hρ : ρ * ρ * wh = 1) (hrh : absv (rh - ρ) ≤ urs * ρ)
    (hr0 : 0 < r) (hr : r * r * (rowVar x + eps) = 1)
    (ht : ∀ i, absv (th i - ch i * rh) ≤ u * absv (ch i * rh) + η)
    (hs : ∀ i, absv (sh i - th i * γ i) ≤ u * absv (th i * γ i) + η)
    (hy : ∀ i, absv (yh i - (sh i + β i)) ≤ u * absv (sh i + β i))
    (hD : ∀ i, D i = (1 + u) * (d i + Δμ) + u * absv (x i - rowMean x))
    (hQ : Q = finSum (fun i => D i * (2 * absv (x i - rowMean x) + D i)) * (n : α)⁻¹)
    (hV : V = (1 + ev) * Q + ev * rowVar x + ηv)
    (hW : W = (1 + u) * V + u * (rowVar x + eps))
    (hWlt : W < rowVar x + eps) (hω : ω = W * (rowVar x + eps - W)⁻¹)
    (hR : R = (1 + urs) * (1 + ω) - 1)
    (hT : ∀ i, T i = (1 + u) * (D i * r + absv (x i - rowMean x) * (R * r) + D i * (R * r)) +
      u * (absv (x i - rowMean x) * r) + η)
    (hS : ∀ i, S i = (1 + u) * (T i * absv (γ i)) +
      u * (absv (x i - rowMean x) * r * absv (γ i)) + η)
    (i : Fin n) :
    absv (yh i - (γ i * ((x i - rowMean x) * r) + β i)) ≤
      (1 + u) * S i + u * absv (γ i * ((x i - rowMean x) * r) + β i) := by
  have hw0 : 0 < rowVar x + eps := by
    apply Classical.byContradiction; intro hne
    have hrr := mul_self_nonneg' r
    have := OrderedRing.mul_le_mul_of_nonneg_left (by grind : rowVar x + eps ≤ 0) hrr
    grind
  have hWb := fp_layernorm_stats hn x xh d ch D hu hev hd hμ hc hv hw hw0 hD hQ hV hW
  generalize hμd : rowMean x = μ at *
  generalize hvd : rowVar x = v at *
  have hcD : ∀ i, absv (ch i - (x i - μ)) ≤ D i := fun i => by
    rw [hD i]; exact fp_layernorm_centred hu (hd i) hμ (hc i)
  -- 4. the reciprocal square roots
  have hρr := absv_rsqrt_sub_le hr0 hr hρ0 hρ hWb hWlt
  rw [← hω] at hρr
  have hRb : absv (rh - r) ≤ R * r := by
    rw [hR]; exact fp_layernorm_rsqrt_step hurs hρr hrh
  -- 5. t̂ = fl(ĉ r̂)
  have hTb : absv (th i - (x i - μ) * r) ≤ T i := by
    have h := fp_round_mul_le hu (hcD i) hRb (ht i)
    rw [absv_of_nonneg' (Std.le_of_lt hr0)] at h
    rw [hT i]; exact h
  -- 6. ŝ = fl(t̂ γ)
  have hSb : absv (sh i - (x i - μ) * r * γ i) ≤ S i := by
    have h := fp_round_mul_exact_le hu hTb (hs i)
    rw [absv_mul (x i - μ) r, absv_of_nonneg' (Std.le_of_lt hr0)] at h
    rw [hS i]; exact h
  -- 7. ŷ = fl(ŝ + β)
  have hcomm : (x i - μ) * r * γ i = γ i * ((x i - μ) * r) := by grind
  rw [hcomm] at hSb
  exact fp_round_add_le hu hSb (hy i)

/-- [fp_layernorm] The computed mean: the input's entries `x̂_i` (`|x̂_i − x_i| ≤ d_i`) added
in any order at `u` (`(n − 1) u < 1`), the sum divided by `n` and rounded
(`|μ̂ − ŝ/n| ≤ u_d |ŝ/n| + η_d`):
`|μ̂ − μ| ≤ ((1 + u_d)(1 + γ_{n−1}) − 1) Σ|x|/n + (1 + u_d)(1 + γ_{n−1}) Σ d/n + η_d`. -/
theorem fp_layernorm_mean {n : Nat} (hn : 0 < n) (R : Rounding α) (x xh d : Fin n → α)
    {ud ηd μh : α} (hud : 0 ≤ ud) (hd : ∀ i, absv (xh i - x i) ≤ d i) (t : STree (Fin n))
    (ht : t.IsOrder α) (hnu : ((n - 1 : Nat) : α) * R.u < 1)
    (hμ : absv (μh - t.eval R.fl xh * (n : α)⁻¹) ≤ ud * absv (t.eval R.fl xh * (n : α)⁻¹) + ηd) :
    absv (μh - rowMean x) ≤
      ((1 + ud) * (1 + gam R.u (n - 1)) - 1) * (finSum (fun i => absv (x i)) * (n : α)⁻¹) +
        (1 + ud) * (1 + gam R.u (n - 1)) * (finSum d * (n : α)⁻¹) + ηd := by
  have hd0 : ∀ i, 0 ≤ d i := fun i => Std.le_trans (absv_nonneg _) (hd i)
  have hs := fp_summation_perturbed R (f := x) (g := xh) (M := fun i => absv (x i)) (η := d)
    (e := 0) (Std.le_refl 0) hd0 (fun i => Std.le_refl _) (fun i => by have := hd i; grind)
    t ht hnu
  have hnpos : (0 : α) < (n : α) := by
    have := natCast_ne_zero_of_pos (α := α) hn
    have := OrderedRing.natCast_nonneg (R := α) (a := n); grind
  have hni := Std.le_of_lt (inv_pos_of_pos hnpos)
  have g0 := gam_nonneg R.u_nonneg hnu
  generalize hG : gam R.u (n - 1) = G at *
  generalize hS : t.eval R.fl xh = S at *
  generalize hA : finSum (fun i => absv (x i)) = A at *
  generalize hH : finSum d = H at *
  have hA0 : 0 ≤ A := by rw [← hA]; exact finSum_nonneg fun i => absv_nonneg _
  have hH0 : 0 ≤ H := by rw [← hH]; exact finSum_nonneg hd0
  have hs' : absv (S * (n : α)⁻¹ - rowMean x) ≤ G * (A * (n : α)⁻¹) + (1 + G) * (H * (n : α)⁻¹) := by
    have e : S * (n : α)⁻¹ - rowMean x = (S - finSum x) * (n : α)⁻¹ := by unfold rowMean; grind
    rw [e, absv_mul, absv_of_nonneg' hni]
    have := OrderedRing.mul_le_mul_of_nonneg_right hs hni
    grind
  have hxA : absv (rowMean x) ≤ A * (n : α)⁻¹ := by
    unfold rowMean
    rw [absv_mul, absv_of_nonneg' hni, ← hA]
    exact OrderedRing.mul_le_mul_of_nonneg_right (absv_finSum_le x) hni
  have hSn : absv (S * (n : α)⁻¹) ≤ (1 + G) * (A * (n : α)⁻¹) + (1 + G) * (H * (n : α)⁻¹) := by
    have := absv_le_of_absv_sub_le hs'; grind
  have := OrderedRing.mul_le_mul_of_nonneg_left hSn hud
  have := absv_sub_le_sub_add_sub μh (S * (n : α)⁻¹) (rowMean x)
  have hAn : 0 ≤ A * (n : α)⁻¹ := OrderedRing.mul_nonneg hA0 hni
  have hHn : 0 ≤ H * (n : α)⁻¹ := OrderedRing.mul_nonneg hH0 hni
  grind

/-- [fp_layernorm] The computed variance of the computed centred values: squares rounded
(`|ĝ_i − ĉ_i²| ≤ u ĉ_i² + η_m`), added in any order at `u` (`n u < 1`), divided by `n` and
rounded (`u_d`, `η_d`):
`|v̂ − Σ ĉ²/n| ≤ ((1 + u_d)(1 + γ_n) − 1) Σ ĉ²/n + (1 + u_d)(1 + γ_{n−1}) η_m + η_d`. -/
theorem fp_layernorm_variance {n : Nat} (hn : 0 < n) (R : Rounding α) (ch g : Fin n → α)
    {ud ηd ηm vh : α} (hud : 0 ≤ ud) (hηm : 0 ≤ ηm)
    (hg : ∀ i, absv (g i - ch i * ch i) ≤ R.u * absv (ch i * ch i) + ηm) (t : STree (Fin n))
    (ht : t.IsOrder α) (hnu : (n : α) * R.u < 1)
    (hv : absv (vh - t.eval R.fl g * (n : α)⁻¹) ≤ ud * absv (t.eval R.fl g * (n : α)⁻¹) + ηd) :
    absv (vh - finSum (fun i => ch i * ch i) * (n : α)⁻¹) ≤
      ((1 + ud) * (1 + gam R.u n) - 1) * (finSum (fun i => ch i * ch i) * (n : α)⁻¹) +
        ((1 + ud) * (1 + gam R.u (n - 1)) * ηm + ηd) := by
  have hs := fp_dot_product R ch ch g (fun _ => ηm) (fun _ => hηm) hg t ht hn hnu
  rw [finSum_const] at hs
  have habs : (fun i => absv (ch i) * absv (ch i)) = fun i => ch i * ch i := funext fun i => by
    rw [← absv_mul, absv_of_nonneg' (mul_self_nonneg' _)]
  rw [habs] at hs
  have hnpos : (0 : α) < (n : α) := by
    have := natCast_ne_zero_of_pos (α := α) hn
    have := OrderedRing.natCast_nonneg (R := α) (a := n); grind
  have hni := Std.le_of_lt (inv_pos_of_pos hnpos)
  have hnn : (n : α) * (n : α)⁻¹ = 1 := Field.mul_inv_cancel (by grind)
  have g0 := gam_nonneg R.u_nonneg hnu
  have g1 := gam_nonneg R.u_nonneg (pred_mul_lt R.u_nonneg hnu)
  generalize hG : gam R.u n = G at *
  generalize hG1 : gam R.u (n - 1) = G1 at *
  generalize hS : t.eval R.fl g = S at *
  generalize hA : finSum (fun i => ch i * ch i) = A at *
  have hA0 : 0 ≤ A := by rw [← hA]; exact finSum_nonneg fun i => mul_self_nonneg' _
  have hs' : absv (S * (n : α)⁻¹ - A * (n : α)⁻¹) ≤ G * (A * (n : α)⁻¹) + (1 + G1) * ηm := by
    rw [show S * (n : α)⁻¹ - A * (n : α)⁻¹ = (S - A) * (n : α)⁻¹ by grind, absv_mul,
      absv_of_nonneg' hni]
    have := OrderedRing.mul_le_mul_of_nonneg_right hs hni
    have e : (1 + G1) * ((n : α) * ηm) * (n : α)⁻¹ = (1 + G1) * ηm := by
      have : (1 + G1) * ((n : α) * ηm) * (n : α)⁻¹ = (1 + G1) * ηm * ((n : α) * (n : α)⁻¹) := by
        grind
      rw [this, hnn]; grind
    grind
  have hAn : 0 ≤ A * (n : α)⁻¹ := OrderedRing.mul_nonneg hA0 hni
  have hSn : absv (S * (n : α)⁻¹) ≤ (1 + G) * (A * (n : α)⁻¹) + (1 + G1) * ηm := by
    have := absv_le_of_absv_sub_le hs'
    rw [absv_of_nonneg' hAn] at this; grind
  have := OrderedRing.mul_le_mul_of_nonneg_left hSn hud
  have := absv_sub_le_sub_add_sub vh (S * (n : α)⁻¹) (A * (n : α)⁻¹)
  grind

/-- [fp_layernorm] `fp_layernorm` with the routine's statistics certified on its actual
input `x̂`, whatever algorithm computed them (Welford's moments, a cascade of partial
sums, a fused multiply-add): the computed mean within `m` of the mean of `x̂`, and `r̂`
within `u_rs ρ` of `ρ = 1/√(Σ ĉ²/n + ε)`, the reciprocal square root of the computed
centred values' mean square. The witnesses `v̂ := Σ ĉ²/n`, `ŵ := v̂ + ε` meet
`fp_layernorm`'s variance hypotheses with `e_v = η_v = 0`, and `|μ̂ − μ| ≤ m + Σ d/n`;
so with `D_i = (1 + u)(d_i + m + Σ d/n) + u |c_i|`, `Q = Σ D_i (2|c_i| + D_i) / n`,
`W = (1 + u) Q + u (v + ε)` and the rest as in `fp_layernorm`:
`|ŷ_i − (γ_i (x_i − μ) r + β_i)| ≤ (1 + u) S_i + u |γ_i (x_i − μ) r + β_i|`.
`m` and `u_rs` are numbers an implementation's outputs determine: `pyverify` computes them
per call in exact rational arithmetic (`pyverify/fp/learner.py`). -/
theorem fp_layernorm_certified {n : Nat} (hn : 0 < n) (x xh d γ β : Fin n → α)
    {eps u η urs m μh ρ rh r Q W ω R : α} (ch th sh yh D T S : Fin n → α)
    (hu : 0 ≤ u) (hurs : 0 ≤ urs)
    (hd : ∀ i, absv (xh i - x i) ≤ d i)
    (hμ : absv (μh - rowMean xh) ≤ m)
    (hc : ∀ i, absv (ch i - (xh i - μh)) ≤ u * absv (xh i - μh))
    (hρ0 : 0 < ρ) (hρ : ρ * ρ * (finSum (fun i => ch i * ch i) * (n : α)⁻¹ + eps) = 1)
    (hrh : absv (rh - ρ) ≤ urs * ρ)
    (hr0 : 0 < r) (hr : r * r * (rowVar x + eps) = 1)
    (ht : ∀ i, absv (th i - ch i * rh) ≤ u * absv (ch i * rh) + η)
    (hs : ∀ i, absv (sh i - th i * γ i) ≤ u * absv (th i * γ i) + η)
    (hy : ∀ i, absv (yh i - (sh i + β i)) ≤ u * absv (sh i + β i))
    (hD : ∀ i, D i = (1 + u) * (d i + (m + finSum d * (n : α)⁻¹)) +
      u * absv (x i - rowMean x))
    (hQ : Q = finSum (fun i => D i * (2 * absv (x i - rowMean x) + D i)) * (n : α)⁻¹)
    (hW : W = (1 + u) * Q + u * (rowVar x + eps))
    (hWlt : W < rowVar x + eps) (hω : ω = W * (rowVar x + eps - W)⁻¹)
    (hR : R = (1 + urs) * (1 + ω) - 1)
    (hT : ∀ i, T i = (1 + u) * (D i * r + absv (x i - rowMean x) * (R * r) + D i * (R * r)) +
      u * (absv (x i - rowMean x) * r) + η)
    (hS : ∀ i, S i = (1 + u) * (T i * absv (γ i)) +
      u * (absv (x i - rowMean x) * r * absv (γ i)) + η)
    (i : Fin n) :
    absv (yh i - (γ i * ((x i - rowMean x) * r) + β i)) ≤
      (1 + u) * S i + u * absv (γ i * ((x i - rowMean x) * r) + β i) := by
  have hnpos : (0 : α) < (n : α) := by
    have := natCast_ne_zero_of_pos (α := α) hn
    have := OrderedRing.natCast_nonneg (R := α) (a := n); grind
  have hni := Std.le_of_lt (inv_pos_of_pos hnpos)
  have hmean : absv (μh - rowMean x) ≤ m + finSum d * (n : α)⁻¹ := by
    have e : rowMean xh - rowMean x = finSum (fun i => xh i - x i) * (n : α)⁻¹ := by
      unfold rowMean; rw [finSum_sub]; grind
    have h1 : absv (rowMean xh - rowMean x) ≤ finSum d * (n : α)⁻¹ := by
      rw [e, absv_mul, absv_of_nonneg' hni]
      exact OrderedRing.mul_le_mul_of_nonneg_right
        (Std.le_trans (absv_finSum_le _) (finSum_le_finSum hd)) hni
    have := absv_sub_le_sub_add_sub μh (rowMean xh) (rowMean x)
    grind
  have hz : ∀ a : α, absv (a - a) = 0 := fun a => by unfold absv; split <;> grind
  exact fp_layernorm hn x xh d γ β (Δμ := m + finSum d * (n : α)⁻¹) (ev := 0) (ηv := 0)
    (vh := finSum (fun i => ch i * ch i) * (n : α)⁻¹)
    (wh := finSum (fun i => ch i * ch i) * (n : α)⁻¹ + eps) (V := Q)
    ch th sh yh D T S hu hurs (Std.le_refl 0) hd hmean hc (by rw [hz]; grind)
    (by rw [hz]; exact OrderedRing.mul_nonneg hu (absv_nonneg _)) hρ0 hρ hrh hr0 hr ht hs hy
    hD hQ (by grind) hW hWlt hω hR hT hS i

end Pldr

end
