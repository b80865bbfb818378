module

public import Pldr.HadamardPower

/-!
# Over `Rat` the only abstract exponential is the constant `1`  (`[prefix_consistency]`,
  `[hadamard_power_group]`)

`ExpMap α` asks for `exp (a + b) = exp a · exp b` and `exp a > 0`. Over `ℝ`, `Real.exp` is
a model; over core Lean's `Rat` there is only the constant `1`, so every theorem that
assumes an injective (or strictly monotone) single-carrier exponential has no instance
in core Lean; its genuine instance is `Real.exp`, outside core Lean (the two-carrier
`ExpHom Int Rat`, base 2, of `Pldr.ExpHom` is the library's genuine model instead).

* `ExpMap.exp_natCast_mul_rat`: `exp (n · y) = (exp y)ⁿ`.
* `rat_eq_one_of_forall_root`: a positive rational that is an `n`-th power for every
  `n ≥ 1` is `1`. For `n` larger than its numerator and denominator: if `r = sⁿ` with
  `s = a/b` in lowest terms, then `r`'s numerator and denominator are `|a|ⁿ` and `bⁿ`
  (`Rat.num_pow`, `Rat.den_pow`: core's `Rat` power keeps lowest terms), and
  `2ⁿ > n` leaves `|a|, b ≤ 1`.
* `ExpMap.eq_one_of_rat`: every `E : ExpMap Rat` is `≡ 1`, since
  `exp x = (exp (x/n))ⁿ` for every `n ≥ 1`.
* `ExpMap.not_injective_rat`: so no `ExpMap Rat` is injective, and the hypotheses of
  `prefix_consistency_head_fails`, `prefix_consistency_fails`,
  `softmax_simplex_eq_iff` (injective `exp`) have no model over `Rat`.
* `PowLaws.eq_one_of_rat`: the same argument for the real-exponent power of
  `hadamard_power_group`: for a positive base `x`, `y ↦ x ^ y` is an abstract
  exponential over `Rat` (the laws `x^{a+b} = x^a x^b`, `x^y > 0`), so every
  `PowLaws Rat` is `x ^ y = 1` on positive bases: it is `PowLaws.one` wherever the
  theorem uses it.

There are no unproved assumptions.
-/

public noncomputable section

namespace Pldr

/-- `exp 0 = 1` for an abstract exponential over `Rat`. -/
theorem ExpMap.exp_zero_rat (E : ExpMap Rat) : E.exp 0 = 1 := by
  have h := E.exp_add 0 0
  have hz : (0 : Rat) + 0 = 0 := by grind
  rw [hz] at h
  have := E.exp_ne_zero 0
  have h2 : E.exp 0 * (E.exp 0 - 1) = 0 := by grind
  grind

/-- `exp (n · y) = (exp y)ⁿ` for an abstract exponential over `Rat`. -/
theorem ExpMap.exp_natCast_mul_rat (E : ExpMap Rat) (n : Nat) (y : Rat) :
    E.exp ((n : Rat) * y) = E.exp y ^ n := by
  induction n with
  | zero =>
    have e : ((0 : Nat) : Rat) * y = 0 := by grind
    rw [e, E.exp_zero_rat, Rat.pow_zero]
  | succ k ih =>
    have e : ((k + 1 : Nat) : Rat) * y = (k : Rat) * y + y := by
      rw [Rat.natCast_add]; grind
    rw [e, E.exp_add, ih, Rat.pow_succ]

/-- A natural number `x = aⁿ` with `1 ≤ n` and `x ≤ n` is `0` or `1` (`2ⁿ > n`). -/
theorem le_one_of_eq_pow_of_le {a n x : Nat} (hn : 0 < n) (hx : x ≤ n) (he : x = a ^ n) :
    x ≤ 1 := by
  rcases Nat.lt_or_ge a 2 with ha | ha
  · rcases (by omega : a = 0 ∨ a = 1) with rfl | rfl
    · rw [Nat.zero_pow hn] at he; omega
    · rw [Nat.one_pow] at he; omega
  · have h1 := Nat.pow_le_pow_left ha n
    have h2 : n < 2 ^ n := Nat.lt_two_pow_self
    omega

/-- A positive rational that is an `n`-th power of a rational for every `n ≥ 1` is `1`. -/
theorem rat_eq_one_of_forall_root {r : Rat} (hr : 0 < r)
    (h : ∀ n : Nat, 0 < n → ∃ s : Rat, s ^ n = r) : r = 1 := by
  have hd0 := r.den_pos
  obtain ⟨s, hs⟩ := h (r.num.natAbs + r.den) (by omega)
  have hnum : r.num.natAbs = s.num.natAbs ^ (r.num.natAbs + r.den) := by
    rw [← Int.natAbs_pow, ← Rat.num_pow, hs]
  have hden : r.den = s.den ^ (r.num.natAbs + r.den) := by
    rw [← Rat.den_pow, hs]
  have h1 := le_one_of_eq_pow_of_le (by omega) (by omega) hnum
  have h2 := le_one_of_eq_pow_of_le (by omega) (by omega) hden
  have hpos : 0 < r.num := by
    have h0 : 0 ≤ r.num := Rat.num_nonneg.mpr (by grind)
    have h1 : r.num ≠ 0 := fun h => by rw [Rat.num_eq_zero] at h; grind
    omega
  have hn : r.num = 1 := by omega
  have hd : r.den = 1 := by omega
  exact Rat.ext hn hd

/-- Every abstract exponential over `Rat` is the constant `1`: `exp x = (exp (x/n))ⁿ` for
every `n ≥ 1`, and only `1` among the positive rationals has roots of every order. -/
theorem ExpMap.eq_one_of_rat (E : ExpMap Rat) (x : Rat) : E.exp x = 1 := by
  refine rat_eq_one_of_forall_root (E.exp_pos x) fun n hn => ⟨E.exp (x / n), ?_⟩
  rw [← E.exp_natCast_mul_rat]
  have hn0 : (n : Rat) ≠ 0 := by
    have : (0 : Rat) < n := Rat.natCast_pos.mpr hn
    grind
  congr 1
  grind

/-- [prefix_consistency] The paper's claim that PLGA with the global-Gram metric is not
prefix-consistent is proved for an injective `exp` (`prefix_consistency_fails`,
`prefix_consistency_head_fails`), and no abstract exponential over `Rat` is injective
(each is `≡ 1`): those theorems have no instance over core Lean's `Rat`; their genuine
instance is `Real.exp`, outside core Lean. -/
theorem ExpMap.not_injective_rat (E : ExpMap Rat) :
    ¬ ∀ a b, E.exp a = E.exp b → a = b := by
  intro h
  have h01 := h 0 1 (by rw [E.eq_one_of_rat, E.eq_one_of_rat])
  exact absurd h01 (by decide)

/-- [hadamard_power_group] Over `Rat` the real-exponent power has only the degenerate
model: for every `pw : PowLaws Rat` and every base `x > 0`, `x ^ y = 1` for all `y`,
since `y ↦ x ^ y` is an abstract exponential over `Rat` (`ExpMap.eq_one_of_rat`). So
`hadamard_power_group` has no model over `Rat` with `2 ^ 1 = 2`; its genuine instance is
`Real.rpow`, outside core Lean, and for natural exponents genuine powers
(`hadamard_power_group_nat`). -/
theorem PowLaws.eq_one_of_rat (pw : PowLaws Rat) {x : Rat} (hx : 0 < x) (y : Rat) :
    pw.rpow x y = 1 :=
  ExpMap.eq_one_of_rat ⟨fun y => pw.rpow x y, fun a b => pw.rpow_add x a b hx,
    fun y => pw.rpow_pos x y hx⟩ y

end Pldr

end
