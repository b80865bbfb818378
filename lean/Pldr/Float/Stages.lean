module

public import Pldr.Float.LayerNorm
public import Pldr.Float.Head
public import Pldr.HadamardPower
public import Pldr.PrefixPipeline

/-!
# Floating-point SwiGLU blocks and power laws  (`[fp_swiglu]`, `[fp_power_law]`)

Forward-error bounds of two more stages of the decoder and the metric learner, each a
bound on a computed quantity given the previous stage's error bound as an input.

* `fp_linear_propagated`: an affine stage `y_j = Σ_k x_k W_kj + b_j` computed on an input
  off by `d` within `B_j` of its exact value on that input (`fp_mixed_precision`):
  `|ŷ_j − y_j| ≤ B_j + Σ_k d_k |W_kj|`.
* `fp_swiglu_sigmoid`: a computed sigmoid `fl(1 / fl(1 + ê))`, `ê` an exponential of
  `−z` of relative accuracy `u_exp` and absolute error `η_e`, the quotient with absolute
  term `η_q`: `|σ̂ − σ(z)| ≤ κ σ(z) + η_q`, `κ = (1 + u)/(1 − δ) − 1`,
  `δ = (1 + u)(1 + u_exp + η_e) − 1 < 1`.
* `fp_swiglu_silu`: `ŝ = fl(ĥ σ̂)` on an argument off by `d₁`, silu `L`-Lipschitz:
  `|ŝ − silu h| ≤ ((1 + u)(1 + κ) − 1)(|silu h| + L d₁) + (1 + u)(|h| + d₁) η_q + η + L d₁`.
* `[fp_swiglu]` `fp_swiglu`: the block `(silu(x W₁ + b₁) ∘ (x W₂ + b₂)) W₃ + b₃`: the
  three affine stages with their local bounds `B₁`, `B₂`, `B₃`, the sigmoid, silu and the
  product rounded:
  `|ô_o − o_o| ≤ B₃_o + Σ_j dp_j |W₃_jo|` with `d₁ = B₁ + Σ_k d_k |W₁_kj|` (and `d₂`),
  `ds` the silu bound above and `dp_j = (1 + u)(ds_j |h₂_j| + |s_j| d₂_j + ds_j d₂_j)
  + u |s_j| |h₂_j| + η` (`s_j = silu(h₁_j)`).
* `PowMul`: a power with the exponent laws (`PowLaws`) that is multiplicative in the base
  and monotone in it for nonnegative exponents (`Real.mul_rpow`, `Real.rpow_le_rpow`);
  `PowMul.within_rpow`: a base within a factor `c ≥ 1` gives a power within `c^{|P|}`.
* `[fp_power_law]` `fp_power_law`: `A_P = A_LM ^ P` entrywise on a relatively perturbed
  positive base (`|â − a| ≤ ρ a`, `ρ < 1`) with a power routine of accuracy `u_pow`
  (absolute error `η_pow`): `|π̂ − a^P| ≤ ((1 + u_pow)(1 − ρ)^{−|P|} − 1) a^P + η_pow`;
  `_hpow`: the matrix form.

`silu` is `Pldr.silu` of `Pldr.PrefixPipeline` (`z σ(z)`).

Abstracted: `exp` is an `ExpMap` and the library exponential's accuracy an interface
parameter; silu's Lipschitz constant `L` is a hypothesis (a fact of the real function,
`L = 1.0998…`); the power is a `PowMul` (no model over `Rat` but the degenerate
`PowMul.one`; `Real.rpow` is the intended one) and the power routine's accuracy an
interface parameter. There are no unproved assumptions.
-/

public noncomputable section

set_option linter.unusedSectionVars false

namespace Pldr

open Lean.Grind FP

universe u

variable {α : Type u} [Field α] [LE α] [LT α] [Std.LawfulOrderLT α] [Std.IsLinearOrder α]
  [OrderedRing α]

