module

public import Pldr.Float.Sum
public import Pldr.ExpHom

/-!
# IEEE binary formats and round-to-nearest, ties-to-even  (`[fp_ieee_rounding]`)

The rounding model of `Pldr.Float.Model` (`|fl x − x| ≤ u |x|` for the partial sums of a
summation tree, an absolute term `η` on products, quotients and conversions) grounded in
an IEEE 754 binary format over `Rat`:

* `Format`: precision `p` (significand bits, the hidden bit included), minimum normal
  exponent `emin`, maximum exponent `emax`. Its numbers are `m · 2^e` with `|m| < 2^p` and
  `e ≥ emin − p + 1` (`Format.IsGrid`: normal and subnormal numbers alike), all of them
  integer multiples of the smallest subnormal `2^(emin − p + 1)` (`Format.IsLattice`).
  `u = 2^(−p)`, `η = 2^(emin − p)` (half the subnormal spacing), the smallest normal
  number `2^emin`, the largest finite one `(2^p − 1) · 2^(emax − p + 1)`.
* `rint`: the nearest integer to a rational, ties to the even one (`Rat.floor`);
  `ilog2`: the exponent `E` with `2^E ≤ x < 2^(E + 1)` of a positive rational.
* `Format.rne`: round to nearest, ties to even: `x ↦ rint(x / 2^k) · 2^k` with
  `k = E − p + 1`, `E` the exponent of `|x|` in the normal range and `emin` below it.
  The exponent is not capped above: `rne` is the IEEE result wherever that result is
  finite (`fp_ieee_rounding_finite`: `|x| ≤` the largest finite number gives a number of
  the format with exponent at most `emax`); overflow to infinity is outside the model.

Results:
* `[fp_ieee_rounding]` `fp_ieee_rounding`: `|rne x − x| ≤ u |x| + η` for every `x`;
  `_normal`: `≤ u |x|` when `|x| ≥ 2^emin`; `_lattice` (gradual underflow): `≤ u |x|` with
  no `η` when `x` is an integer multiple of the smallest subnormal, in particular for the
  exact sum or difference of two numbers of the format (`_add`), which below the normal
  range is representable; `_grid`: numbers of the format are fixed; `_finite`: no
  overflow below the largest finite number.
* `Format.sumRounding`: a `Rounding Rat` (the `η`-free model) that agrees with `rne` on
  every lattice point; a summation tree whose leaves are lattice points evaluates the
  same with `rne` (`eval_rne_eq`), so `fp_summation`, `fp_dot_product` and the rest apply
  to genuine IEEE sums (`fp_ieee_rounding_summation`, `fp_ieee_rounding_dot_product`).
* `FP.RoundingAbs`: a rounding with an absolute term, `|fl x − x| ≤ u |x| + η`; a
  `Rounding` is the case `η = 0` (`Rounding.toAbs`); `Format.roundingAbs` is `rne`.
* The formats: `binary64`, `binary32`, `binary16`, `bfloat16`, with `u`, `η` and the
  smallest normal number as rational literals (`fp_ieee_rounding_binary32`, …).

There are no unproved assumptions.
-/

public noncomputable section

set_option linter.unusedSectionVars false

namespace Pldr

open Lean.Grind FP

namespace FP

universe u

/-! ### A rounding with an absolute term -/

/-- A rounding map with unit round-off `u` and absolute term `η`: `|fl x − x| ≤ u |x| + η`
(IEEE rounding to nearest over the whole range below overflow, `η` half the subnormal
spacing; or flush-to-zero, `η` the smallest normal number). -/
structure RoundingAbs (α : Type u) [Field α] [LE α] [LT α] [Std.LawfulOrderLT α]
    [Std.IsLinearOrder α] [OrderedRing α] where
  /-- The rounding map. -/
  fl : α → α
  /-- The unit round-off. -/
  u : α
  /-- The absolute term. -/
  η : α
  /-- `u ≥ 0`. -/
  u_nonneg : 0 ≤ u
  /-- `η ≥ 0`. -/
  η_nonneg : 0 ≤ η
  /-- `|fl x − x| ≤ u |x| + η`. -/
  rel : ∀ x, absv (fl x - x) ≤ u * absv x + η

section Abs

variable {α : Type u} [Field α] [LE α] [LT α] [Std.LawfulOrderLT α] [Std.IsLinearOrder α]
  [OrderedRing α]

/-- A `Rounding` is the case `η = 0` of a `RoundingAbs`. -/
@[expose] def Rounding.toAbs (R : Rounding α) : RoundingAbs α where
  fl := R.fl
  u := R.u
  η := 0
  u_nonneg := R.u_nonneg
  η_nonneg := by grind
  rel := fun x => by have := R.rel x; grind

/-- `toAbs` keeps the map and the unit round-off. -/
theorem Rounding.toAbs_fl (R : Rounding α) : R.toAbs.fl = R.fl := rfl

end Abs

end FP

/-! ### Powers of two, nearest integers, binary exponents -/

/-- `n ↦ 2ⁿ` is monotone on `Int`. -/
theorem two_zpow_le {a b : Int} (h : a ≤ b) : (2 : Rat) ^ a ≤ 2 ^ b := by
  by_cases hab : a = b
  · subst hab; exact Std.le_refl _
  · exact Std.le_of_lt (two_zpow_lt (by omega))

/-- `2ᵃ < 2ᵇ → a < b`. -/
theorem lt_of_two_zpow_lt {a b : Int} (h : (2 : Rat) ^ a < 2 ^ b) : a < b := by
  apply Classical.byContradiction; intro hn
  have := two_zpow_le (a := b) (b := a) (by omega); grind

/-- `2ᵃ ≤ 2ᵇ → a ≤ b`. -/
theorem le_of_two_zpow_le {a b : Int} (h : (2 : Rat) ^ a ≤ 2 ^ b) : a ≤ b := by
  apply Classical.byContradiction; intro hn
  have := two_zpow_lt (a := b) (b := a) (by omega); grind

