module

public import Pldr.Positivity

/-!
# Hadamard powers: the one-parameter group, and genuine natural powers
(`[hadamard_power_group]`, `[metric_positivity]` for natural exponents)

Paper (Prop. 3.7): for an entrywise positive `A`, the elementwise power
`t ↦ A^{∘ tP}` is a one-parameter group for the Hadamard product:
`A^{∘(s+t)P} = A^{∘ sP} ∘ A^{∘ tP}` and `A^{∘ 0} = 1` (the all-ones matrix).

* `hadamard_power_group`: over an abstract real power satisfying the exponent laws
  `x^{a+b} = x^a x^b`, `x^0 = 1` for `x > 0` (`PowLaws`, an extension of `PowMap`).
* `hadamard_power_group_nat`: the same law for natural exponents from genuine powers
  (`x ^ n` of the ring), with no interface at all.
* `metric_positivity_nat`: `A_P = A_LM ^ P > 0` entrywise for a natural-number exponent
  matrix, from genuine powers (`pow_pos'`), not from the `PowMap` interface.

Abstracted: the real power with real exponents (`PowLaws`). Lawful models in the
library: `PowLaws.one` (`x^y = 1`, degenerate); genuine powers are a model for natural
exponents. Under Mathlib, `Real.rpow` instantiates `PowLaws` (`Real.rpow_pos_of_pos`,
`Real.rpow_add`, `Real.rpow_zero`). There are no unproved assumptions.
-/

public noncomputable section

set_option linter.unusedSectionVars false

namespace Pldr

open Lean.Grind

universe u

variable {α : Type u} [Field α] [LE α] [LT α] [Std.LawfulOrderLT α] [Std.IsLinearOrder α]
  [OrderedRing α]

/-- An abstract real power with the exponent laws on positive bases (true of
`Real.rpow`). -/
structure PowLaws (α : Type u) [Field α] [LT α] extends PowMap α where
  /-- `x^{a+b} = x^a x^b` for `x > 0`. -/
  rpow_add : ∀ x a b, 0 < x → rpow x (a + b) = rpow x a * rpow x b
  /-- `x^0 = 1` for `x > 0`. -/
  rpow_zero : ∀ x, 0 < x → rpow x 0 = 1

/-- The constant power `x^y = 1`: a lawful (degenerate) model of `PowLaws`. -/
@[expose] def PowLaws.one : PowLaws α where
  rpow := fun _ _ => 1
  rpow_pos := fun _ _ _ => OrderedRing.zero_lt_one
  rpow_add := fun _ _ _ _ => by grind
  rpow_zero := fun _ _ => rfl

/-- The Hadamard power `A^{∘P}`: `(A^{∘P})_{ij} = A_{ij} ^ P_{ij}`. -/
@[expose] def hpow {d : Nat} (pw : PowMap α) (A P : Mat α d d) : Mat α d d :=
  fun i j => pw.rpow (A i j) (P i j)

/-- [hadamard_power_group] Prop. 3.7: for entrywise positive `A` and an abstract power
with the exponent laws, `A^{∘(s+t)P} = A^{∘ sP} ∘ A^{∘ tP}`, `A^{∘ 0} = 1` (all ones),
and every `A^{∘ tP}` is entrywise positive: `t ↦ A^{∘ tP}` is a group homomorphism from
`(α, +)` into entrywise positive matrices under the Hadamard product. -/
theorem hadamard_power_group {d : Nat} (pw : PowLaws α) (A P : Mat α d d)
    (hA : ∀ i j, 0 < A i j) (s t : α) :
    hpow pw.toPowMap A ((s + t) • P) = hadamard (hpow pw.toPowMap A (s • P))
        (hpow pw.toPowMap A (t • P)) ∧
      hpow pw.toPowMap A 0 = (fun _ _ => 1) ∧
      ∀ i j, 0 < hpow pw.toPowMap A (t • P) i j := by
  refine ⟨?_, ?_, fun i j => pw.rpow_pos _ _ (hA i j)⟩
  · apply Mat.ext; intro i j
    simp only [hpow, hadamard, Mat.smul_apply]
    have e : (s + t) * P i j = s * P i j + t * P i j := by grind
    rw [e, pw.rpow_add _ _ _ (hA i j)]
  · apply Mat.ext; intro i j
    simp only [hpow, Mat.zero_apply]
    exact pw.rpow_zero _ (hA i j)

/-- Genuine Hadamard power with natural exponents: `(A^{∘P})_{ij} = A_{ij} ^ P_{ij}`. -/
@[expose] def hpowNat {d : Nat} (A : Mat α d d) (P : Fin d → Fin d → Nat) : Mat α d d :=
  fun i j => A i j ^ P i j

/-- [hadamard_power_group] The group law for natural exponents from genuine powers (no
interface): `A^{∘(s+t)P} = A^{∘ sP} ∘ A^{∘ tP}` and `A^{∘ 0} = 1`, for any `A`. -/
theorem hadamard_power_group_nat {d : Nat} (A : Mat α d d) (P : Fin d → Fin d → Nat)
    (s t : Nat) :
    hpowNat A (fun i j => (s + t) * P i j) =
        hadamard (hpowNat A (fun i j => s * P i j)) (hpowNat A (fun i j => t * P i j)) ∧
      hpowNat A (fun _ _ => 0) = (fun _ _ => 1) := by
  refine ⟨?_, ?_⟩
  · apply Mat.ext; intro i j
    simp only [hpowNat, hadamard]
    rw [Nat.add_mul, Semiring.pow_add]
  · apply Mat.ext; intro i j
    simp only [hpowNat]
    exact Semiring.pow_zero _

/-- Genuine powers of a positive element are positive. -/
theorem pow_pos' {x : α} (hx : 0 < x) : ∀ n : Nat, 0 < x ^ n
  | 0 => by rw [Semiring.pow_zero]; exact OrderedRing.zero_lt_one
  | n + 1 => by rw [Semiring.pow_succ]; exact OrderedRing.mul_pos (pow_pos' hx n) hx

/-- The potential tensor with a natural-number exponent matrix, by genuine powers:
`A_P = A_LM ^ P` entrywise. -/
@[expose] def metricAPNat {dk : Nat} (E : ExpMap α) (p : PlgaParams α dk)
    (P : Fin dk → Fin dk → Nat) (A : Mat α dk dk) : Mat α dk dk :=
  hpowNat (metricLM E p A) P

/-- [metric_positivity] For natural-number exponents the potential tensor is positive
from genuine powers, not from the `PowMap` interface: with `ε > 0`,
`A_P = A_LM ^ P > 0` entrywise. (The real-exponent case rests on `PowMap.rpow_pos`,
see `metric_positivity`.) -/
theorem metric_positivity_nat {dk : Nat} (E : ExpMap α) (p : PlgaParams α dk)
    (heps : 0 < p.eps) (P : Fin dk → Fin dk → Nat) (A : Mat α dk dk) (i j : Fin dk) :
    0 < metricAPNat E p P A i j := by
  have h := metric_positivity_ge_eps E p A i j
  exact pow_pos' (by grind) (P i j)

end Pldr

end