attribute [local instance] Lean.Grind.Semiring.natCast

/-! ### Affine stages -/

/-- An affine map of a row: `(x W + b)_j = Σ_k x_k W_kj + b_j`. -/
@[expose] def affine {n f : Nat} (x : Fin n → α) (W : Fin n → Fin f → α) (b : Fin f → α) :
    Fin f → α :=
  fun j => finSum (fun k => x k * W k j) + b j

/-- An affine stage on a computed input: the kernel is within `B` of the affine map of its
own input `x̂` (`fp_mixed_precision` with the bias as one more term), and `|x̂_k − x_k| ≤ d_k`:
`|ŷ_j − (x W + b)_j| ≤ B + Σ_k d_k |W_kj|`. -/
theorem fp_linear_propagated {n f : Nat} (x xh d : Fin n → α) (W : Fin n → Fin f → α)
    (b : Fin f → α) (j : Fin f) {B y : α} (hx : ∀ k, absv (xh k - x k) ≤ d k)
    (hy : absv (y - affine xh W b j) ≤ B) :
    absv (y - affine x W b j) ≤ B + finSum (fun k => d k * absv (W k j)) := by
  unfold affine at hy ⊢
  have h := fp_mixed_precision_propagated (fun k => W k j) x xh d (B := B) (y := y - b j) hx
    (by
      have e : y - b j - finSum (fun k => W k j * xh k) =
          y - (finSum (fun k => xh k * W k j) + b j) := by
        have : finSum (fun k => W k j * xh k) = finSum (fun k => xh k * W k j) := by
          congr 1; funext k; grind
        rw [this]; grind
      rw [e]; exact hy)
  have e1 : y - b j - finSum (fun k => W k j * x k) = y - (finSum (fun k => x k * W k j) + b j) := by
    have : finSum (fun k => W k j * x k) = finSum (fun k => x k * W k j) := by
      congr 1; funext k; grind
    rw [this]; grind
  have e2 : finSum (fun k => absv (W k j) * d k) = finSum (fun k => d k * absv (W k j)) := by
    congr 1; funext k; grind
  rw [e1, e2] at h; exact h

/-! ### Sigmoid and silu -/