/-- `2ⁿ` for a natural `n` is the cast of the natural number `2ⁿ`. -/
theorem two_zpow_natCast (n : Nat) : (2 : Rat) ^ (n : Int) = ((2 ^ n : Nat) : Rat) := by
  rw [Field.zpow_natCast, Rat.natCast_pow]; rfl

/-- `2¹ = 2`. -/
theorem two_zpow_one : (2 : Rat) ^ (1 : Int) = 2 := by
  rw [show (1 : Int) = ((1 : Nat) : Int) from rfl, Field.zpow_natCast, Semiring.pow_succ,
    Semiring.pow_zero]
  grind

/-- `|x − x| = 0`. -/
theorem absv_sub_self' (x : Rat) : absv (x - x) = 0 := by
  have : x - x = 0 := by grind
  rw [this]; unfold absv; split <;> grind

/-- The nearest integer to `y`, ties to the even one. -/
@[expose] def rint (y : Rat) : Int :=
  if y - (y.floor : Rat) < 1 / 2 then y.floor
  else if 1 / 2 < y - (y.floor : Rat) then y.floor + 1
  else if y.floor % 2 = 0 then y.floor else y.floor + 1

/-- `|rint y − y| ≤ 1/2`. -/
theorem rint_sub_le (y : Rat) : absv ((rint y : Rat) - y) ≤ 1 / 2 := by
  have h1 := Rat.floor_le y
  have h2 := Rat.lt_floor_add_one y
  rw [Rat.intCast_add, Rat.intCast_one] at h2
  apply absv_le_iff.mpr
  unfold rint
  split
  · constructor <;> grind
  · split
    · rw [Rat.intCast_add, Rat.intCast_one]; constructor <;> grind
    · split
      · constructor <;> grind
      · rw [Rat.intCast_add, Rat.intCast_one]; constructor <;> grind

/-- An integer is its own nearest integer. -/
theorem rint_intCast (n : Int) : rint (n : Rat) = n := by
  unfold rint
  rw [Rat.floor_intCast]
  have : (n : Rat) - (n : Rat) < 1 / 2 := by grind
  simp only [this, if_true]

/-- `rint y ≤ N` for an integer `N ≥ y`. -/
theorem rint_le_of_le {y : Rat} {N : Int} (h : y ≤ (N : Rat)) : rint y ≤ N := by
  have := absv_le_iff.mp (rint_sub_le y)
  have h3 : (rint y : Rat) < ((N + 1 : Int) : Rat) := by
    rw [Rat.intCast_add, Rat.intCast_one]; grind
  have := Rat.intCast_lt_intCast.mp h3
  omega

/-- `−N ≤ rint y` for an integer `N` with `−N ≤ y`. -/
theorem neg_le_rint_of_le {y : Rat} {N : Int} (h : -(N : Rat) ≤ y) : -N ≤ rint y := by
  have := absv_le_iff.mp (rint_sub_le y)
  have h3 : ((-N - 1 : Int) : Rat) < (rint y : Rat) := by
    rw [Rat.intCast_sub, Rat.intCast_neg, Rat.intCast_one]; grind
  have := Rat.intCast_lt_intCast.mp h3
  omega

/-- The binary exponent of a positive rational: `2^E ≤ x < 2^(E + 1)` (`ilog2_spec`). -/
@[expose] def ilog2 (x : Rat) : Int :=
  if (2 : Rat) ^ ((Nat.log2 x.num.toNat : Int) - (Nat.log2 x.den : Int)) ≤ x then
    (Nat.log2 x.num.toNat : Int) - (Nat.log2 x.den : Int)
  else (Nat.log2 x.num.toNat : Int) - (Nat.log2 x.den : Int) - 1

/-- A positive rational is `n / d` for positive naturals: `x · d = n`. -/
theorem exists_mul_den_eq {x : Rat} (hx : 0 < x) :
    0 < x.num.toNat ∧ x * (x.den : Rat) = (x.num.toNat : Rat) := by
  have hd := Rat.den_pos x
  have hdq : (0 : Rat) < (x.den : Rat) := Rat.natCast_lt_natCast.mpr hd
  have e : x = (x.num : Rat) / (x.den : Rat) := by
    rw [← Rat.mkRat_eq_div, Rat.mkRat_self]
  have hinv : (x.den : Rat) * (x.den : Rat)⁻¹ = 1 := Field.mul_inv_cancel (by grind)
  have hxn : x * (x.den : Rat) = (x.num : Rat) := by
    conv => lhs; rw [e]
    rw [Field.div_eq_mul_inv]; grind
  have hnum : 0 < x.num := by
    have : (0 : Rat) < (x.num : Rat) := by
      rw [← hxn]; exact OrderedRing.mul_pos hx hdq
    exact Rat.intCast_lt_intCast.mp (by simpa using this)
  have ht : ((x.num.toNat : Nat) : Int) = x.num := Int.toNat_of_nonneg (by omega)
  refine ⟨by omega, ?_⟩
  have hc : (x.num : Rat) = ((x.num.toNat : Nat) : Rat) := by
    rw [← Rat.intCast_natCast, ht]
  rw [hxn, hc]

