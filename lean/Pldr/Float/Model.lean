module

public import Pldr.ScorePerturbation

/-!
# Floating point: the rounding model, `γₙ` and the product lemma

The standard model of floating-point arithmetic (Higham, *Accuracy and Stability of
Numerical Algorithms*, §2.2), over any ordered field `α`:

* `Rounding α`: a rounding map `fl : α → α` with unit round-off `u ≥ 0` and
  `|fl x − x| ≤ u |x|` for every `x`. An operation rounds its exact result: a computed
  sum is `fl (a + b)`, a product `fl (a * b)`, a fused multiply-add `fl (a * b + c)`
  (one rounding of the exact `a b + c`; in the summation trees of `Pldr.Float.Sum` an
  FMA is a node whose child is the exact product). `Rounding.exists_eq_mul`: every
  rounding is `fl x = x (1 + δ)` with `|δ| ≤ u`.
* `gam u n = n u / (1 − n u)` (Higham's `γₙ`), with `(1 + γ_j)(1 + γ_k) ≤ 1 + γ_{j+k}`
  (`one_add_gam_mul_le`).
* `Within c x y`: `x` lies within a factor `c` of `y ≥ 0`, `y / c ≤ x ≤ c y`. Factors
  compose under products, quotients, sums of nonnegative terms and chains (`Within.mul`,
  `Within.inv`, `Within.add`, `Within.trans`); one rounding of a nonnegative number is
  within `1 + γ₁ = 1 / (1 − u)` (`Rounding.within`), and `|x − y| ≤ (c − 1) y`
  (`Within.absv_sub_le`).
* The product lemma (`fp_prod_gamma`): `∏ᵢ (1 + δᵢ) = 1 + θₙ` with `|θₙ| ≤ γₙ` when every
  `|δᵢ| ≤ u` and `n u < 1`.

Underflow and overflow, for every `Pldr.Float` module: `|fl x − x| ≤ u |x|` holds for
IEEE rounding to nearest in the normal range. Below it, a product, quotient,
exponential or conversion to a narrower format has an absolute error up to half the
smallest subnormal spacing `η`; the theorems of `Pldr.Float.Sum`, `.Softmax` and `.Head`
carry such absolute terms in their hypotheses on the rounded quantities (the leaves, the
exponentials, the quotients, the outputs), while a `Rounding` (`fl`) is used only for the
partial sums of a summation tree, which need none: the exact sum of two floating-point
numbers that lies below the normal range is representable (gradual underflow). Overflow
is outside the model. There are no unproved assumptions.
-/

public noncomputable section

set_option linter.unusedSectionVars false

namespace Pldr

open Lean.Grind

universe u

variable {α : Type u} [Field α] [LE α] [LT α] [Std.LawfulOrderLT α] [Std.IsLinearOrder α]
  [OrderedRing α]

attribute [local instance] Lean.Grind.Semiring.natCast

namespace FP

/-! ### Order facts of an ordered field -/

/-- Products of inequalities between nonnegative numbers. -/
theorem mul_le_mul_of_le_of_le {a b c d : α} (hab : a ≤ b) (hcd : c ≤ d) (hb : 0 ≤ b)
    (hc : 0 ≤ c) : a * c ≤ b * d :=
  Std.le_trans (OrderedRing.mul_le_mul_of_nonneg_right hab hc)
    (OrderedRing.mul_le_mul_of_nonneg_left hcd hb)

/-- Inversion reverses the order of positive numbers. -/
theorem inv_le_inv_of_le {x y : α} (hx : 0 < x) (h : x ≤ y) : y⁻¹ ≤ x⁻¹ := by
  have hy : 0 < y := by grind
  have hyi := inv_pos_of_pos hy
  have hxi := inv_pos_of_pos hx
  have h1 : x * y⁻¹ ≤ y * y⁻¹ := OrderedRing.mul_le_mul_of_nonneg_right h (by grind)
  have h2 : y * y⁻¹ = 1 := Field.mul_inv_cancel (by grind)
  have h3 : x * y⁻¹ * x⁻¹ ≤ 1 * x⁻¹ :=
    OrderedRing.mul_le_mul_of_nonneg_right (by grind) (by grind)
  have h4 : x * x⁻¹ = 1 := Field.mul_inv_cancel (by grind)
  have e : x * y⁻¹ * x⁻¹ = y⁻¹ * (x * x⁻¹) := by grind
  rw [e, h4] at h3; grind

/-- `a ≤ b c⁻¹` from `a c ≤ b`, for `c > 0`. -/
theorem le_mul_inv_of_mul_le {a b c : α} (hc : 0 < c) (h : a * c ≤ b) : a ≤ b * c⁻¹ := by
  have hci := inv_pos_of_pos hc
  have h1 : a * c * c⁻¹ ≤ b * c⁻¹ := OrderedRing.mul_le_mul_of_nonneg_right h (by grind)
  have h2 : c * c⁻¹ = 1 := Field.mul_inv_cancel (by grind)
  have e : a * c * c⁻¹ = a * (c * c⁻¹) := by grind
  rw [e, h2] at h1; grind

/-- `a c⁻¹ ≤ b` from `a ≤ b c`, for `c > 0`. -/
theorem mul_inv_le_of_le_mul {a b c : α} (hc : 0 < c) (h : a ≤ b * c) : a * c⁻¹ ≤ b := by
  have hci := inv_pos_of_pos hc
  have h1 : a * c⁻¹ ≤ b * c * c⁻¹ := OrderedRing.mul_le_mul_of_nonneg_right h (by grind)
  have h2 : c * c⁻¹ = 1 := Field.mul_inv_cancel (by grind)
  have e : b * c * c⁻¹ = b * (c * c⁻¹) := by grind
  rw [e, h2] at h1; grind

/-- `1 ≤ x⁻¹` for `0 < x ≤ 1`. -/
theorem one_le_inv {x : α} (hx : 0 < x) (h : x ≤ 1) : 1 ≤ x⁻¹ := by
  have := inv_le_inv_of_le hx h
  rw [Field.inv_one] at this; exact this

/-! ### Higham's `γₙ` -/

/-- Higham's `γₙ = n u / (1 − n u)`: the relative error bound of `n` roundings. -/
@[expose] def gam (u : α) (n : Nat) : α := (n : α) * u / (1 - (n : α) * u)

/-- `1 + γₙ = 1 / (1 − n u)`. -/
theorem one_add_gam {u : α} {n : Nat} (h : (n : α) * u < 1) :
    1 + gam u n = (1 - (n : α) * u)⁻¹ := by
  have hne : 1 - (n : α) * u ≠ 0 := by grind
  have := Field.mul_inv_cancel hne
  simp only [gam, Field.div_eq_mul_inv]; grind

/-- `γₙ ≥ 0`. -/
theorem gam_nonneg {u : α} {n : Nat} (hu : 0 ≤ u) (h : (n : α) * u < 1) : 0 ≤ gam u n := by
  have hn : (0 : α) ≤ n := OrderedRing.natCast_nonneg
  have h1 : 0 ≤ (n : α) * u := OrderedRing.mul_nonneg hn hu
  have h2 := inv_pos_of_pos (a := 1 - (n : α) * u) (by grind)
  simp only [gam, Field.div_eq_mul_inv]
  exact OrderedRing.mul_nonneg h1 (by grind)

/-- Natural-number casts are monotone. -/
theorem natCast_le_natCast {m n : Nat} (h : m ≤ n) : (m : α) ≤ (n : α) := by
  obtain ⟨k, rfl⟩ := Nat.exists_eq_add_of_le h
  have : (0 : α) ≤ (k : α) := OrderedRing.natCast_nonneg
  have e : ((m + k : Nat) : α) = (m : α) + (k : α) := by grind
  rw [e]; grind

/-- `γ` is monotone in `n`. -/
theorem gam_mono {u : α} {m n : Nat} (hu : 0 ≤ u) (hmn : m ≤ n) (h : (n : α) * u < 1) :
    gam u m ≤ gam u n := by
  have hc := natCast_le_natCast (α := α) hmn
  have hmu : (m : α) * u ≤ (n : α) * u := OrderedRing.mul_le_mul_of_nonneg_right hc hu
  have hm : (m : α) * u < 1 := by grind
  have hpos : 0 < 1 - (n : α) * u := by grind
  have := inv_le_inv_of_le hpos (by grind : 1 - (n : α) * u ≤ 1 - (m : α) * u)
  have e1 := one_add_gam hm
  have e2 := one_add_gam h
  grind

/-- `(1 + γ_j)(1 + γ_k) ≤ 1 + γ_{j+k}` (Higham, Lemma 3.3). -/
theorem one_add_gam_mul_le {u : α} {j k : Nat} (hu : 0 ≤ u) (h : ((j + k : Nat) : α) * u < 1) :
    (1 + gam u j) * (1 + gam u k) ≤ 1 + gam u (j + k) := by
  have ec : ((j + k : Nat) : α) = (j : α) + (k : α) := by grind
  have hj0 : (0 : α) ≤ j := OrderedRing.natCast_nonneg
  have hk0 : (0 : α) ≤ k := OrderedRing.natCast_nonneg
  have hju : 0 ≤ (j : α) * u := OrderedRing.mul_nonneg hj0 hu
  have hku : 0 ≤ (k : α) * u := OrderedRing.mul_nonneg hk0 hu
  have hj : (j : α) * u < 1 := by grind
  have hk : (k : α) * u < 1 := by grind
  rw [one_add_gam hj, one_add_gam hk, one_add_gam h, ← Field.inv_mul]
  apply inv_le_inv_of_le (by grind)
  have : 0 ≤ ((j : α) * u) * ((k : α) * u) := OrderedRing.mul_nonneg hju hku
  grind

/-- `γ_j + γ_k + γ_j γ_k ≤ γ_{j+k}` (the same, expanded). -/
theorem gam_add_le {u : α} {j k : Nat} (hu : 0 ≤ u) (h : ((j + k : Nat) : α) * u < 1) :
    gam u j + gam u k + gam u j * gam u k ≤ gam u (j + k) := by
  have := one_add_gam_mul_le hu h; grind

/-- `1 + γ₁ = 1 / (1 − u)`, so `(1 + γ₁)⁻¹ = 1 − u`. -/
theorem inv_one_add_gam_one {u : α} (h : u < 1) : (1 + gam u 1)⁻¹ = 1 - u := by
  have h1 : ((1 : Nat) : α) * u < 1 := by grind
  rw [one_add_gam h1, Field.inv_inv]; grind

/-- `1 + u ≤ 1 + γ₁`. -/
theorem one_add_le_one_add_gam_one {u : α} (hu : 0 ≤ u) (h : u < 1) : 1 + u ≤ 1 + gam u 1 := by
  have h1 : ((1 : Nat) : α) * u < 1 := by grind
  rw [one_add_gam h1]
  have hpos : 0 < 1 - ((1 : Nat) : α) * u := by grind
  have huu : 0 ≤ u * u := OrderedRing.mul_nonneg hu hu
  have := le_mul_inv_of_mul_le (a := 1 + u) (b := 1) hpos (by grind)
  grind

/-! ### The rounding model -/

/-- A rounding map with unit round-off `u`: `|fl x − x| ≤ u |x|` (rounding to nearest in
the normal range; underflow and overflow are outside the model). -/
structure Rounding (α : Type u) [Field α] [LE α] [LT α] [Std.LawfulOrderLT α]
    [Std.IsLinearOrder α] [OrderedRing α] where
  /-- The rounding map. -/
  fl : α → α
  /-- The unit round-off. -/
  u : α
  /-- `u ≥ 0`. -/
  u_nonneg : 0 ≤ u
  /-- `|fl x − x| ≤ u |x|`. -/
  rel : ∀ x, absv (fl x - x) ≤ u * absv x

/-- Exact arithmetic is a rounding with `u = 0`. -/
@[expose] def Rounding.exact : Rounding α where
  fl := fun x => x
  u := 0
  u_nonneg := by grind
  rel := fun x => by
    have := absv_nonneg x
    have e : absv (x - x) = 0 := by
      have h0 : x - x = 0 := by grind
      rw [h0]; unfold absv; split <;> grind
    rw [e]; grind

/-- `|fl x| ≤ (1 + u)|x|`. -/
theorem Rounding.absv_le (R : Rounding α) (x : α) : absv (R.fl x) ≤ (1 + R.u) * absv x := by
  have h := R.rel x
  have t := absv_add_le (R.fl x - x) x
  have e : R.fl x - x + x = R.fl x := by grind
  rw [e] at t; grind

/-- Every rounding is a relative perturbation: `fl x = x (1 + δ)` with `|δ| ≤ u`. -/
theorem Rounding.exists_eq_mul (R : Rounding α) (x : α) :
    ∃ δ, absv δ ≤ R.u ∧ R.fl x = x * (1 + δ) := by
  by_cases hx : x = 0
  · refine ⟨0, ?_, ?_⟩
    · have := R.u_nonneg; unfold absv; split <;> grind
    · have h := R.rel x
      rw [hx] at h ⊢
      have e : absv (0 : α) = 0 := by unfold absv; split <;> grind
      rw [e] at h
      have h0 : R.u * 0 = 0 := by grind
      rw [h0] at h
      have := absv_nonneg (R.fl 0 - 0)
      have h1 : absv (R.fl 0 - 0) = 0 := by grind
      have h2 := le_absv (R.fl 0 - 0)
      have h3 := neg_absv_le (R.fl 0 - 0)
      grind
  · refine ⟨(R.fl x - x) / x, ?_, ?_⟩
    · have hax : 0 < absv x := by
        have := absv_nonneg x; unfold absv at *; split <;> grind
      have e : absv ((R.fl x - x) / x) = absv (R.fl x - x) * (absv x)⁻¹ := by
        rw [Field.div_eq_mul_inv, absv_mul]
        congr 1
        have hxi : x * x⁻¹ = 1 := Field.mul_inv_cancel hx
        unfold absv
        by_cases h0 : 0 ≤ x
        · have : 0 ≤ x⁻¹ := inv_nonneg_of_nonneg h0
          simp [h0, this]
        · have hneg : x < 0 := by grind
          have hxi' : x⁻¹ < 0 := by
            have := inv_pos_of_pos (a := -x) (by grind)
            have e : (-x)⁻¹ = -x⁻¹ := by grind
            grind
          have : ¬ 0 ≤ x⁻¹ := by grind
          simp [h0, this]; grind
      rw [e]
      exact mul_inv_le_of_le_mul hax (by have := R.rel x; grind)
    · have hxi : x * x⁻¹ = 1 := Field.mul_inv_cancel hx
      simp only [Field.div_eq_mul_inv]; grind

/-! ### Factors: `x` within a factor `c` of `y` -/

/-- `x` lies within a factor `c` of `y`: `c⁻¹ y ≤ x ≤ c y`. -/
@[expose] def Within (c x y : α) : Prop := c⁻¹ * y ≤ x ∧ x ≤ c * y

/-- A number is within any factor `c ≥ 1` of itself (when `≥ 0`). -/
theorem Within.refl {c y : α} (hc : 1 ≤ c) (hy : 0 ≤ y) : Within c y y := by
  have hci : c⁻¹ ≤ 1 := by
    have := inv_le_inv_of_le (by grind : (0 : α) < 1) hc
    rwa [Field.inv_one] at this
  constructor
  · have := OrderedRing.mul_le_mul_of_nonneg_right hci hy; grind
  · have := OrderedRing.mul_le_mul_of_nonneg_right hc hy; grind

/-- A larger factor. -/
theorem Within.mono {c c' x y : α} (hc : 0 < c) (hcc : c ≤ c') (hy : 0 ≤ y)
    (h : Within c x y) : Within c' x y := by
  have h1 := inv_le_inv_of_le hc hcc
  constructor
  · have := OrderedRing.mul_le_mul_of_nonneg_right h1 hy; exact Std.le_trans this h.1
  · have := OrderedRing.mul_le_mul_of_nonneg_right hcc hy; exact Std.le_trans h.2 this

/-- A number within a factor of a nonnegative one is nonnegative. -/
theorem Within.nonneg {c x y : α} (hc : 0 < c) (hy : 0 ≤ y) (h : Within c x y) : 0 ≤ x := by
  have := OrderedRing.mul_nonneg (inv_nonneg_of_nonneg (by grind : (0 : α) ≤ c)) hy
  exact Std.le_trans this h.1

/-- Sums of terms within `c` are within `c`. -/
theorem Within.add {c x y x' y' : α} (h : Within c x y) (h' : Within c x' y') :
    Within c (x + x') (y + y') := by
  obtain ⟨h1, h2⟩ := h; obtain ⟨h3, h4⟩ := h'
  constructor <;> grind

/-- Finite sums of terms within `c` are within `c`. -/
theorem Within.finSum {n : Nat} {c : α} {x y : Fin n → α} (h : ∀ i, Within c (x i) (y i)) :
    Within c (finSum x) (finSum y) := by
  induction n with
  | zero =>
    simp only [finSum_zero_len]
    constructor <;> grind
  | succ n ih =>
    rw [finSum_succ, finSum_succ y]
    exact (ih fun i => h i.castSucc).add (h (Fin.last n))

/-- Factors multiply along a chain. -/
theorem Within.trans {c c' x y z : α} (hc : 0 < c) (hc' : 0 < c') (hz : 0 ≤ z)
    (h : Within c x y) (h' : Within c' y z) : Within (c * c') x z := by
  have hci := inv_nonneg_of_nonneg (by grind : (0 : α) ≤ c)
  have hy := h'.nonneg hc' hz
  constructor
  · have := OrderedRing.mul_le_mul_of_nonneg_left h'.1 hci
    have e : (c * c')⁻¹ * z = c⁻¹ * (c'⁻¹ * z) := by rw [Field.inv_mul]; grind
    rw [e]; exact Std.le_trans this h.1
  · have := OrderedRing.mul_le_mul_of_nonneg_left h'.2 (by grind : (0 : α) ≤ c)
    have e : c * c' * z = c * (c' * z) := by grind
    rw [e]; exact Std.le_trans h.2 this

/-- Factors multiply under products. -/
theorem Within.mul {c c' x y x' y' : α} (hc : 0 < c) (hc' : 0 < c') (hy : 0 ≤ y)
    (hy' : 0 ≤ y') (h : Within c x y) (h' : Within c' x' y') :
    Within (c * c') (x * x') (y * y') := by
  have hx := h.nonneg hc hy
  have hci := inv_nonneg_of_nonneg (by grind : (0 : α) ≤ c)
  have hci' := inv_nonneg_of_nonneg (by grind : (0 : α) ≤ c')
  constructor
  · have := mul_le_mul_of_le_of_le h.1 h'.1 hx (OrderedRing.mul_nonneg hci' hy')
    have e : (c * c')⁻¹ * (y * y') = c⁻¹ * y * (c'⁻¹ * y') := by rw [Field.inv_mul]; grind
    rw [e]; exact this
  · have := mul_le_mul_of_le_of_le h.2 h'.2 (OrderedRing.mul_nonneg (by grind) hy)
      (h'.nonneg hc' hy')
    have e : c * c' * (y * y') = c * y * (c' * y') := by grind
    rw [e]; exact this

/-- Factors are kept under inversion. -/
theorem Within.inv {c x y : α} (hc : 0 < c) (hy : 0 < y) (h : Within c x y) :
    Within c x⁻¹ y⁻¹ := by
  have hci := inv_pos_of_pos hc
  have hlow : 0 < c⁻¹ * y := OrderedRing.mul_pos hci hy
  have hx : 0 < x := by have := h.1; grind
  constructor
  · -- x ≤ c y  ⇒  (c y)⁻¹ ≤ x⁻¹
    have := inv_le_inv_of_le hx h.2
    rw [Field.inv_mul] at this; exact this
  · -- c⁻¹ y ≤ x  ⇒  x⁻¹ ≤ (c⁻¹ y)⁻¹ = c y⁻¹
    have := inv_le_inv_of_le hlow h.1
    rw [Field.inv_mul, Field.inv_inv] at this; exact this

/-- Factors multiply under quotients. -/
theorem Within.div {c c' x y x' y' : α} (hc : 0 < c) (hc' : 0 < c') (hy : 0 ≤ y)
    (hy' : 0 < y') (h : Within c x y) (h' : Within c' x' y') :
    Within (c * c') (x / x') (y / y') := by
  simp only [Field.div_eq_mul_inv]
  exact h.mul hc hc' hy (inv_nonneg_of_nonneg (by grind)) (h'.inv hc' hy')

/-- A factor bound is a relative error bound: `|x − y| ≤ (c − 1) y`. -/
theorem Within.absv_sub_le {c x y : α} (hc : 1 ≤ c) (hy : 0 ≤ y) (h : Within c x y) :
    absv (x - y) ≤ (c - 1) * y := by
  -- lower side: y − x ≤ y − c⁻¹ y = (1 − c⁻¹) y ≤ (c − 1) y, as c + c⁻¹ ≥ 2
  have hc0 : 0 < c := by grind
  have hci : c * c⁻¹ = 1 := Field.mul_inv_cancel (by grind)
  have key : 1 - c⁻¹ ≤ c - 1 := by
    have h1 : 0 ≤ (c - 1) * (c - 1) := mul_self_nonneg' _
    have h2 : 0 ≤ (c - 1) * (c - 1) * c⁻¹ :=
      OrderedRing.mul_nonneg h1 (inv_nonneg_of_nonneg (by grind))
    have e : (c - 1) * (c - 1) * c⁻¹ = c - 2 + c⁻¹ := by
      have : (c - 1) * (c - 1) * c⁻¹ = c * c * c⁻¹ - 2 * (c * c⁻¹) + c⁻¹ := by grind
      rw [this, hci]; grind
    grind
  have k2 := OrderedRing.mul_le_mul_of_nonneg_right key hy
  apply absv_le_iff.mpr
  constructor
  · have := h.1; grind
  · have := h.2; grind

/-- One rounding of a nonnegative number is within `1 + γ₁ = 1 / (1 − u)` of it. -/
theorem Rounding.within (R : Rounding α) (hu : R.u < 1) {x : α} (hx : 0 ≤ x) :
    Within (1 + gam R.u 1) (R.fl x) x := by
  have h := R.rel x
  have ax : absv x = x := by unfold absv; simp [hx]
  rw [ax] at h
  obtain ⟨h1, h2⟩ := absv_le_iff.mp h
  rw [Within, inv_one_add_gam_one hu]
  have hle := one_add_le_one_add_gam_one R.u_nonneg hu
  constructor
  · grind
  · have := OrderedRing.mul_le_mul_of_nonneg_right hle hx; grind

/-- A relative perturbation `1 + δ`, `|δ| ≤ u < 1`, is within `1 + γ₁` of `1`. -/
theorem within_one_add {u δ : α} (hu0 : 0 ≤ u) (hu : u < 1) (h : absv δ ≤ u) :
    Within (1 + gam u 1) (1 + δ) 1 := by
  obtain ⟨h1, h2⟩ := absv_le_iff.mp h
  rw [Within, inv_one_add_gam_one hu]
  have hle := one_add_le_one_add_gam_one hu0 hu
  constructor <;> grind

/-! ### The product lemma -/

/-- The product `f 0 * f 1 * ⋯ * f (n-1)` of a function on `Fin n`. -/
@[expose] def finProd : {n : Nat} → (Fin n → α) → α
  | 0, _ => 1
  | _ + 1, f => finProd (fun i => f i.castSucc) * f (Fin.last _)

/-- `k` perturbations `1 + δᵢ`, `|δᵢ| ≤ u`, `k u < 1`: their product is within
`1 + γ_k` of `1`. -/
theorem within_finProd {u : α} (hu0 : 0 ≤ u) :
    ∀ {k : Nat} (δ : Fin k → α), (∀ i, absv (δ i) ≤ u) → (k : α) * u < 1 →
      Within (1 + gam u k) (finProd fun i => 1 + δ i) 1
  | 0, _, _, _ => by
    simp only [finProd]
    have : gam u 0 = 0 := by simp [gam]; grind
    rw [this]; exact Within.refl (by grind) (by grind)
  | k + 1, δ, hδ, hk => by
    have hk0 : (0 : α) ≤ k := OrderedRing.natCast_nonneg
    have hku : (k : α) * u ≤ ((k + 1 : Nat) : α) * u := OrderedRing.mul_le_mul_of_nonneg_right
      (natCast_le_natCast (by omega)) hu0
    have hk' : (k : α) * u < 1 := by grind
    have hu1 : u < 1 := by
      have : ((k + 1 : Nat) : α) * u = (k : α) * u + u := by grind
      have := OrderedRing.mul_nonneg hk0 hu0; grind
    have ih := within_finProd hu0 (fun i => δ i.castSucc) (fun i => hδ _) hk'
    have hg0 := gam_nonneg hu0 hk'
    have hg1 := gam_nonneg hu0 (by grind : ((1 : Nat) : α) * u < 1)
    have hl := within_one_add hu0 hu1 (hδ (Fin.last k))
    have hm := ih.mul (by grind) (by grind) (by grind) (by grind) hl
    rw [Lean.Grind.Semiring.mul_one] at hm
    have hpos : (0 : α) < (1 + gam u k) * (1 + gam u 1) :=
      OrderedRing.mul_pos (by grind) (by grind)
    exact hm.mono hpos (one_add_gam_mul_le hu0 hk) (by grind)

/-- The product lemma (Higham, Lemma 3.1): for `|δᵢ| ≤ u` and `n u < 1`,
`∏ᵢ (1 + δᵢ) = 1 + θₙ` with `|θₙ| ≤ γₙ = n u / (1 − n u)`. -/
theorem fp_prod_gamma {u : α} (hu0 : 0 ≤ u) {n : Nat} (δ : Fin n → α)
    (hδ : ∀ i, absv (δ i) ≤ u) (hn : (n : α) * u < 1) :
    ∃ θ, (finProd fun i => 1 + δ i) = 1 + θ ∧ absv θ ≤ gam u n := by
  refine ⟨(finProd fun i => 1 + δ i) - 1, by grind, ?_⟩
  have hw := within_finProd hu0 δ hδ hn
  have := hw.absv_sub_le (by have := gam_nonneg hu0 hn; grind) (by grind)
  grind

end FP

end Pldr

end