/-- [fp_swiglu] A computed sigmoid `σ̂ = fl(1 / fl(1 + ê))`: the exponential of `−z` with
relative accuracy `u_exp` and absolute error `η_e`, the sum rounded at `u`, the quotient
rounded at `u` with absolute term `η_q`; `δ = (1 + u)(1 + u_exp + η_e) − 1 < 1`:
`|σ̂ − σ(z)| ≤ ((1 + u)(1 − δ)⁻¹ − 1) σ(z) + η_q`. -/
theorem fp_swiglu_sigmoid (E : ExpMap α) {z eh Dh σh u uexp ηe ηq δ : α} (hu : 0 ≤ u)
    (huexp : 0 ≤ uexp) (hηe : 0 ≤ ηe)
    (he : absv (eh - E.exp (-z)) ≤ uexp * E.exp (-z) + ηe)
    (hD : absv (Dh - (1 + eh)) ≤ u * absv (1 + eh))
    (hσ : absv (σh - 1 / Dh) ≤ u * absv (1 / Dh) + ηq)
    (hδ : δ = (1 + u) * (1 + uexp + ηe) - 1) (hδ1 : δ < 1) :
    absv (σh - sigmoid E z) ≤ ((1 + u) * (1 - δ)⁻¹ - 1) * sigmoid E z + ηq := by
  have hepos := E.exp_pos (-z)
  generalize hed : E.exp (-z) = e at *
  have hσz : sigmoid E z = (1 + e)⁻¹ := by
    unfold sigmoid; rw [hed, Field.div_eq_mul_inv]; grind
  rw [hσz]
  have hD0 : 0 < 1 + e := by grind
  -- |1 + ê − D| ≤ a D,  a = u_exp + η_e
  have ha : absv ((1 + eh) - (1 + e)) ≤ (uexp + ηe) * (1 + e) := by
    rw [show (1 + eh) - (1 + e) = eh - e by grind]
    have := OrderedRing.mul_le_mul_of_nonneg_left (by grind : e ≤ 1 + e) huexp
    have := OrderedRing.mul_le_mul_of_nonneg_left (by grind : (1 : α) ≤ 1 + e) hηe
    grind
  have hb : absv (1 + eh) ≤ (1 + (uexp + ηe)) * (1 + e) := by
    have := absv_le_of_absv_sub_le ha
    rw [absv_of_nonneg' (Std.le_of_lt hD0)] at this; grind
  have hDh : absv (Dh - (1 + e)) ≤ δ * (1 + e) := by
    rw [hδ]
    have := OrderedRing.mul_le_mul_of_nonneg_left hb hu
    have := absv_sub_le_sub_add_sub Dh (1 + eh) (1 + e)
    grind
  have hδ0 : 0 ≤ δ := by
    rw [hδ]; have := OrderedRing.mul_nonneg hu (by grind : (0 : α) ≤ uexp + ηe); grind
  have hw := within_of_absv_sub_le (Std.le_of_lt hD0) hδ0 hδ1 hDh
  have hpos : 0 < 1 - δ := by grind
  have hc1 : 1 ≤ (1 - δ)⁻¹ := one_le_inv hpos (by grind)
  have hwi := hw.inv (by grind) hD0
  have hDi := inv_pos_of_pos hD0
  have hq := hwi.absv_sub_le hc1 (Std.le_of_lt hDi)
  have hDhpos : 0 < Dh := by
    have := hw.1; have := OrderedRing.mul_pos (inv_pos_of_pos (inv_pos_of_pos hpos)) hD0
    rw [Field.inv_inv] at *; grind
  have hqa : absv (1 / Dh) ≤ (1 - δ)⁻¹ * (1 + e)⁻¹ := by
    rw [Field.div_eq_mul_inv, Semiring.one_mul, absv_of_nonneg' (Std.le_of_lt (inv_pos_of_pos hDhpos))]
    exact hwi.2
  have h1 := OrderedRing.mul_le_mul_of_nonneg_left hqa hu
  have h2 : 1 / Dh = Dh⁻¹ := by rw [Field.div_eq_mul_inv, Semiring.one_mul]
  have := absv_sub_le_sub_add_sub σh (1 / Dh) (1 + e)⁻¹
  rw [h2] at this hσ h1
  grind

/-- [fp_swiglu] silu on a computed argument: `|ĥ − h| ≤ d₁`, silu `L`-Lipschitz, the
sigmoid at `ĥ` within `κ σ(ĥ) + η_q` (`fp_swiglu_sigmoid`), the product `fl(ĥ σ̂)` rounded
(`u`, `η`):
`|ŝ − silu h| ≤ ((1 + u)(1 + κ) − 1)(|silu h| + L d₁) + (1 + u)(|h| + d₁) η_q + η + L d₁`. -/
theorem fp_swiglu_silu (E : ExpMap α) {h hh σh sh d1 L κ u η ηq : α} (hu : 0 ≤ u)
    (hκ : 0 ≤ κ) (hL0 : 0 ≤ L) (hηq : 0 ≤ ηq)
    (hL : absv (silu E hh - silu E h) ≤ L * absv (hh - h)) (hd : absv (hh - h) ≤ d1)
    (hσ : absv (σh - sigmoid E hh) ≤ κ * sigmoid E hh + ηq)
    (hs : absv (sh - hh * σh) ≤ u * absv (hh * σh) + η) :
    absv (sh - silu E h) ≤ ((1 + u) * (1 + κ) - 1) * (absv (silu E h) + L * d1) +
      (1 + u) * (absv h + d1) * ηq + η + L * d1 := by
  have hsp := sigmoid_pos E hh
  have h1 := fp_round_mul_le (a := hh) (da := 0) hu (by rw [show hh - hh = 0 by grind]; unfold absv; split <;> grind) hσ hs
  have hsil : absv hh * absv (sigmoid E hh) = absv (silu E hh) := by
    unfold silu; rw [absv_mul]
  rw [absv_of_nonneg' (Std.le_of_lt hsp)] at hsil
  have hsl : absv (silu E hh) ≤ absv (silu E h) + L * d1 := by
    have := absv_le_of_absv_sub_le hL
    have := OrderedRing.mul_le_mul_of_nonneg_left hd hL0; grind
  have hhh : absv hh ≤ absv h + d1 := absv_le_of_absv_sub_le hd
  have hLd : absv (silu E hh - silu E h) ≤ L * d1 :=
    Std.le_trans hL (OrderedRing.mul_le_mul_of_nonneg_left hd hL0)
  have e1 : (1 + u) * (0 * absv (sigmoid E hh) + absv hh * (κ * sigmoid E hh + ηq) +
      0 * (κ * sigmoid E hh + ηq)) + u * (absv hh * absv (sigmoid E hh)) + η =
      ((1 + u) * (1 + κ) - 1) * absv (silu E hh) + (1 + u) * absv hh * ηq + η := by
    rw [absv_of_nonneg' (Std.le_of_lt hsp), ← hsil]; grind
  rw [e1] at h1
  have hk : 0 ≤ (1 + u) * (1 + κ) - 1 := by have := OrderedRing.mul_nonneg hu hκ; grind
  have m1 := OrderedRing.mul_le_mul_of_nonneg_left hsl hk
  have m2 := OrderedRing.mul_le_mul_of_nonneg_right
    (OrderedRing.mul_le_mul_of_nonneg_left hhh (by grind : (0 : α) ≤ 1 + u)) hηq
  have := absv_sub_le_sub_add_sub sh (hh * sigmoid E hh) (silu E h)
  have e2 : hh * sigmoid E hh = silu E hh := rfl
  rw [e2] at this h1
  grind

/-- The SwiGLU block `(silu(x W₁ + b₁) ∘ (x W₂ + b₂)) W₃ + b₃`. -/
@[expose] def swiglu {n f m : Nat} (E : ExpMap α) (W1 W2 : Fin n → Fin f → α)
    (b1 b2 : Fin f → α) (W3 : Fin f → Fin m → α) (b3 : Fin m → α) (x : Fin n → α) :
    Fin m → α :=
  affine (fun j => silu E (affine x W1 b1 j) * affine x W2 b2 j) W3 b3

/-- [fp_swiglu] A SwiGLU block in floating point (Shazeer, "GLU variants improve
transformer", 2020, for the block; the error composed stage by stage, Higham §3.3): on an
input off by `d`, the affine stages `ĥ₁, ĥ₂, ô` within `B₁, B₂, B₃` of the exact affine
maps of their own computed inputs (`fp_mixed_precision`), the sigmoid as
`fl(1 / fl(1 + ê(−ĥ₁)))` (`fp_swiglu_sigmoid`, `κ`), `ŝ = fl(ĥ₁ σ̂)`, `p̂ = fl(ŝ ĥ₂)`
(products at `u`, `η`), silu `L`-Lipschitz: with `h₁ = x W₁ + b₁`, `h₂ = x W₂ + b₂`,
`d₁ = B₁ + Σ_k d_k |W₁_kj|`, `d₂` likewise, `ds_j` the bound of `fp_swiglu_silu` and
`dp_j = (1 + u)(ds_j |h₂_j| + |silu h₁_j| d₂_j + ds_j d₂_j) + u |silu h₁_j| |h₂_j| + η`:
`|ô_o − swiglu(x)_o| ≤ B₃_o + Σ_j dp_j |W₃_jo|`. -/
theorem fp_swiglu {n f m : Nat} (E : ExpMap α) (x xh d : Fin n → α)
    (W1 W2 : Fin n → Fin f → α) (b1 b2 : Fin f → α) (W3 : Fin f → Fin m → α) (b3 : Fin m → α)
    (h1h h2h eh Dh σh sh ph B1 B2 d1 d2 ds dp : Fin f → α) (oh B3 : Fin m → α)
    {u η uexp ηe ηq L δ κ : α}
    (hu : 0 ≤ u) (huexp : 0 ≤ uexp) (hηe : 0 ≤ ηe) (hηq : 0 ≤ ηq) (hL0 : 0 ≤ L)
    (hL : ∀ a b, absv (silu E a - silu E b) ≤ L * absv (a - b))
    (hd : ∀ k, absv (xh k - x k) ≤ d k)
    (hh1 : ∀ j, absv (h1h j - affine xh W1 b1 j) ≤ B1 j)
    (hh2 : ∀ j, absv (h2h j - affine xh W2 b2 j) ≤ B2 j)
    (he : ∀ j, absv (eh j - E.exp (-h1h j)) ≤ uexp * E.exp (-h1h j) + ηe)
    (hD : ∀ j, absv (Dh j - (1 + eh j)) ≤ u * absv (1 + eh j))
    (hσ : ∀ j, absv (σh j - 1 / Dh j) ≤ u * absv (1 / Dh j) + ηq)
    (hs : ∀ j, absv (sh j - h1h j * σh j) ≤ u * absv (h1h j * σh j) + η)
    (hp : ∀ j, absv (ph j - sh j * h2h j) ≤ u * absv (sh j * h2h j) + η)
    (ho : ∀ o, absv (oh o - affine ph W3 b3 o) ≤ B3 o)
    (hδ : δ = (1 + u) * (1 + uexp + ηe) - 1) (hδ1 : δ < 1)
    (hκ : κ = (1 + u) * (1 - δ)⁻¹ - 1)
    (hd1 : ∀ j, d1 j = B1 j + finSum (fun k => d k * absv (W1 k j)))
    (hd2 : ∀ j, d2 j = B2 j + finSum (fun k => d k * absv (W2 k j)))
    (hds : ∀ j, ds j = ((1 + u) * (1 + κ) - 1) *
      (absv (silu E (affine x W1 b1 j)) + L * d1 j) +
        (1 + u) * (absv (affine x W1 b1 j) + d1 j) * ηq + η + L * d1 j)
    (hdp : ∀ j, dp j = (1 + u) * (ds j * absv (affine x W2 b2 j) +
      absv (silu E (affine x W1 b1 j)) * d2 j + ds j * d2 j) +
        u * (absv (silu E (affine x W1 b1 j)) * absv (affine x W2 b2 j)) + η)
    (o : Fin m) :
    absv (oh o - swiglu E W1 W2 b1 b2 W3 b3 x o) ≤ B3 o + finSum (fun j => dp j * absv (W3 j o)) := by
  have hκ0 : 0 ≤ κ := by
    rw [hκ]
    have hpos : 0 < 1 - δ := by grind
    have hδ0 : 0 ≤ δ := by
      rw [hδ]; have := OrderedRing.mul_nonneg hu (by grind : (0 : α) ≤ uexp + ηe); grind
    have := one_le_inv hpos (by grind)
    have := OrderedRing.mul_le_mul_of_nonneg_left this (by grind : (0 : α) ≤ 1 + u)
    grind
  have hp' : ∀ j, absv (ph j - silu E (affine x W1 b1 j) * affine x W2 b2 j) ≤ dp j := fun j => by
    have e1 := fp_linear_propagated x xh d W1 b1 j hd (hh1 j)
    have e2 := fp_linear_propagated x xh d W2 b2 j hd (hh2 j)
    rw [← hd1 j] at e1; rw [← hd2 j] at e2
    have hsg := fp_swiglu_sigmoid E hu huexp hηe (he j) (hD j) (hσ j) hδ hδ1
    rw [← hκ] at hsg
    have hsl := fp_swiglu_silu E hu hκ0 hL0 hηq (hL _ _) e1 hsg (hs j)
    rw [← hds j] at hsl
    have := fp_round_mul_le hu hsl e2 (hp j)
    rw [hdp j]; exact this
  unfold swiglu
  exact fp_linear_propagated _ ph dp W3 b3 o hp' (ho o)

/-! ### Power laws -/

/-- An abstract real power with the exponent laws (`PowLaws`), multiplicative in the base
and monotone in it for nonnegative exponents (true of `Real.rpow`: `Real.mul_rpow`,
`Real.rpow_le_rpow`). -/
structure PowMul (α : Type u) [Field α] [LE α] [LT α] extends PowLaws α where
  /-- `(x y)^e = x^e y^e` for `x, y > 0`. -/
  rpow_mul_base : ∀ x y e, 0 < x → 0 < y → rpow (x * y) e = rpow x e * rpow y e
  /-- `x ≤ y → x^e ≤ y^e` for `0 < x`, `0 ≤ e`. -/
  rpow_mono : ∀ x y e, 0 < x → x ≤ y → 0 ≤ e → rpow x e ≤ rpow y e

/-- The constant power `x^y = 1`: a lawful (degenerate) model of `PowMul`. -/
@[expose] def PowMul.one : PowMul α where
  toPowLaws := PowLaws.one
  rpow_mul_base := fun _ _ _ _ _ => by show (1 : α) = 1 * 1; grind
  rpow_mono := fun _ _ _ _ _ _ => by show (1 : α) ≤ 1; grind

namespace PowMul

variable (pw : PowMul α)

/-- `1^e = 1`. -/
theorem rpow_one_base (e : α) : pw.rpow 1 e = 1 := by
  have h := pw.rpow_mul_base 1 1 e OrderedRing.zero_lt_one OrderedRing.zero_lt_one
  have hp := pw.rpow_pos 1 e OrderedRing.zero_lt_one
  rw [Semiring.one_mul] at h
  have hi : pw.rpow 1 e * (pw.rpow 1 e)⁻¹ = 1 := Field.mul_inv_cancel (by grind)
  have : pw.rpow 1 e * (pw.rpow 1 e)⁻¹ = pw.rpow 1 e * pw.rpow 1 e * (pw.rpow 1 e)⁻¹ := by
    rw [← h]
  grind

/-- `(x⁻¹)^e = (x^e)⁻¹` for `x > 0`. -/
theorem rpow_inv_base {x : α} (hx : 0 < x) (e : α) : pw.rpow x⁻¹ e = (pw.rpow x e)⁻¹ := by
  have hxi := inv_pos_of_pos hx
  have h := pw.rpow_mul_base x x⁻¹ e hx hxi
  rw [Field.mul_inv_cancel (by grind), rpow_one_base] at h
  have hp := pw.rpow_pos x e hx
  have hi : pw.rpow x e * (pw.rpow x e)⁻¹ = 1 := Field.mul_inv_cancel (by grind)
  have : (pw.rpow x e)⁻¹ = (pw.rpow x e)⁻¹ * (pw.rpow x e * pw.rpow x⁻¹ e) := by rw [← h]; grind
  rw [this]; grind

/-- `x^{−e} = (x^e)⁻¹` for `x > 0`. -/
theorem rpow_neg_exp {x : α} (hx : 0 < x) (e : α) : pw.rpow x (-e) = (pw.rpow x e)⁻¹ := by
  have h := pw.rpow_add x e (-e) hx
  rw [show e + -e = 0 by grind, pw.rpow_zero x hx] at h
  have hp := pw.rpow_pos x e hx
  have hi : pw.rpow x e * (pw.rpow x e)⁻¹ = 1 := Field.mul_inv_cancel (by grind)
  have : (pw.rpow x e)⁻¹ = (pw.rpow x e)⁻¹ * (pw.rpow x e * pw.rpow x (-e)) := by rw [← h]; grind
  rw [this]; grind

/-- A number within a factor `c` of `1` has its `e`-th power (`e ≥ 0`) within `c^e` of `1`. -/
theorem within_rpow_one_nonneg {c t e : α} (hc : 1 ≤ c) (he : 0 ≤ e) (h : Within c t 1) :
    Within (pw.rpow c e) (pw.rpow t e) 1 := by
  have hc0 : 0 < c := by grind
  have hci := inv_pos_of_pos hc0
  obtain ⟨h1, h2⟩ := h
  rw [Semiring.mul_one] at h1 h2
  have ht : 0 < t := Std.lt_of_lt_of_le hci h1
  constructor
  · rw [Semiring.mul_one, ← pw.rpow_inv_base hc0]
    exact pw.rpow_mono _ _ e hci h1 he
  · rw [Semiring.mul_one]; exact pw.rpow_mono _ _ e ht h2 he

/-- A positive base within a factor `c ≥ 1` of `a > 0` gives a power within `c^{|P|}`:
`Within c a' a → Within (c^{|P|}) (a'^P) (a^P)`. -/
theorem within_rpow {c a a' P : α} (hc : 1 ≤ c) (ha : 0 < a) (h : Within c a' a) :
    Within (pw.rpow c (absv P)) (pw.rpow a' P) (pw.rpow a P) := by
  have hc0 : 0 < c := by grind
  have ha' : 0 < a' := by
    have := OrderedRing.mul_pos (inv_pos_of_pos hc0) ha; exact Std.lt_of_lt_of_le this h.1
  have hai := inv_pos_of_pos ha
  have haa : a * a⁻¹ = 1 := Field.mul_inv_cancel (by grind)
  generalize htd : a' * a⁻¹ = t
  have ht0 : 0 < t := by rw [← htd]; exact OrderedRing.mul_pos ha' hai
  have ha't : a' = a * t := by rw [← htd]; grind
  have hwt : Within c t 1 := by
    obtain ⟨h1, h2⟩ := h
    constructor
    · rw [← htd]
      have := OrderedRing.mul_le_mul_of_nonneg_right h1 (Std.le_of_lt hai)
      have e : c⁻¹ * a * a⁻¹ = c⁻¹ * (a * a⁻¹) := by grind
      rw [e, haa] at this; exact this
    · rw [← htd]
      have := OrderedRing.mul_le_mul_of_nonneg_right h2 (Std.le_of_lt hai)
      have e : c * a * a⁻¹ = c * (a * a⁻¹) := by grind
      rw [e, haa] at this; exact this
  have hK : Within (pw.rpow c (absv P)) (pw.rpow t P) 1 := by
    by_cases hP : 0 ≤ P
    · rw [absv_of_nonneg' hP]; exact pw.within_rpow_one_nonneg hc hP hwt
    · have hP' : 0 ≤ -P := by grind
      have habs : absv P = -P := by unfold absv; simp [hP]
      rw [habs]
      have w := pw.within_rpow_one_nonneg hc hP' hwt
      have wi := w.inv (pw.rpow_pos c (-P) hc0) OrderedRing.zero_lt_one
      rw [Field.inv_one, ← pw.rpow_neg_exp ht0, show -(-P) = P by grind] at wi
      exact wi
  have hA := pw.rpow_pos a P ha
  rw [ha't, pw.rpow_mul_base a t P ha ht0]
  obtain ⟨k1, k2⟩ := hK
  rw [Semiring.mul_one] at k1 k2
  constructor
  · have := OrderedRing.mul_le_mul_of_nonneg_left k1 (Std.le_of_lt hA); grind
  · have := OrderedRing.mul_le_mul_of_nonneg_left k2 (Std.le_of_lt hA); grind

/-- `c^e ≥ 1` for `c ≥ 1`, `e ≥ 0`. -/
theorem one_le_rpow {c e : α} (hc : 1 ≤ c) (he : 0 ≤ e) : 1 ≤ pw.rpow c e := by
  rw [← pw.rpow_one_base e]; exact pw.rpow_mono 1 c e OrderedRing.zero_lt_one hc he

end PowMul

/-- [fp_power_law] The power law `A_P = A_LM ^ P` entrywise in floating point (the
relative condition number of `x ↦ x^P` is `|P|`; the PLGA metric of the paper): a positive base `a` computed as `â` with `|â − a| ≤ ρ a` (`ρ < 1`, the previous
stage's relative error), a power routine of relative accuracy `u_pow` and absolute error
`η_pow` at its computed argument (`|π̂ − â^P| ≤ u_pow â^P + η_pow`),
`c = ((1 − ρ)⁻¹)^{|P|}`: `|π̂ − a^P| ≤ ((1 + u_pow) c − 1) a^P + η_pow`. -/
theorem fp_power_law (pw : PowMul α) {a ah P ρ πh upow ηpow c : α} (ha : 0 < a)
    (hρ0 : 0 ≤ ρ) (hρ1 : ρ < 1) (hupow : 0 ≤ upow)
    (hah : absv (ah - a) ≤ ρ * a)
    (hπ : absv (πh - pw.rpow ah P) ≤ upow * pw.rpow ah P + ηpow)
    (hc : c = pw.rpow (1 - ρ)⁻¹ (absv P)) :
    absv (πh - pw.rpow a P) ≤ ((1 + upow) * c - 1) * pw.rpow a P + ηpow := by
  have hw := within_of_absv_sub_le (Std.le_of_lt ha) hρ0 hρ1 hah
  have hpos : 0 < 1 - ρ := by grind
  have hK1 : 1 ≤ (1 - ρ)⁻¹ := one_le_inv hpos (by grind)
  have hwP := pw.within_rpow (P := P) hK1 ha hw
  rw [← hc] at hwP
  have hc1 : 1 ≤ c := by rw [hc]; exact pw.one_le_rpow hK1 (absv_nonneg P)
  have hA := pw.rpow_pos a P ha
  have d1 := hwP.absv_sub_le hc1 (Std.le_of_lt hA)
  have d2 := OrderedRing.mul_le_mul_of_nonneg_left hwP.2 hupow
  have := absv_sub_le_sub_add_sub πh (pw.rpow ah P) (pw.rpow a P)
  grind

/-- [fp_power_law] The matrix form: `|P̂_ij − (A^{∘P})_ij| ≤ ((1 + u_pow) c_ij − 1)(A^{∘P})_ij
+ η_pow` for an entrywise positive `A` computed within `ρ_ij A_ij`,
`c_ij = ((1 − ρ_ij)⁻¹)^{|P_ij|}`. -/
theorem fp_power_law_hpow {d : Nat} (pw : PowMul α) (A Ah P Ph ρ c : Mat α d d)
    {upow ηpow : α} (hA : ∀ i j, 0 < A i j) (hρ0 : ∀ i j, 0 ≤ ρ i j) (hρ1 : ∀ i j, ρ i j < 1)
    (hupow : 0 ≤ upow) (hAh : ∀ i j, absv (Ah i j - A i j) ≤ ρ i j * A i j)
    (hPh : ∀ i j, absv (Ph i j - hpow pw.toPowMap Ah P i j) ≤
      upow * hpow pw.toPowMap Ah P i j + ηpow)
    (hc : ∀ i j, c i j = pw.rpow (1 - ρ i j)⁻¹ (absv (P i j))) (i j : Fin d) :
    absv (Ph i j - hpow pw.toPowMap A P i j) ≤
      ((1 + upow) * c i j - 1) * hpow pw.toPowMap A P i j + ηpow :=
  fp_power_law pw (hA i j) (hρ0 i j) (hρ1 i j) hupow (hAh i j) (hPh i j) (hc i j)

end Pldr

end