/-- `2^(ilog2 x) ≤ x < 2^(ilog2 x + 1)` for `x > 0`. -/
theorem ilog2_spec {x : Rat} (hx : 0 < x) :
    (2 : Rat) ^ ilog2 x ≤ x ∧ x < 2 ^ (ilog2 x + 1) := by
  obtain ⟨hn, hxd⟩ := exists_mul_den_eq hx
  generalize hN : x.num.toNat = n at *
  generalize hD : x.den = d at *
  have hd : 0 < d := by rw [← hD]; exact Rat.den_pos x
  have hn0 : n ≠ 0 := by omega
  have hd0 : d ≠ 0 := by omega
  generalize ha : Nat.log2 n = a
  generalize hb : Nat.log2 d = b
  have na1 : 2 ^ a ≤ n := by rw [← ha]; exact Nat.log2_self_le hn0
  have na2 : n < 2 ^ (a + 1) := by rw [← ha]; exact Nat.lt_log2_self
  have db1 : 2 ^ b ≤ d := by rw [← hb]; exact Nat.log2_self_le hd0
  have db2 : d < 2 ^ (b + 1) := by rw [← hb]; exact Nat.lt_log2_self
  -- in Rat
  have qa1 : (2 : Rat) ^ (a : Int) ≤ (n : Rat) := by
    rw [two_zpow_natCast]; exact Rat.natCast_le_natCast.mpr na1
  have qa2 : (n : Rat) < (2 : Rat) ^ ((a : Int) + 1) := by
    have : ((a : Int) + 1) = ((a + 1 : Nat) : Int) := by omega
    rw [this, two_zpow_natCast]; exact Rat.natCast_lt_natCast.mpr na2
  have qb1 : (2 : Rat) ^ (b : Int) ≤ (d : Rat) := by
    rw [two_zpow_natCast]; exact Rat.natCast_le_natCast.mpr db1
  have qb2 : (d : Rat) < (2 : Rat) ^ ((b : Int) + 1) := by
    have : ((b : Int) + 1) = ((b + 1 : Nat) : Int) := by omega
    rw [this, two_zpow_natCast]; exact Rat.natCast_lt_natCast.mpr db2
  have hdq : (0 : Rat) < (d : Rat) := Rat.natCast_lt_natCast.mpr hd
  generalize hE : (a : Int) - (b : Int) = E
  -- 2^(E − 1) < x
  have lo : (2 : Rat) ^ (E - 1) < x := by
    apply Classical.byContradiction; intro hne
    have hle : x ≤ (2 : Rat) ^ (E - 1) := by grind
    have h1 : x * (2 : Rat) ^ ((b : Int) + 1) ≤ (2 : Rat) ^ (E - 1) * 2 ^ ((b : Int) + 1) :=
      OrderedRing.mul_le_mul_of_nonneg_right hle (Std.le_of_lt (two_zpow_pos _))
    rw [← two_zpow_add] at h1
    have e : E - 1 + ((b : Int) + 1) = (a : Int) := by omega
    rw [e] at h1
    have h2 : x * (d : Rat) < x * (2 : Rat) ^ ((b : Int) + 1) :=
      OrderedRing.mul_lt_mul_of_pos_left qb2 hx
    grind
  -- x < 2^(E + 1)
  have hi : x < (2 : Rat) ^ (E + 1) := by
    apply Classical.byContradiction; intro hne
    have hle : (2 : Rat) ^ (E + 1) ≤ x := by grind
    have h1 : (2 : Rat) ^ (E + 1) * 2 ^ (b : Int) ≤ x * (d : Rat) := by
      have := OrderedRing.mul_le_mul_of_nonneg_right hle (Std.le_of_lt (two_zpow_pos (b : Int)))
      have := OrderedRing.mul_le_mul_of_nonneg_left qb1 (Std.le_of_lt hx)
      grind
    rw [← two_zpow_add] at h1
    have e : E + 1 + (b : Int) = (a : Int) + 1 := by omega
    rw [e] at h1
    grind
  have hdef : ilog2 x = if (2 : Rat) ^ E ≤ x then E else E - 1 := by
    unfold ilog2; rw [hN, hD, ha, hb, hE]
  rw [hdef]
  split
  · exact ⟨by assumption, hi⟩
  · have e : E - 1 + 1 = E := by omega
    rw [e]; exact ⟨Std.le_of_lt lo, by grind⟩

/-! ### Binary formats -/

/-- An IEEE 754 binary format: `p` significand bits (the hidden bit included), minimum
normal exponent `emin`, maximum exponent `emax`. -/
structure Format where
  /-- Precision: significand bits, the hidden bit included. -/
  p : Nat
  /-- The exponent of the smallest normal number `2^emin`. -/
  emin : Int
  /-- The exponent of the largest binade. -/
  emax : Int

namespace Format

variable (F : Format)

/-- The unit round-off `u = 2^(−p)`. -/
@[expose] def u : Rat := 2 ^ (-(F.p : Int))

/-- Half the subnormal spacing, `η = 2^(emin − p)`: the absolute error of rounding below
the normal range. -/
@[expose] def eta : Rat := 2 ^ (F.emin - F.p)

/-- The smallest normal number `2^emin`. -/
@[expose] def minNormal : Rat := 2 ^ F.emin

/-- The exponent of the smallest subnormal number, `emin − p + 1`. -/
@[expose] def qexp : Int := F.emin - F.p + 1

/-- The largest finite number `(2^p − 1) · 2^(emax − p + 1)`. -/
@[expose] def maxFinite : Rat := ((2 ^ F.p - 1 : Nat) : Rat) * 2 ^ (F.emax - F.p + 1)

/-- The numbers of the format (normal and subnormal, sign included, exponent not capped
above): `m · 2^e` with `|m| < 2^p`, `e ≥ emin − p + 1`. -/
@[expose] def IsGrid (x : Rat) : Prop :=
  ∃ m e : Int, F.qexp ≤ e ∧ absv (m : Rat) < 2 ^ (F.p : Int) ∧ x = (m : Rat) * 2 ^ e

/-- The finite numbers of the format: `IsGrid` with `e ≤ emax − p + 1`. -/
@[expose] def IsFinite (x : Rat) : Prop :=
  ∃ m e : Int, F.qexp ≤ e ∧ e ≤ F.emax - F.p + 1 ∧ absv (m : Rat) < 2 ^ (F.p : Int) ∧
    x = (m : Rat) * 2 ^ e

/-- Integer multiples of the smallest subnormal `2^(emin − p + 1)`: every number of the
format, and every exact sum or difference of two of them. -/
@[expose] def IsLattice (x : Rat) : Prop := ∃ n : Int, x = (n : Rat) * 2 ^ F.qexp

/-- The exponent that sets the spacing at `x`: the binade of `|x|` in the normal range,
`emin` below it. -/
@[expose] def expo (x : Rat) : Int := if absv x < 2 ^ F.emin then F.emin else ilog2 (absv x)

/-- The spacing of the format at `x`: `2^(expo x − p + 1)`. -/
@[expose] def ulp (x : Rat) : Rat := 2 ^ (F.expo x - F.p + 1)

/-- Round to nearest, ties to even: the nearest multiple of the spacing at `x`. -/
@[expose] def rne (x : Rat) : Rat := (rint (x / F.ulp x) : Rat) * F.ulp x

variable {F}

theorem ulp_pos (x : Rat) : 0 < F.ulp x := two_zpow_pos _

/-- Half the spacing is `u · 2^(expo x)`. -/
theorem half_ulp (x : Rat) : 1 / 2 * F.ulp x = F.u * 2 ^ F.expo x := by
  unfold ulp u
  have e : F.expo x - (F.p : Int) + 1 = (-(F.p : Int) + F.expo x) + 1 := by omega
  rw [e, two_zpow_add, two_zpow_add, two_zpow_one]
  grind

/-- The exponent in the normal range: `2^(expo x) ≤ |x| < 2^(expo x + 1)`. -/
theorem expo_spec_normal {x : Rat} (h : F.minNormal ≤ absv x) :
    F.expo x = ilog2 (absv x) ∧ (2 : Rat) ^ F.expo x ≤ absv x ∧
      absv x < 2 ^ (F.expo x + 1) := by
  unfold minNormal at h
  have hx : 0 < absv x := Std.lt_of_lt_of_le (two_zpow_pos _) h
  have he : F.expo x = ilog2 (absv x) := by
    unfold expo; have : ¬ absv x < 2 ^ F.emin := by grind
    simp only [this, if_false]
  rw [he]; exact ⟨rfl, ilog2_spec hx⟩

/-- Below the normal range the exponent is `emin`. -/
theorem expo_of_lt {x : Rat} (h : absv x < F.minNormal) : F.expo x = F.emin := by
  unfold expo; unfold minNormal at h; simp only [h, if_true]

/-- The exponent is at least `emin`. -/
theorem emin_le_expo (x : Rat) : F.emin ≤ F.expo x := by
  by_cases h : absv x < F.minNormal
  · rw [expo_of_lt h]; omega
  · have h' : F.minNormal ≤ absv x := by grind
    obtain ⟨_, _, h2⟩ := expo_spec_normal h'
    unfold minNormal at h'
    have := lt_of_two_zpow_lt (Std.lt_of_le_of_lt h' h2)
    omega

/-- `|x| < 2^(expo x + 1)` for every `x`. -/
theorem absv_lt_two_zpow_expo (x : Rat) : absv x < 2 ^ (F.expo x + 1) := by
  by_cases h : absv x < F.minNormal
  · rw [expo_of_lt h]; unfold minNormal at h
    exact Std.lt_of_lt_of_le h (two_zpow_le (by omega))
  · exact (expo_spec_normal (by grind)).2.2

/-- The rounding error is at most half the spacing. -/
theorem rne_sub_le (x : Rat) : absv (F.rne x - x) ≤ 1 / 2 * F.ulp x := by
  have hu := ulp_pos (F := F) x
  have hne : F.ulp x ≠ 0 := by grind
  have hinv : F.ulp x * (F.ulp x)⁻¹ = 1 := Field.mul_inv_cancel hne
  generalize hy : x / F.ulp x = y
  have hxy : x = y * F.ulp x := by rw [← hy, Field.div_eq_mul_inv]; grind
  have e : F.rne x - x = ((rint y : Rat) - y) * F.ulp x := by
    unfold rne; rw [hy]; conv => lhs; rw [hxy]
    grind
  rw [e, absv_mul]
  have ha : absv (F.ulp x) = F.ulp x := by unfold absv; simp [Std.le_of_lt hu]
  rw [ha]
  exact OrderedRing.mul_le_mul_of_nonneg_right (rint_sub_le y) (Std.le_of_lt hu)

theorem u_nonneg : 0 ≤ F.u := Std.le_of_lt (two_zpow_pos _)

theorem eta_nonneg : 0 ≤ F.eta := Std.le_of_lt (two_zpow_pos _)

/-- `η = u · 2^emin`. -/
theorem eta_eq : F.eta = F.u * F.minNormal := by
  unfold eta u minNormal
  have e : F.emin - (F.p : Int) = -(F.p : Int) + F.emin := by omega
  rw [e, two_zpow_add]

end Format

open Format

/-- [fp_ieee_rounding] Normal range (Higham, *Accuracy and Stability of Numerical
Algorithms*, Theorem 2.2): for `|x| ≥ 2^emin`, round-to-nearest has
`|rne x − x| ≤ u |x|`, `u = 2^(−p)`. -/
theorem fp_ieee_rounding_normal (F : Format) {x : Rat} (h : F.minNormal ≤ absv x) :
    absv (F.rne x - x) ≤ F.u * absv x := by
  have h1 := rne_sub_le (F := F) x
  rw [half_ulp] at h1
  obtain ⟨_, h2, _⟩ := expo_spec_normal h
  have := OrderedRing.mul_le_mul_of_nonneg_left h2 F.u_nonneg
  exact Std.le_trans h1 this

/-- [fp_ieee_rounding] IEEE 754 round-to-nearest, ties-to-even, with gradual underflow,
over the whole range below overflow (Higham, *Accuracy and Stability of Numerical
Algorithms*, Theorem 2.2 and §2.1 on subnormals; IEEE 754-2019 §4.3.1): for every
rational `x`, `|rne x − x| ≤ u |x| + η` with `u = 2^(−p)` and `η = 2^(emin − p)`, half the
subnormal spacing (`≤ u |x|` in the normal range: `fp_ieee_rounding_normal`). -/
theorem fp_ieee_rounding (F : Format) (x : Rat) :
    absv (F.rne x - x) ≤ F.u * absv x + F.eta := by
  have hux := OrderedRing.mul_nonneg F.u_nonneg (absv_nonneg x)
  by_cases h : absv x < F.minNormal
  · have h1 := rne_sub_le (F := F) x
    rw [half_ulp, expo_of_lt h] at h1
    have : F.u * 2 ^ F.emin = F.eta := by rw [eta_eq]; rfl
    grind
  · have := fp_ieee_rounding_normal F (x := x) (by grind)
    have := F.eta_nonneg
    grind

/-- [fp_ieee_rounding] Gradual underflow: at a lattice point `x` (an integer multiple of
the smallest subnormal, e.g. the exact sum of two numbers of the format) the rounding is
exact below the normal range, so `|rne x − x| ≤ u |x|` with no absolute term
(Higham, §2.1: "an exact sum of two subnormals is representable"; Hauser 1996). -/
theorem fp_ieee_rounding_lattice (F : Format) {x : Rat} (hx : F.IsLattice x) :
    absv (F.rne x - x) ≤ F.u * absv x := by
  by_cases h : absv x < F.minNormal
  · obtain ⟨n, hn⟩ := hx
    have hul : F.ulp x = 2 ^ F.qexp := by unfold ulp qexp; rw [expo_of_lt h]
    have hne : (2 : Rat) ^ F.qexp ≠ 0 := by have := two_zpow_pos F.qexp; grind
    have hinv : (2 : Rat) ^ F.qexp * ((2 : Rat) ^ F.qexp)⁻¹ = 1 := Field.mul_inv_cancel hne
    have hy : x / F.ulp x = (n : Rat) := by
      rw [hul, hn, Field.div_eq_mul_inv]; grind
    have hr : F.rne x = x := by
      unfold rne; rw [hy, rint_intCast, hul, hn]
    rw [hr, absv_sub_self']
    exact OrderedRing.mul_nonneg F.u_nonneg (absv_nonneg x)
  · exact fp_ieee_rounding_normal F (by grind)

/-- Lattice points are closed under addition. -/
theorem Format.IsLattice.add {F : Format} {a b : Rat} (ha : F.IsLattice a)
    (hb : F.IsLattice b) : F.IsLattice (a + b) := by
  obtain ⟨m, hm⟩ := ha; obtain ⟨n, hn⟩ := hb
  exact ⟨m + n, by rw [hm, hn, Rat.intCast_add]; grind⟩

/-- Lattice points are closed under negation. -/
theorem Format.IsLattice.neg {F : Format} {a : Rat} (ha : F.IsLattice a) :
    F.IsLattice (-a) := by
  obtain ⟨m, hm⟩ := ha
  exact ⟨-m, by rw [hm, Rat.intCast_neg]; grind⟩

/-- Every number of the format is a lattice point. -/
theorem Format.IsGrid.isLattice {F : Format} {x : Rat} (hx : F.IsGrid x) : F.IsLattice x := by
  obtain ⟨m, e, he, _, hx⟩ := hx
  obtain ⟨k, hk⟩ : ∃ k : Nat, e = F.qexp + k := ⟨(e - F.qexp).toNat, by omega⟩
  refine ⟨m * ((2 ^ k : Nat) : Int), ?_⟩
  rw [hx, hk, two_zpow_add, two_zpow_natCast, Rat.intCast_mul, Rat.intCast_natCast]
  grind

/-- Every rounded value is a lattice point. -/
theorem Format.rne_isLattice (F : Format) (x : Rat) : F.IsLattice (F.rne x) := by
  have h := emin_le_expo (F := F) x
  obtain ⟨k, hk⟩ : ∃ k : Nat, F.expo x - F.p + 1 = F.qexp + k :=
    ⟨(F.expo x - F.emin).toNat, by unfold qexp; omega⟩
  refine ⟨rint (x / F.ulp x) * ((2 ^ k : Nat) : Int), ?_⟩
  unfold rne ulp
  rw [hk, two_zpow_add, two_zpow_natCast, Rat.intCast_mul, Rat.intCast_natCast]
  grind

/-- [fp_ieee_rounding] The exact sum of two numbers of the format is rounded with relative
error `u` and no absolute term (gradual underflow): the model `Rounding` of a summation
tree's nodes. -/
theorem fp_ieee_rounding_add (F : Format) {a b : Rat} (ha : F.IsGrid a) (hb : F.IsGrid b) :
    absv (F.rne (a + b) - (a + b)) ≤ F.u * absv (a + b) :=
  fp_ieee_rounding_lattice F (ha.isLattice.add hb.isLattice)

/-- [fp_ieee_rounding] Numbers of the format are fixed by the rounding. -/
theorem fp_ieee_rounding_grid (F : Format) {x : Rat} (hx : F.IsGrid x) : F.rne x = x := by
  obtain ⟨m, e, he, hm, hxe⟩ := hx
  -- the spacing at x divides 2^e
  have hk : F.expo x - F.p + 1 ≤ e := by
    by_cases h : absv x < F.minNormal
    · rw [expo_of_lt h]; unfold qexp at he; omega
    · obtain ⟨_, h2, _⟩ := expo_spec_normal (F := F) (x := x) (by grind)
      have hax : absv x = absv (m : Rat) * 2 ^ e := by
        rw [hxe, absv_mul]
        have : absv ((2 : Rat) ^ e) = 2 ^ e := by
          unfold absv; simp [Std.le_of_lt (two_zpow_pos e)]
        rw [this]
      have h3 : absv x < (2 : Rat) ^ ((F.p : Int) + e) := by
        rw [hax, two_zpow_add]
        exact OrderedRing.mul_lt_mul_of_pos_right hm (two_zpow_pos e)
      have := lt_of_two_zpow_lt (Std.lt_of_le_of_lt h2 h3)
      omega
  generalize hkdef : F.expo x - (F.p : Int) + 1 = k at hk
  have hulp : F.ulp x = 2 ^ k := by unfold ulp; rw [hkdef]
  obtain ⟨j, hj⟩ : ∃ j : Nat, e = k + j := ⟨(e - k).toNat, by omega⟩
  have hpos := two_zpow_pos k
  have hne : (2 : Rat) ^ k ≠ 0 := by grind
  have hinv : (2 : Rat) ^ k * ((2 : Rat) ^ k)⁻¹ = 1 := Field.mul_inv_cancel hne
  have hxu : x = ((m * ((2 ^ j : Nat) : Int) : Int) : Rat) * 2 ^ k := by
    rw [hxe, hj, two_zpow_add, two_zpow_natCast, Rat.intCast_mul, Rat.intCast_natCast]
    grind
  have hy : x / F.ulp x = ((m * ((2 ^ j : Nat) : Int) : Int) : Rat) := by
    rw [hulp, Field.div_eq_mul_inv]
    conv => lhs; rw [hxu]
    grind
  unfold rne
  rw [hy, rint_intCast, hulp, ← hxu]

/-! ### Sums: the `η`-free `Rounding` of a format -/

open Classical in
/-- The `Rounding` of a format's sums: `rne` on lattice points (where the rounding has no
absolute term), the identity elsewhere (never reached by a summation tree over lattice
leaves: `eval_rne_eq`). -/
@[expose] def Format.sumRounding (F : Format) : Rounding Rat where
  fl := fun x => if F.IsLattice x then F.rne x else x
  u := F.u
  u_nonneg := F.u_nonneg
  rel := fun x => by
    by_cases h : F.IsLattice x
    · simp only [h, if_true]; exact fp_ieee_rounding_lattice F h
    · simp only [h, if_false]
      rw [absv_sub_self']; exact OrderedRing.mul_nonneg F.u_nonneg (absv_nonneg x)

open Classical in
/-- A summation tree with lattice leaves (numbers of the format, or rounded values)
evaluates the same with `rne` at every node as with `sumRounding`, and its value is a
lattice point. -/
theorem Format.eval_rne_eq (F : Format) {ι : Type} {g : ι → Rat} (hg : ∀ i, F.IsLattice (g i)) :
    ∀ t : STree ι, t.eval F.rne g = t.eval F.sumRounding.fl g ∧ F.IsLattice (t.eval F.rne g)
  | .leaf i => ⟨rfl, hg i⟩
  | .node l r => by
    obtain ⟨el, hl⟩ := F.eval_rne_eq hg l
    obtain ⟨er, hr⟩ := F.eval_rne_eq hg r
    simp only [STree.eval]
    refine ⟨?_, F.rne_isLattice _⟩
    rw [← el, ← er]
    simp only [Format.sumRounding]
    rw [if_pos (hl.add hr)]

/-- The format's rounding as a `RoundingAbs`: `u = 2^(−p)`, `η = 2^(emin − p)`. -/
@[expose] def Format.roundingAbs (F : Format) : RoundingAbs Rat where
  fl := F.rne
  u := F.u
  η := F.eta
  u_nonneg := F.u_nonneg
  η_nonneg := F.eta_nonneg
  rel := fp_ieee_rounding F

attribute [local instance] Lean.Grind.Semiring.natCast

/-- [fp_ieee_rounding] `fp_summation` for genuine IEEE sums: `n` numbers of the format
added by any summation order, every node rounded to nearest (gradual underflow),
`(n − 1) u < 1`: `|ŝ − Σ f| ≤ γ_{n−1} Σ |f|`. -/
theorem fp_ieee_rounding_summation (F : Format) {n : Nat} (f : Fin n → Rat)
    (hf : ∀ i, F.IsGrid (f i)) (t : STree (Fin n)) (ht : t.IsOrder Rat)
    (hn : ((n - 1 : Nat) : Rat) * F.u < 1) :
    absv (t.eval F.rne f - finSum f) ≤ gam F.u (n - 1) * finSum (fun i => absv (f i)) := by
  rw [(F.eval_rne_eq (fun i => (hf i).isLattice) t).1]
  exact fp_summation F.sumRounding f t ht hn

/-- [fp_ieee_rounding] `fp_dot_product` for genuine IEEE arithmetic: every product
`aᵢ bᵢ` rounded to nearest (its underflow `η`), the rounded products added by any
summation order, `n u < 1`:
`|ŝ − Σ aᵢ bᵢ| ≤ γ_n Σ |aᵢ| |bᵢ| + (1 + γ_{n−1}) n η`. -/
theorem fp_ieee_rounding_dot_product (F : Format) {n : Nat} (a b : Fin n → Rat)
    (t : STree (Fin n)) (ht : t.IsOrder Rat) (hn1 : 1 ≤ n) (hn : (n : Rat) * F.u < 1) :
    absv (t.eval F.rne (fun i => F.rne (a i * b i)) - finSum (fun i => a i * b i)) ≤
      gam F.u n * finSum (fun i => absv (a i) * absv (b i)) +
        (1 + gam F.u (n - 1)) * ((n : Rat) * F.eta) := by
  rw [(F.eval_rne_eq (fun i => F.rne_isLattice _) t).1]
  have h := fp_dot_product F.sumRounding a b (fun i => F.rne (a i * b i)) (fun _ => F.eta)
    (fun _ => F.eta_nonneg) (fun i => fp_ieee_rounding F _) t ht hn1 hn
  rw [finSum_const] at h
  exact h

/-- [fp_ieee_rounding] No overflow below the largest finite number: for
`|x| ≤ (2^p − 1) 2^(emax − p + 1)` (`p ≥ 1`, `emin ≤ emax`), `rne x` is a finite number of
the format, so a computation whose exact intermediate results stay below the largest
finite number is bit for bit the IEEE computation. -/
theorem fp_ieee_rounding_finite (F : Format) (hp : 1 ≤ F.p) (he : F.emin ≤ F.emax) {x : Rat}
    (hx : absv x ≤ F.maxFinite) : F.IsFinite (F.rne x) := by
  have hu := ulp_pos (F := F) x
  have hne : F.ulp x ≠ 0 := by grind
  have hinv : F.ulp x * (F.ulp x)⁻¹ = 1 := Field.mul_inv_cancel hne
  have hE := emin_le_expo (F := F) x
  have hP : ((2 ^ F.p : Nat) : Rat) = (2 : Rat) ^ (F.p : Int) := (two_zpow_natCast _).symm
  have hP1 : 1 ≤ 2 ^ F.p := Nat.one_le_two_pow
  -- |x / ulp| ≤ 2^p
  generalize hy : x / F.ulp x = y
  have hxy : x = y * F.ulp x := by rw [← hy, Field.div_eq_mul_inv]; grind
  have hay : absv x = absv y * F.ulp x := by
    have ha : absv (F.ulp x) = F.ulp x := by unfold absv; simp [Std.le_of_lt hu]
    have h1 : absv (y * F.ulp x) = absv y * F.ulp x := by rw [absv_mul, ha]
    rw [← h1, ← hxy]
  have hlt := absv_lt_two_zpow_expo (F := F) x
  have hulp2 : (2 : Rat) ^ (F.expo x + 1) = (2 : Rat) ^ (F.p : Int) * F.ulp x := by
    unfold ulp; rw [← two_zpow_add]; congr 1; omega
  have hyP : absv y ≤ (2 : Rat) ^ (F.p : Int) := by
    apply Classical.byContradiction; intro hc
    have : (2 : Rat) ^ (F.p : Int) * F.ulp x < absv y * F.ulp x :=
      OrderedRing.mul_lt_mul_of_pos_right (by grind) hu
    grind
  have ⟨hy1, hy2⟩ := absv_le_iff.mp hyP
  have hNc : ((((2 ^ F.p : Nat) : Int)) : Rat) = (2 : Rat) ^ (F.p : Int) := by
    rw [Rat.intCast_natCast, hP]
  have r1 := rint_le_of_le (y := y) (N := ((2 ^ F.p : Nat) : Int)) (by rw [hNc]; exact hy2)
  have r2 := neg_le_rint_of_le (y := y) (N := ((2 ^ F.p : Nat) : Int)) (by rw [hNc]; exact hy1)
  -- the exponent stays at most emax
  have hEmax : F.expo x ≤ F.emax := by
    by_cases h : absv x < F.minNormal
    · rw [expo_of_lt h]; exact he
    · obtain ⟨_, h2, _⟩ := expo_spec_normal (F := F) (x := x) (by grind)
      have hmf : F.maxFinite < 2 ^ (F.emax + 1) := by
        unfold maxFinite
        have e1 : (2 : Rat) ^ (F.emax + 1) = (2 : Rat) ^ (F.p : Int) * 2 ^ (F.emax - F.p + 1) := by
          rw [← two_zpow_add]; congr 1; omega
        rw [e1]
        have hc : (((2 ^ F.p - 1 : Nat)) : Rat) < (2 : Rat) ^ (F.p : Int) := by
          rw [← hP]; exact Rat.natCast_lt_natCast.mpr (by omega)
        exact OrderedRing.mul_lt_mul_of_pos_right hc (two_zpow_pos _)
      have := lt_of_two_zpow_lt (Std.lt_of_le_of_lt h2 (Std.lt_of_le_of_lt hx hmf))
      omega
  have hq : F.qexp ≤ F.expo x - F.p + 1 := by unfold qexp; omega
  unfold rne
  rw [hy]
  generalize hr : rint y = r at *
  by_cases hbig : r = ((2 ^ F.p : Nat) : Int) ∨ r = -((2 ^ F.p : Nat) : Int)
  · -- a carry into the next binade: `±2^p · ulp = ±2^(p−1) · 2 ulp`
    obtain ⟨k, hk⟩ : ∃ k : Nat, F.p = k + 1 := ⟨F.p - 1, by omega⟩
    have hEmax' : F.expo x + 1 ≤ F.emax := by
      -- |rne x| = 2^p ulp = 2^(expo + 1) would exceed maxFinite unless expo < emax
      apply Classical.byContradiction; intro hc
      have heq : F.expo x = F.emax := by omega
      -- |y| ≥ 2^p − 1/2, so |x| ≥ (2^p − 1/2) ulp > (2^p − 1) ulp = maxFinite
      have hry := absv_le_iff.mp (rint_sub_le y)
      rw [hr] at hry
      have hmf : F.maxFinite = (((2 ^ F.p - 1 : Nat)) : Rat) * F.ulp x := by
        unfold maxFinite ulp; rw [heq]
      have hc1 : (((2 ^ F.p - 1 : Nat)) : Rat) = (2 : Rat) ^ (F.p : Int) - 1 := by
        have e1 : (2 ^ F.p - 1) + 1 = 2 ^ F.p := by omega
        have e2 := congrArg (fun n : Nat => (n : Rat)) e1
        simp only [Rat.natCast_add] at e2
        rw [← hP, ← e2]
        have h1 : ((1 : Nat) : Rat) = 1 := rfl
        rw [h1]; grind
      rcases hbig with hb | hb
      · rw [hb, hNc] at hry
        have : ((2 : Rat) ^ (F.p : Int) - 1) * F.ulp x < absv y * F.ulp x :=
          OrderedRing.mul_lt_mul_of_pos_right (by have := le_absv y; grind) hu
        have h5 : F.maxFinite < absv x := by rw [hmf, hc1, hay]; exact this
        grind
      · rw [hb, Rat.intCast_neg, hNc] at hry
        have : ((2 : Rat) ^ (F.p : Int) - 1) * F.ulp x < absv y * F.ulp x :=
          OrderedRing.mul_lt_mul_of_pos_right (by have := neg_absv_le y; grind) hu
        have h5 : F.maxFinite < absv x := by rw [hmf, hc1, hay]; exact this
        grind
    have hpk : (2 : Rat) ^ (F.p : Int) = 2 ^ (k : Int) * 2 := by
      rw [hk]
      have e : ((k + 1 : Nat) : Int) = (k : Int) + 1 := by omega
      rw [e, two_zpow_add, two_zpow_one]
    have hk2 : absv (((2 ^ k : Nat) : Int) : Rat) < 2 ^ (F.p : Int) := by
      rw [Rat.intCast_natCast, ← two_zpow_natCast, hpk]
      have := two_zpow_pos (k : Int)
      unfold absv; simp [Std.le_of_lt this]; grind
    have hk2n : absv ((-((2 ^ k : Nat) : Int) : Int) : Rat) < 2 ^ (F.p : Int) := by
      rw [Rat.intCast_neg]
      have : absv (-(((2 ^ k : Nat) : Int) : Rat)) = absv (((2 ^ k : Nat) : Int) : Rat) := by
        unfold absv; split <;> split <;> grind
      rw [this]; exact hk2
    have hul2 : F.ulp x * 2 = (2 : Rat) ^ (F.expo x - F.p + 1 + 1) := by
      unfold ulp; rw [two_zpow_add (F.expo x - F.p + 1) 1, two_zpow_one]
    rcases hbig with hb | hb
    · refine ⟨((2 ^ k : Nat) : Int), F.expo x - F.p + 1 + 1, by omega, by omega, hk2, ?_⟩
      rw [hb, hNc, hpk, ← hul2, Rat.intCast_natCast, ← two_zpow_natCast]; grind
    · refine ⟨-((2 ^ k : Nat) : Int), F.expo x - F.p + 1 + 1, by omega, by omega, hk2n, ?_⟩
      rw [hb, Rat.intCast_neg, hNc, hpk, ← hul2, Rat.intCast_neg, Rat.intCast_natCast,
        ← two_zpow_natCast]; grind
  · have hr1 : r < ((2 ^ F.p : Nat) : Int) := by omega
    have hr2 : -((2 ^ F.p : Nat) : Int) < r := by omega
    refine ⟨r, F.expo x - F.p + 1, hq, by omega, ?_, rfl⟩
    have c1 := Rat.intCast_lt_intCast.mpr hr1
    have c2 := Rat.intCast_lt_intCast.mpr hr2
    rw [hNc] at c1; rw [Rat.intCast_neg, hNc] at c2
    unfold absv; split <;> grind

/-! ### The formats -/

/-- IEEE binary64 (double): `p = 53`, `emin = −1022`, `emax = 1023`. -/
@[expose] def binary64 : Format := ⟨53, -1022, 1023⟩

/-- IEEE binary32 (single): `p = 24`, `emin = −126`, `emax = 127`. -/
@[expose] def binary32 : Format := ⟨24, -126, 127⟩

/-- IEEE binary16 (half): `p = 11`, `emin = −14`, `emax = 15`. -/
@[expose] def binary16 : Format := ⟨11, -14, 15⟩

/-- bfloat16: binary32's exponent range with `p = 8`. -/
@[expose] def bfloat16 : Format := ⟨8, -126, 127⟩

/-- `2^(−n) = 1 / 2ⁿ` as a rational literal. -/
theorem two_zpow_neg_natCast (n : Nat) : (2 : Rat) ^ (-(n : Int)) = 1 / ((2 ^ n : Nat) : Rat) := by
  rw [Field.zpow_neg, two_zpow_natCast, Field.div_eq_mul_inv]; grind

/-- [fp_ieee_rounding] binary32: `u = 2^−24`, `η = 2^−150`, smallest normal `2^−126`. -/
theorem fp_ieee_rounding_binary32 :
    binary32.u = 1 / 16777216 ∧
      binary32.eta = 1 / 1427247692705959881058285969449495136382746624 ∧
      binary32.minNormal = 1 / 85070591730234615865843651857942052864 := by
  refine ⟨?_, ?_, ?_⟩
  · show (2 : Rat) ^ (-((24 : Nat) : Int)) = _
    rw [two_zpow_neg_natCast]; decide +kernel
  · show (2 : Rat) ^ (-((150 : Nat) : Int)) = _
    rw [two_zpow_neg_natCast]; decide +kernel
  · show (2 : Rat) ^ (-((126 : Nat) : Int)) = _
    rw [two_zpow_neg_natCast]; decide +kernel

/-- [fp_ieee_rounding] bfloat16: `u = 2^−8`, `η = 2^−134`, smallest normal `2^−126`. -/
theorem fp_ieee_rounding_bfloat16 :
    bfloat16.u = 1 / 256 ∧
      bfloat16.eta = 1 / 21778071482940061661655974875633165533184 ∧
      bfloat16.minNormal = 1 / 85070591730234615865843651857942052864 := by
  refine ⟨?_, ?_, ?_⟩
  · show (2 : Rat) ^ (-((8 : Nat) : Int)) = _
    rw [two_zpow_neg_natCast]; decide +kernel
  · show (2 : Rat) ^ (-((134 : Nat) : Int)) = _
    rw [two_zpow_neg_natCast]; decide +kernel
  · show (2 : Rat) ^ (-((126 : Nat) : Int)) = _
    rw [two_zpow_neg_natCast]; decide +kernel

/-- [fp_ieee_rounding] binary16: `u = 2^−11`, `η = 2^−25`, smallest normal `2^−14`. -/
theorem fp_ieee_rounding_binary16 :
    binary16.u = 1 / 2048 ∧ binary16.eta = 1 / 33554432 ∧ binary16.minNormal = 1 / 16384 := by
  refine ⟨?_, ?_, ?_⟩
  · show (2 : Rat) ^ (-((11 : Nat) : Int)) = _
    rw [two_zpow_neg_natCast]; decide +kernel
  · show (2 : Rat) ^ (-((25 : Nat) : Int)) = _
    rw [two_zpow_neg_natCast]; decide +kernel
  · show (2 : Rat) ^ (-((14 : Nat) : Int)) = _
    rw [two_zpow_neg_natCast]; decide +kernel

/-- [fp_ieee_rounding] binary64: `u = 2^−53`, `η = 2^−1075`, smallest normal `2^−1022`
(the last two as powers: their literals have over 300 digits). -/
theorem fp_ieee_rounding_binary64 :
    binary64.u = 1 / 9007199254740992 ∧
      binary64.eta = 1 / ((2 ^ 1075 : Nat) : Rat) ∧
      binary64.minNormal = 1 / ((2 ^ 1022 : Nat) : Rat) := by
  refine ⟨?_, ?_, ?_⟩
  · show (2 : Rat) ^ (-((53 : Nat) : Int)) = _
    rw [two_zpow_neg_natCast]; decide +kernel
  · show (2 : Rat) ^ (-((1075 : Nat) : Int)) = _
    rw [two_zpow_neg_natCast]
  · show (2 : Rat) ^ (-((1022 : Nat) : Int)) = _
    rw [two_zpow_neg_natCast]

end Pldr

end
